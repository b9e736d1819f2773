"""Every node is a Ready Kubernetes 1.35 node with containerd 2.x and CDI; flannel and CoreDNS work."""

from __future__ import annotations

import json
import re

import pytest

from conftest import CLUSTER_NODES, KUBERNETES_VERSION, node_host
from podman_lab import images as node_images

# A DNS query for kubernetes.default.svc.cluster.local sent to the cluster DNS
# service from a node (python3 is in the node image, dig is not).
DNS_QUERY = r"""
import socket, struct, sys
name = sys.argv[1]
q = struct.pack('>HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0)
q += b''.join(bytes([len(p)]) + p.encode() for p in name.split('.')) + b'\0' + struct.pack('>HH', 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
s.sendto(q, (sys.argv[2], 53)); r = s.recv(512)
rcode, answers = r[3] & 15, struct.unpack('>H', r[6:8])[0]
i = len(q)
ips = []
for _ in range(answers):
    i += 2 if r[i] & 0xC0 == 0xC0 else r.index(b'\0', i) + 1 - i
    rtype, _, _, rdlen = struct.unpack('>HHIH', r[i:i + 10]); i += 10
    if rtype == 1: ips.append(socket.inet_ntoa(r[i:i + rdlen]))
    i += rdlen
print(rcode, ' '.join(ips))
"""


@pytest.mark.parametrize("name", [*CLUSTER_NODES, "login1"])
def test_nodes_run_the_debian_release_of_the_scenario(name):
    """molecule/default builds Debian 12 nodes, molecule/debian13 (DRALAB_NODE_SUITE=trixie) Debian 13."""
    suite = node_images.node_suite()
    release = node_host(name).file("/etc/os-release").content_string
    assert "ID=debian\n" in release, release
    assert f'VERSION_ID="{node_images.SUITES[suite][0]}"' in release, (suite, release)
    assert f"VERSION_CODENAME={suite}\n" in release, (suite, release)


def test_every_node_is_ready(core):
    found = {n.metadata.name: n for n in core.list_node().items}
    assert sorted(found) == sorted(CLUSTER_NODES)
    for name, node in found.items():
        ready = [c.status for c in node.status.conditions if c.type == "Ready"]
        assert ready == ["True"], f"{name}: Ready={ready}"
        info = node.status.node_info
        assert info.kubelet_version == KUBERNETES_VERSION, name
        assert info.container_runtime_version.startswith("containerd://2."), (name, info.container_runtime_version)


@pytest.mark.parametrize("name", CLUSTER_NODES)
def test_node_binaries(name):
    host = node_host(name)
    assert host.check_output("kubelet --version") == f"Kubernetes {KUBERNETES_VERSION}"
    assert host.check_output("kubeadm version -o short") == KUBERNETES_VERSION
    assert host.check_output("kubectl version --client -o json | python3 -c "
                             "'import json,sys; print(json.load(sys.stdin)[\"clientVersion\"][\"gitVersion\"])'") \
        == KUBERNETES_VERSION
    containerd = host.check_output("containerd --version")
    assert re.search(r"\sv?2\.\d+\.\d+", containerd), containerd
    assert host.service("containerd").is_running
    assert host.service("kubelet").is_running
    assert host.service("kubelet").is_enabled


@pytest.mark.parametrize("name", CLUSTER_NODES)
def test_containerd_has_cdi_on(name):
    info = json.loads(node_host(name).check_output("crictl info"))
    config = info.get("config", info)
    assert config.get("enableCDI") is True, config.get("enableCDI")
    assert "/var/run/cdi" in config.get("cdiSpecDirs", []), config.get("cdiSpecDirs")


def test_flannel_runs_on_every_node(core):
    pods = core.list_namespaced_pod("kube-flannel").items
    running = {p.spec.node_name for p in pods if p.status.phase == "Running"
               and all(c.ready for c in p.status.container_statuses or [])}
    assert running == set(CLUSTER_NODES), [(p.metadata.name, p.spec.node_name, p.status.phase) for p in pods]


def test_coredns_answers(core):
    dns = core.read_namespaced_service("kube-dns", "kube-system").spec.cluster_ip
    api_ip = core.read_namespaced_service("kubernetes", "default").spec.cluster_ip
    for name in CLUSTER_NODES:
        out = node_host(name).check_output("python3 -c %s %s %s", DNS_QUERY,
                                           "kubernetes.default.svc.cluster.local", dns)
        rcode, ips = (out.split(" ", 1) + [""])[:2]
        assert rcode == "0" and api_ip in ips.split(), f"{name}: {out}"
