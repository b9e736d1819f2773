"""The podman lab's outside (podman_lab/nat.py): every node's access address is translated to its internal address,
and nothing else is; this machine may not open connections straight to internal addresses."""

from __future__ import annotations

import ipaddress
import re
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness"
for path in (HARNESS, HARNESS.parents[1]):  # podman_lab, and the dralab_build it imports
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
from podman_lab import topology  # noqa: E402
from podman_lab.nat import ruleset  # noqa: E402


def test_every_node_has_an_access_address_outside_and_an_internal_one_inside():
    inside, outside = ipaddress.ip_network(topology.SUBNET), ipaddress.ip_network(topology.OUTSIDE_SUBNET)
    assert not inside.overlaps(outside)
    for node in topology.NODES:
        assert ipaddress.ip_address(node.ip) in inside, node
        assert ipaddress.ip_address(node.access_ip) in outside, node
    assert len({n.access_ip for n in topology.NODES} | {topology.OUTSIDE_GATEWAY}) == len(topology.NODES) + 1


def test_the_translation_maps_each_access_address_to_its_node():
    script = ruleset(topology.NODES)
    pairs = dict(re.findall(r"(\d+\.\d+\.\d+\.\d+) : (\d+\.\d+\.\d+\.\d+)", script))
    assert pairs == {n.access_ip: n.ip for n in topology.NODES}
    assert f"ip daddr {topology.OUTSIDE_SUBNET} dnat to ip daddr map @access" in script


def test_this_machine_is_refused_the_internal_addresses_except_through_the_translation():
    rule = next(line.strip() for line in ruleset(topology.NODES).splitlines() if "reject" in line)
    assert rule.startswith(f"ip daddr {topology.SUBNET} ip daddr != {topology.GATEWAY} ct state new")
    assert "ct status & dnat == 0" in rule


def test_the_script_replaces_the_table_in_one_transaction():
    lines = ruleset(topology.NODES).splitlines()
    assert lines[:3] == [f"table ip {topology.NFT_TABLE} {{}}", f"delete table ip {topology.NFT_TABLE}",
                         f"table ip {topology.NFT_TABLE} {{"]
