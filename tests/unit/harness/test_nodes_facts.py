"""The podman lab (podman_lab/lifecycle.py) forgets what Ansible's fact cache kept of a node it replaces: the cache is the one ansible.cfg names
(or ANSIBLE_CACHE_PLUGIN_CONNECTION), so a new container is never mistaken for the old one."""

from __future__ import annotations

import configparser
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness"
REPO = HARNESS.parents[1]
for path in (HARNESS, REPO):  # podman_lab, and the dralab_build it imports
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
from podman_lab import lifecycle  # noqa: E402  (tests/harness/podman_lab/lifecycle.py)
from podman_lab.topology import NODES  # noqa: E402


def test_the_fact_cache_is_the_one_ansible_cfg_names(monkeypatch):
    monkeypatch.delenv("ANSIBLE_CACHE_PLUGIN_CONNECTION", raising=False)
    config = configparser.ConfigParser(interpolation=None)
    config.read(REPO / "ansible.cfg")
    assert config.get("defaults", "fact_caching") == "jsonfile"
    assert lifecycle.fact_cache_dir() == (REPO / config.get("defaults", "fact_caching_connection")).resolve()


def test_forget_facts_drops_the_node_s_files_only(monkeypatch, tmp_path):
    monkeypatch.setenv("ANSIBLE_CACHE_PLUGIN_CONNECTION", str(tmp_path))
    for name in ("cp1", "ansible_facts_cp1", "worker1", "cp10"):
        (tmp_path / name).write_text("{}")
    node = next(n for n in NODES if n.name == "cp1")
    lifecycle.forget_facts(node)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cp10", "worker1"]
