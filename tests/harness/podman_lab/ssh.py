"""SSH to the nodes: root's key pair, the nodes' host keys (known_hosts, read from the nodes themselves), whether
sshd answers."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from podman_lab.paths import known_hosts, ssh_key
from podman_lab.podman import container_state, podman
from podman_lab.topology import Node


def ensure_ssh_key() -> Path:
    key = ssh_key()
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(key.parent, 0o700)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dralab-lab-root",
                        "-f", str(key)], check=True)
    return key


def write_known_hosts(nodes: list[Node]) -> Path:
    """Record each running node's host keys, read from the node itself (podman exec, not the network).

    Every `up` of a new container makes new keys (dralab-ssh-hostkeys.service),
    so the file is rewritten from the nodes that run now; Ansible and the tests
    then check host keys strictly against it.
    """
    lines = []
    for node in nodes:
        if container_state(node) != "running":
            continue
        out = podman("exec", node.container, "sh", "-c", "cat /etc/ssh/ssh_host_*_key.pub", timeout=30).stdout
        for key in out.splitlines():
            fields = key.split()
            if len(fields) >= 2:
                lines.append(f"{node.access_ip},{node.ip},{node.name} {fields[0]} {fields[1]}")
    path = known_hosts()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(line + "\n" for line in lines))
    tmp.chmod(0o644)
    tmp.rename(path)
    return path


def ssh_banner(ip: str, timeout: float = 2.0) -> str:
    try:
        with socket.create_connection((ip, 22), timeout=timeout) as sock:
            sock.settimeout(timeout)
            return sock.recv(64).decode(errors="replace").strip()
    except OSError:
        return ""
