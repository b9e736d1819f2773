"""Where the podman lab keeps its files on this host: ${DRALAB_CACHE}/lab (the SSH key pair, known_hosts,
containers.conf, the artifacts site.yml writes)."""

from __future__ import annotations

from pathlib import Path

from dralab_build.cache import cache_root


def lab_dir() -> Path:
    return cache_root() / "lab"


def ssh_key() -> Path:
    return lab_dir() / "ssh" / "id_ed25519"


def containers_conf() -> Path:
    return lab_dir() / "containers.conf"


def known_hosts() -> Path:
    """The nodes' SSH host keys, for Ansible and the tests (written by `up`)."""
    return lab_dir() / "ssh" / "known_hosts"


def artifacts_dir() -> Path:
    """dralab_artifacts_dir of inventories/local/group_vars/all.yml."""
    return lab_dir() / "artifacts"
