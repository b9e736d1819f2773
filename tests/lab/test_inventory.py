"""inventories/local agrees with tests/harness/podman_lab/topology.py (no lab needed)."""

from __future__ import annotations

import yaml

from conftest import INVENTORY, REPO
from podman_lab import topology


def test_inventory_addresses_match_the_nodes():
    inventory = yaml.safe_load(INVENTORY.read_text())["all"]["children"]
    hosts = {}
    for group in inventory.values():
        for name, hostvars in (group.get("hosts") or {}).items():
            if hostvars:
                hosts[name] = (hostvars["ansible_host"], hostvars["internal_address"])
    assert hosts == {n.name: (n.access_ip, n.ip) for n in topology.NODES}
    assert set(inventory["control_plane"]["hosts"]) == {"cp1"}
    assert set(inventory["workers"]["hosts"]) == {"worker1", "worker2"}
    assert set(inventory["login"]["hosts"]) == {"cp1", "login1"}
    assert set(inventory["mirror"]["hosts"]) == {"mirror1"}


def test_mirror_address_is_the_mirror_node_inside():
    """The nodes fetch from the mirror over the internal network, not through the translation."""
    all_vars = yaml.safe_load((REPO / "inventories" / "local" / "group_vars" / "all.yml").read_text())
    mirror_ip = topology.BY_NAME["mirror1"].ip
    assert all_vars["dralab_download_mirror"] == f"http://{mirror_ip}:8080"
    assert all_vars["dralab_registry_mirror"] == f"{mirror_ip}:5000"
