"""Both install paths in one lab: cp1 installed with the roles' defaults, from the upstream URLs an instructor's VMs
with internet use (answered by the mirror node under those names, podman_lab/upstream.py), the other nodes from the
offline mirror through the mirror variables (inventories/local)."""

from __future__ import annotations

import pytest

from conftest import node_host
from podman_lab import topology
from podman_lab.upstream import access_log

ONLINE = [n for n in topology.NODES if n.online]
OFFLINE = [n for n in topology.NODES if n.kind == "node" and not n.online]
# What an online control-plane and login node fetches, by host: a file each (or the registry's answer) it got.
EXPECTED = {
    "dl.k8s.io": "/release/v",  # kubeadm, kubelet, kubectl
    "github.com": "/containerd/containerd/releases/download/",
    "get.helm.sh": "/helm-v",
    "pypi.org": "/simple/",
    "files.pythonhosted.org": "/packages/",
    "registry.k8s.io": "/v2/",  # kubeadm's images, pause, the driver's image and chart
    "ghcr.io": "/v2/flannel-io/",
}


@pytest.fixture(scope="module")
def requests():
    return access_log(topology.MIRROR)


def test_the_online_node_fetched_everything_from_upstream_names(requests):
    cp1 = topology.BY_NAME["cp1"]
    served = {(r["host"], r["path"]) for r in requests if r["client"] == cp1.ip and r["status"] == 200}
    missing = {host: prefix for host, prefix in EXPECTED.items()
               if not any(h == host and p.startswith(prefix) for h, p in served)}
    assert not missing, f"cp1 got nothing from {missing}; it got {sorted({entry[0] for entry in served})}"
    for path in ("runc.amd64", "cni-plugins-linux-amd64-", "crictl-v", "kube-flannel.yml"):
        assert any(h == "github.com" and path in p for h, p in served), path
    assert any(h == "files.pythonhosted.org" and p.endswith(".whl") and "/setuptools-" in p for h, p in served), \
        "cp1 built can-has-gpu from its source with the index's setuptools"


def test_only_online_nodes_asked_the_upstream_names(requests):
    assert {r["client"] for r in requests} <= {n.ip for n in ONLINE}


def test_no_request_of_the_online_node_failed_for_lack_of_a_file(requests):
    """A 404 for a download would mean the lab's files tree lacks what the defaults ask for (the registry's 404s
    for a tag lookup before a push are not downloads)."""
    missed = sorted({(r["host"], r["path"]) for r in requests
                     if r["status"] == 404 and not r["path"].startswith("/v2/")})
    assert not missed


@pytest.mark.parametrize("node", ONLINE, ids=lambda n: n.name)
def test_online_node_uses_upstream_registries(node):
    host = node_host(node.name)
    assert host.run("ls /etc/containerd/certs.d 2>/dev/null").stdout.split() == []
    assert host.file("/opt/dralab/can-has-gpu/src/pyproject.toml").exists  # installed from source with the index


@pytest.mark.parametrize("node", OFFLINE, ids=lambda n: n.name)
def test_offline_node_uses_the_mirror(node):
    host = node_host(node.name)
    mirror = f"{topology.MIRROR.ip}:{topology.MIRROR_REGISTRY_PORT}"
    if node.cluster:
        hosts_toml = host.file("/etc/containerd/certs.d/registry.k8s.io/hosts.toml")
        assert hosts_toml.exists and mirror in hosts_toml.content_string
    else:
        assert not host.file("/opt/dralab/can-has-gpu/src").exists  # from the mirror's wheels, no source
    assert topology.MIRROR.ip not in host.run("getent hosts dl.k8s.io").stdout
