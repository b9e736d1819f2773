"""podman for the lab: run with the lab's private containers.conf; the lab's network, volumes and containers,
found by their label."""

from __future__ import annotations

import json
import os
import resource
import shlex
import shutil
import subprocess
from pathlib import Path

from podman_lab.paths import containers_conf
from podman_lab.topology import GATEWAY, LABEL, LABEL_KEY, LABEL_VALUE, NETWORK, SUBNET, LabError, Node, log


def podman_env() -> dict:
    env = dict(os.environ)
    env["CONTAINERS_CONF"] = str(containers_conf())
    return env


def podman(*args: str, check: bool = True, capture: bool = True, input_file=None,
           timeout: float | None = None) -> subprocess.CompletedProcess:
    cmd = ["podman", *args]
    try:
        proc = subprocess.run(cmd, env=podman_env(), text=True, stdin=input_file, timeout=timeout, check=False,
                              stdout=subprocess.PIPE if capture else None,
                              stderr=subprocess.PIPE if capture else None)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"{shlex.join(cmd)} did not finish in {timeout:.0f}s") from exc
    if check and proc.returncode != 0:
        raise LabError(f"{shlex.join(cmd)} failed ({proc.returncode}): {(proc.stderr or '').strip()}")
    return proc


def podman_json(*args: str) -> list:
    out = podman(*args).stdout.strip()
    return json.loads(out) if out else []


def write_containers_conf() -> Path:
    """containers.conf whose default ulimits this process may actually set."""
    def capped(limit: int, cap: int) -> int:
        return cap if limit == resource.RLIM_INFINITY else min(limit, cap)

    nofile = capped(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1048576)
    # podman lowers its own (and conmon's) RLIMIT_NPROC to 32768 when it may
    # not raise it; a container cannot get more than conmon has.
    nproc = capped(resource.getrlimit(resource.RLIMIT_NPROC)[1], 32768)
    text = (
        "# Written by tests/harness/nodes.py for the podman lab (CONTAINERS_CONF).\n"
        "[containers]\n"
        "# At most the hard limits of the process that starts podman: without\n"
        "# CAP_SYS_RESOURCE, podman's default (1048576) fails with setrlimit EPERM.\n"
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        "\n[engine]\n"
        'runtime = "runc"\n'
        'cgroup_manager = "cgroupfs"\n'
        'events_logger = "file"\n'
    )
    path = containers_conf()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def ensure_podman() -> None:
    if not shutil.which("podman"):
        raise LabError("podman is not installed (apt-get install podman runc debootstrap)")
    write_containers_conf()


def labelled(kind: str) -> list[dict]:
    """Containers, volumes or networks carrying the lab label."""
    if kind == "container":
        return podman_json("ps", "-a", "--filter", f"label={LABEL}", "--format", "json")
    if kind == "volume":
        return podman_json("volume", "ls", "--filter", f"label={LABEL}", "--format", "json")
    if kind == "network":
        nets = podman_json("network", "ls", "--format", "json")
        return [n for n in nets if (n.get("labels") or {}).get(LABEL_KEY) == LABEL_VALUE]
    raise ValueError(kind)


def ensure_network() -> None:
    nets = {n["name"]: n for n in podman_json("network", "ls", "--format", "json")}
    net = nets.get(NETWORK)
    if net is not None:
        if (net.get("labels") or {}).get(LABEL_KEY) != LABEL_VALUE:
            raise LabError(f"network {NETWORK} exists but was not created by this script (no label {LABEL})")
        subnets = [s.get("subnet") for s in net.get("subnets") or []]
        if SUBNET not in subnets:
            raise LabError(f"network {NETWORK} has subnets {subnets}, expected {SUBNET}: run `down` first")
        return
    for other in nets.values():
        if any(s.get("subnet") == SUBNET for s in other.get("subnets") or []):
            raise LabError(f"network {other['name']} already uses {SUBNET}")
    log(f"network {NETWORK} {SUBNET} (gateway {GATEWAY})")
    podman("network", "create", "--driver", "bridge", "--subnet", SUBNET, "--gateway", GATEWAY,
           "--label", LABEL, NETWORK)


def ensure_volume(name: str) -> None:
    found = podman_json("volume", "ls", "--filter", f"name=^{name}$", "--format", "json")
    for vol in found:
        if vol.get("Name") == name:
            if (vol.get("Labels") or {}).get(LABEL_KEY) != LABEL_VALUE:
                raise LabError(f"volume {name} exists but was not created by this script")
            return
    podman("volume", "create", "--label", LABEL, name)


def container_state(node: Node) -> str:
    proc = podman("container", "inspect", "--format", "{{.State.Status}}", node.container, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else "absent"
