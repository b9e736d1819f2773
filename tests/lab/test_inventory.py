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


def test_offline_nodes_fetch_from_the_mirror_node_inside():
    """The offline nodes' mirror variables name the mirror node's internal address (not the translation); the
    online node keeps the defaults (no dralab_* mirror is set lab-wide)."""
    group_vars = REPO / "inventories" / "local" / "group_vars"
    all_vars = yaml.safe_load((group_vars / "all.yml").read_text())
    assert "dralab_download_mirror" not in all_vars and "dralab_registry_mirror" not in all_vars
    mirror = topology.MIRROR
    files, registry = f"http://{mirror.ip}:8080", f"{mirror.ip}:{topology.MIRROR_REGISTRY_PORT}"
    offline_vars = yaml.safe_load((group_vars / "offline.yml").read_text())
    assert offline_vars == {"kubernetes_download_mirror": files, "containerd_download_mirror": files,
                            "containerd_registry_mirror": registry, "participant_tool_wheels_url": files + "/wheels/"}
    hosts = yaml.safe_load(INVENTORY.read_text())["all"]["children"]
    offline = {n.name for n in topology.NODES if n.kind == "node" and not n.online}
    assert set(hosts["offline"]["hosts"]) == offline
    assert yaml.safe_load((group_vars / "mirror.yml").read_text())["mirror_listen_address"] == mirror.ip
