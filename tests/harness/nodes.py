"""Podman "VMs" for the lab tier: Debian 12 (or 13) systemd nodes on a fixed network.

The lab tier (make lab, molecule/default) runs playbooks/site.yml over SSH
against containers that behave like the workshop's VMs. This script builds
their image and starts, lists and removes them:

    image    build (or reuse) the node images
    up       image + SSH key + network + volumes + nodes; waits for sshd
    status   what exists, and whether each node answers on SSH
    down     remove exactly what `up` created (found by its label)
    env      print the shell exports for using podman/ssh on the lab by hand
    seats    print how to log in as a seat and where the GPU board is (from the lab's artifacts)

The lab is shaped like a NAT cloud: every node has an internal address on the
podman network (10.89.42.x, what the nodes use among themselves) and an access
address (10.89.43.x, the same last number) that this machine reaches it at;
nftables translates one to the other and refuses connections from this
machine straight to an internal address (podman_lab/nat.py).

What `up` creates, each labelled dralab.workshop/lab=local where podman labels:
- network dralab-lab, 10.89.42.0/24, gateway 10.89.42.1 (the build host);
- the outside: link dralab-out (a veth pair) holding 10.89.43.1/24 and the
  nftables table ip dralab_lab (translation and the inside-only rule);
- nodes cp1 10.89.42.11, worker1 .12, worker2 .13 (containers dralab-cp1,
  ...): privileged, --cgroupns=private, no pids limit, systemd as PID 1,
  tmpfs /run and /tmp, a named volume for /var/lib/containerd (nested
  containers cannot sit on the node's overlay root), / made rshared at boot
  (kubelet mount propagation), SSH host keys made at first boot;
- node login1 10.89.42.14, the same image without the containerd volume: a
  login host that is no cluster node (seats log in there and on cp1);
- node mirror1 10.89.42.2 (container dralab-mirror1), the lab's offline mirror
  host (roles/mirror): this build host runs no systemd, so the mirror gets a
  VM of its own, as in an air-gapped workshop. The mirror contents built by
  python -m dralab_build.mirror ($DRALAB_CACHE/mirror) are mounted into it
  like a carried disk: files/ at /srv/dralab-mirror/files (overlay: the role
  may add charts/ without touching the cache), images/ read-only at
  /srv/dralab-mirror/images, and a helm client for the chart push; the
  registry storage is a named volume.
Root logs in with the key pair $DRALAB_CACHE/lab/ssh/id_ed25519 (made once).
`up` writes the nodes' host keys (read with podman exec) to
$DRALAB_CACHE/lab/ssh/known_hosts; inventories/local checks them strictly.

Images: debootstrap --variant=minbase of Debian 12 with systemd, sshd, Python
and everything the roles would install (prereqs' packages, python3-apt and
python3-yaml for the apt and helm modules), so offline nodes find them
present. The rootfs is cached as $DRALAB_CACHE/images/<name>-<key>.tar.zst and
imported as localhost/<name>:<key>, the key being a hash of the suite, the
package list and this recipe; a warm `up` builds nothing.

DRALAB_NODE_SUITE=trixie makes every node Debian 13 (images
dralab-node-trixie and dralab-mirror-trixie; molecule/debian13). Debian 13's
systemd 257 boots in these containers on the hosts' cgroup v1, like Debian
12's.

Podman settings come from a private containers.conf
($DRALAB_CACHE/lab/containers.conf, through CONTAINERS_CONF) rather than
/etc: this machine's process may not raise RLIMIT_NOFILE (no
CAP_SYS_RESOURCE), so the default ulimits must stay under the current hard
limits; runc; cgroupfs; events to a file (no systemd on the host). Run podman
on the lab with the same file: eval "$(python tests/harness/nodes.py env)".

Examples:
    python tests/harness/nodes.py up
    python tests/harness/nodes.py status
    python tests/harness/nodes.py down
    nice -n 10 python tests/harness/nodes.py image --force
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # dralab_build (tests/harness, which holds podman_lab, is sys.path[0] already)
from dralab_build.cache import cache_root  # noqa: E402
from podman_lab.guide import env_exports, seats_help  # noqa: E402
from podman_lab.images import IMAGES, build_image  # noqa: E402
from podman_lab.lifecycle import down, status, up  # noqa: E402
from podman_lab.podman import ensure_podman  # noqa: E402
from podman_lab.topology import BY_NAME, LABEL, NETWORK, NODES, SUBNET, LabError, log  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", maxsplit=1)[0],
        epilog="Nodes: " + ", ".join(f"{n.name} {n.access_ip} (inside {n.ip})" for n in NODES)
        + f". Network {NETWORK} {SUBNET}. Label {LABEL}. Cache: $DRALAB_CACHE (default ~/.cache/dralab).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_image = sub.add_parser("image", help="build (or reuse) the node images")
    p_image.add_argument("--force", action="store_true", help="rebuild even if cached")
    p_image.add_argument("kinds", nargs="*", metavar="KIND",
                         help=f"which images ({', '.join(IMAGES)}; default all)")
    p_up = sub.add_parser("up", help="start the lab (builds what is missing)")
    p_up.add_argument("nodes", nargs="*", metavar="NODE",
                      help=f"only these nodes ({', '.join(BY_NAME)}; default all)")
    p_up.add_argument("--mirror-dir", type=Path, default=None,
                      help="mirror contents for the mirror node (default $DRALAB_CACHE/mirror)")
    p_up.add_argument("--timeout", type=float, default=180, help="seconds to wait for sshd (default 180)")
    sub.add_parser("down", help=f"remove every container, volume and network labelled {LABEL}")
    p_status = sub.add_parser("status", help="list the lab (exit 3 unless every node is up)")
    p_status.add_argument("--json", action="store_true")
    sub.add_parser("env", help="print shell exports (CONTAINERS_CONF, the SSH key)")
    sub.add_parser("seats", help="print how to log in as a seat and the GPU board's URL and token (after site.yml)")
    args = parser.parse_args(argv)
    try:
        if args.command == "image":
            unknown = [k for k in args.kinds if k not in IMAGES]
            if unknown:
                parser.error(f"unknown image(s) {unknown}; choose from {list(IMAGES)}")
            ensure_podman()
            for kind in args.kinds or list(IMAGES):
                print(build_image(kind, force=args.force))
        elif args.command == "up":
            unknown = [n for n in args.nodes if n not in BY_NAME]
            if unknown:
                parser.error(f"unknown node(s) {unknown}; choose from {list(BY_NAME)}")
            selected = [BY_NAME[n] for n in args.nodes] or NODES
            up(selected, args.mirror_dir or cache_root() / "mirror", args.timeout)
        elif args.command == "down":
            down()
        elif args.command == "status":
            return status(args.json)
        elif args.command == "env":
            env_exports()
        elif args.command == "seats":
            seats_help()
    except LabError as exc:
        log(f"FAILED: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
