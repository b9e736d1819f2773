# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_facts as a task runs it: ansible-playbook on two local hosts, the facts delegated to each."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[4]


def run(tmp_path: pathlib.Path, facts, *flags: str) -> subprocess.CompletedProcess:
    """host_facts delegated to localhost and to host other (whose inventory and play set dralab_x otherwise);
    then each host writes what it sees."""
    seen = tmp_path / "seen-{{ inventory_hostname }}.json"
    plays = [
        {"name": "Hand the facts on", "hosts": "localhost", "gather_facts": False, "tasks": [
            {"name": "Set the facts", "dralab.workshop.host_facts": {"facts": facts},
             "delegate_to": "{{ item }}", "delegate_facts": True, "loop": ["localhost", "other"]}]},
        {"name": "Read them", "hosts": "localhost:other", "gather_facts": False, "vars": {"dralab_x": "play"},
         "tasks": [{"name": "Write what the host sees", "check_mode": False, "ansible.builtin.copy": {
             "content": "{{ {'x': dralab_x, 'y': dralab_y | default(None)} | to_json }}", "dest": str(seen),
             "mode": "0600"}, "delegate_to": "localhost"}]},
    ]
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps(plays))
    (tmp_path / "inventory").write_text("localhost ansible_connection=local\nother ansible_connection=local "
                                        "dralab_x=inventory\n")
    (tmp_path / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = False\n")
    env = {**os.environ, "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_COLLECTIONS_PATH": str(REPO / "collections"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}
    beside = pathlib.Path(sys.executable).parent / "ansible-playbook"
    command = str(beside) if beside.exists() else shutil.which("ansible-playbook")
    return subprocess.run([command, "-i", str(tmp_path / "inventory"), "-e", f"ansible_python_interpreter={sys.executable}",
                           *flags, str(playbook)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def test_every_key_reaches_each_delegated_host_above_inventory_and_play_vars(tmp_path):
    result = run(tmp_path, {"dralab_x": 5, "dralab_y": {"a": [1, 2]}})
    assert result.returncode == 0, result.stdout + result.stderr
    for host in ("localhost", "other"):
        assert json.loads((tmp_path / f"seen-{host}.json").read_text()) == {"x": 5, "y": {"a": [1, 2]}}, host
    # localhost's one change is its copy of what it sees: host_facts reports none.
    assert " changed=1 " in result.stdout.split("PLAY RECAP")[1].splitlines()[1], result.stdout


def test_check_mode_sets_them_too(tmp_path):
    result = run(tmp_path, {"dralab_x": 7}, "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads((tmp_path / "seen-other.json").read_text())["x"] == 7


def test_a_name_that_is_no_variable_name_fails_naming_it(tmp_path):
    result = run(tmp_path, {"dralab x": 1})
    assert result.returncode != 0
    assert "facts: 'dralab x' is no valid variable name" in result.stdout + result.stderr
    assert not list(tmp_path.glob("seen-*.json"))
