"""Two addresses per node, as on a NAT cloud: the cluster runs on the internal addresses, and this machine (the
controller, the participants, the browser) reaches the nodes only through their translated access addresses."""

from __future__ import annotations

import socket

import pytest
import yaml

from conftest import CLUSTER_NODES, KUBECONFIG, credentials, login, node_host
from podman_lab import topology


@pytest.mark.parametrize("node", topology.NODES, ids=lambda n: n.name)
def test_this_machine_reaches_a_node_only_at_its_access_address(node):
    with socket.create_connection((node.access_ip, 22), timeout=5) as sock:
        assert sock.recv(64).startswith(b"SSH-"), node.access_ip
    with pytest.raises(OSError):
        socket.create_connection((node.ip, 22), timeout=5).close()


def test_nodes_register_their_internal_addresses(core):
    addresses = {n.metadata.name: {a.type: a.address for a in n.status.addresses} for n in core.list_node().items}
    assert {name: found.get("InternalIP") for name, found in addresses.items()} == {
        name: topology.BY_NAME[name].ip for name in CLUSTER_NODES}


def test_admin_kubeconfig_uses_the_access_address(core):
    """The controller's kubeconfig names cp1's access address, and the API server's certificate carries it."""
    server = yaml.safe_load(KUBECONFIG.read_text())["clusters"][0]["cluster"]["server"]
    assert server == f"https://{topology.BY_NAME['cp1'].access_ip}:6443"
    assert core.list_namespace(limit=1).items  # TLS verified against the certificate's names


def test_apiserver_advertises_the_internal_address(core):
    endpoints = core.read_namespaced_endpoints("kubernetes", "default")
    assert [a.ip for s in endpoints.subsets for a in s.addresses] == [topology.BY_NAME["cp1"].ip]


@pytest.mark.parametrize("host", ["cp1", "login1"])
def test_a_seat_arrives_through_the_translation(host):
    """The card's address is the access address; sshd on the node sees the connection at its internal address, coming
    from this machine's outside address, and the seat's kubectl talks to the API inside."""
    seat = next(s for s, row in credentials().items() if row["login_host"] == host)
    assert credentials()[seat]["login_address"] == topology.BY_NAME[host].access_ip
    session = login(seat)
    try:
        rc, out, err = session.run("echo $SSH_CONNECTION; kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}'")
        assert rc == 0, err
        client, _cport, server, _sport = out.splitlines()[0].split()
        assert (client, server) == (topology.OUTSIDE_GATEWAY, topology.BY_NAME[host].ip)
        assert out.splitlines()[1] == f"https://{topology.BY_NAME['cp1'].ip}:6443"
    finally:
        session.close()


def test_a_node_cannot_reach_past_the_cluster_through_the_outside():
    """Nothing inside needs the access addresses: a node that dials one gets nowhere (no traffic out and back in)."""
    proc = node_host("worker1").run(
        "python3 -c 'import socket; socket.create_connection((\"%s\", 6443), timeout=3)'"
        % topology.BY_NAME["cp1"].access_ip)
    assert proc.rc != 0
