"""Start and stop a local Kubernetes control plane with fake GPU nodes.

What runs (all on 127.0.0.1, random free ports, state in one directory):
  etcd                      TLS with client certificates, data in DIR/etcd
  kube-apiserver            Node,RBAC authorization, the admission plugins and
                            token lifetimes of roles/control_plane's defaults
                            (DenyServiceExternalIPs, max token expiration),
                            resource.k8s.io/v1
  kube-controller-manager   every controller, per-controller service accounts
  kube-scheduler            allocates ResourceClaims (DRA is GA in 1.35)
  kwok                      makes the fake nodes Ready and their pods Running;
                            it manages only nodes annotated kwok.x-k8s.io/node=fake,
                            which this script creates
  dra-example-kubeletplugin one per node, identity system:node:NAME, publishes
                            that node's ResourceSlice (driver gpu.example.com);
                            per extra release of the chart (driver_releases, e.g.
                            the NICs of gpu_nic_numa) one more per node, with that
                            release's profile and driver name

Usage:
  python tests/harness/cluster.py up --dir DIR [--nodes node-1,node-2] [--feature-gates A,B=false]
  python tests/harness/cluster.py down --dir DIR
  python tests/harness/cluster.py status --dir DIR

`up` prints the admin kubeconfig path and returns; the processes keep running
in their own process groups, recorded in DIR/cluster.json. `down` stops them
and removes DIR. If `up` fails, it prints the tail of each log, stops what it
started and removes DIR (unless --keep-on-failure).

Tests may stop and start single processes of a running cluster
(Cluster.stop_process/start_process, stop_plugin/start_plugin, e.g. to take a
node's GPUs away or to pause kube-controller-manager); each process's command
is kept in DIR/cluster.json for that.

Binaries come from the cache of python -m dralab_build.binaries (run it first,
or pass --build). Needs the `kubernetes` and `cryptography` Python packages (both are
in the project venv).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # dralab_build (tests/harness, which holds local_cluster, is sys.path[0] already)
from dralab_build.binaries import cli as binaries_cli  # noqa: E402
from local_cluster.control_plane import DEFAULT_NODES, Cluster  # noqa: E402
from local_cluster.processes import ClusterError, alive, log  # noqa: E402


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)  # unwinds through up()'s cleanup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the cluster, print the kubeconfig path")
    up.add_argument("--dir", required=True, help="state directory (created; must be empty or absent)")
    up.add_argument("--nodes", default=",".join(DEFAULT_NODES), help="comma-separated node names")
    up.add_argument("--feature-gates", default="", help="e.g. DRAConsumableCapacity,DRADeviceTaints=false")
    up.add_argument("--num-devices", type=int, default=8, help="emulated GPUs per node")
    up.add_argument("--timeout", type=float, default=240, help="seconds to wait for each step")
    up.add_argument("--build", action="store_true", help="build missing binaries first")
    up.add_argument("--keep-on-failure", action="store_true", help="keep DIR (logs) if up fails")
    down = sub.add_parser("down", help="stop the cluster and remove DIR")
    down.add_argument("--dir", required=True)
    down.add_argument("--keep", action="store_true", help="stop the processes but keep DIR")
    status = sub.add_parser("status", help="show the processes and devices")
    status.add_argument("--dir", required=True)
    args = parser.parse_args(argv)

    if args.command == "up":
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        if args.build:
            with contextlib.redirect_stdout(sys.stderr):  # stdout is for the kubeconfig path
                if binaries_cli.main([]) != 0:
                    return 1
        cluster = Cluster(args.dir, nodes=[n for n in args.nodes.split(",") if n],
                          feature_gates=args.feature_gates, num_devices=args.num_devices,
                          timeout=args.timeout)
        try:
            print(cluster.up(keep_on_failure=args.keep_on_failure))
        except (ClusterError, KeyboardInterrupt) as exc:
            log(f"FAILED: {exc}")
            return 1
        return 0

    cluster = Cluster(args.dir)
    if not cluster.state_file.exists():
        log(f"no cluster in {cluster.dir}")
        return 0 if args.command == "down" else 1
    state = cluster.load_state()
    if args.command == "down":
        cluster.down(remove=not args.keep)
        return 0
    for entry in state["procs"]:
        print(f"{entry['name']:28} pid {entry['pid']:<8} {'running' if alive(entry) else 'DEAD'}")
    print(f"kubeconfig {cluster.kubeconfig}")
    try:
        print(f"devices per node: {cluster.devices_per_node(cluster.api_client())}")
    except Exception as exc:  # the API server may be down
        print(f"API not reachable: {exc}")
    return 0 if all(alive(e) for e in state["procs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
