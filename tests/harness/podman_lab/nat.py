"""The lab's outside: each node's access address, translated by nftables to its internal address, as a cloud
translates a VM's public address to its private one.

`up` makes a veth pair whose near end holds OUTSIDE_GATEWAY (this machine's address on the outside range, what the
nodes see as the client of every SSH and API connection from here) and the table NFT_TABLE:
- translate: connections this machine opens to an access address go to the node's internal address (DNAT);
- inside_only: connections this machine opens straight to an internal address are refused, so nothing on the
  controller (Ansible, the tests, a participant's ssh) can work by reaching past the translation.
The nodes themselves use internal addresses only; an access address dialled from inside a node leads nowhere (the
far end of the veth answers nothing), as a test would want: cluster traffic that went out and back in through the
translation would cost money and break on clouds that filter it.
`down` removes both; nothing else on this machine is touched.
"""

from __future__ import annotations

import json
import subprocess

from podman_lab.topology import GATEWAY, NFT_TABLE, OUTSIDE_GATEWAY, OUTSIDE_LINK, OUTSIDE_SUBNET, SUBNET, LabError, Node, log

OUTSIDE_PEER = OUTSIDE_LINK + "-p"
PREFIX_LENGTH = OUTSIDE_SUBNET.split("/")[1]


def _run(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(args), input=stdin, capture_output=True, text=True, timeout=30, check=False)
    if check and proc.returncode != 0:
        raise LabError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def ruleset(nodes: list[Node]) -> str:
    """The nft script that (re)creates NFT_TABLE for these nodes, atomically."""
    elements = ", ".join(f"{n.access_ip} : {n.ip}" for n in nodes)
    return f"""table ip {NFT_TABLE} {{}}
delete table ip {NFT_TABLE}
table ip {NFT_TABLE} {{
    map access {{
        type ipv4_addr : ipv4_addr
        elements = {{ {elements} }}
    }}
    chain translate {{
        type nat hook output priority -100; policy accept;
        ip daddr {OUTSIDE_SUBNET} dnat to ip daddr map @access
    }}
    chain inside_only {{
        type filter hook output priority 0; policy accept;
        ip daddr {SUBNET} ip daddr != {GATEWAY} ct state new ct status & dnat == 0 reject with icmp type admin-prohibited
    }}
}}
"""


def _link_addresses(name: str) -> list[str] | None:
    proc = _run("ip", "-json", "address", "show", "dev", name, check=False)
    if proc.returncode != 0:
        return None
    links = json.loads(proc.stdout or "[]")
    return [f"{a['local']}/{a['prefixlen']}" for link in links for a in link.get("addr_info", []) if a.get("family") == "inet"]


def ensure_nat(nodes: list[Node]) -> None:
    wanted = f"{OUTSIDE_GATEWAY}/{PREFIX_LENGTH}"
    addresses = _link_addresses(OUTSIDE_LINK)
    if addresses is None:
        log(f"outside link {OUTSIDE_LINK} {wanted}")
        _run("ip", "link", "add", OUTSIDE_LINK, "type", "veth", "peer", "name", OUTSIDE_PEER)
        _run("ip", "address", "add", wanted, "dev", OUTSIDE_LINK)
    elif addresses != [wanted]:
        raise LabError(f"link {OUTSIDE_LINK} exists with addresses {addresses}, not {wanted}: not made by this script")
    _run("ip", "link", "set", OUTSIDE_PEER, "up")
    _run("ip", "link", "set", OUTSIDE_LINK, "up")
    _run("nft", "-f", "-", stdin=ruleset(nodes))


def remove_nat() -> None:
    if _run("nft", "list", "table", "ip", NFT_TABLE, check=False).returncode == 0:
        log(f"removing nftables table {NFT_TABLE}")
        _run("nft", "delete", "table", "ip", NFT_TABLE)
    if _link_addresses(OUTSIDE_LINK) is not None:
        log(f"removing link {OUTSIDE_LINK}")
        _run("ip", "link", "delete", OUTSIDE_LINK)


def nat_state() -> dict:
    return {"link": _link_addresses(OUTSIDE_LINK),
            "table": _run("nft", "list", "table", "ip", NFT_TABLE, check=False).returncode == 0}
