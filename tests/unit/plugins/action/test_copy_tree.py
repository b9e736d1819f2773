# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""copy_tree as a task runs it: ansible-playbook against localhost, the action plugin and the module together."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[4]


def _ansible_playbook() -> str:
    beside = pathlib.Path(sys.executable).parent / "ansible-playbook"
    found = str(beside) if beside.exists() else shutil.which("ansible-playbook")
    assert found, "ansible-playbook is missing: run `make setup`"
    return found


@pytest.fixture
def source(tmp_path) -> pathlib.Path:
    src = tmp_path / "src"
    (src / "pkg" / "sub").mkdir(parents=True)
    (src / "pkg" / "__pycache__").mkdir()
    (src / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (src / "pkg" / "a.py").write_text("A = 1\n")
    (src / "pkg" / "sub" / "b.py").write_text("B = 2\n")
    (src / "pkg" / "__pycache__" / "a.cpython-313.pyc").write_bytes(b"\0cache")
    (src / "pkg" / "stale.pyc").write_bytes(b"\0cache")
    return src


def play(tmp_path: pathlib.Path, task_args: dict, *flags: str) -> dict:
    """Run one copy_tree task; return its result (the task's registered variable)."""
    out = tmp_path / "result.json"
    tasks = [
        {"name": "Copy the tree", "dralab.workshop.copy_tree": task_args, "register": "copied", "ignore_errors": True},
        {"name": "Keep the result", "ansible.builtin.copy": {"content": "{{ copied | to_json }}", "dest": str(out), "mode": "0600"},
         "check_mode": False},
    ]
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps([{"name": "Copy", "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks}]))
    (tmp_path / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = False\n")
    env = {**os.environ, "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": str(REPO / "collections"),
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run([_ansible_playbook(), "-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}", *flags, str(playbook)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


def tree_of(root: pathlib.Path) -> dict[str, str]:
    return {str(p.relative_to(root)): oct(stat.S_IMODE(p.stat().st_mode)) for p in sorted(root.rglob("*"))}


def test_copies_the_tree_then_reruns_unchanged_and_sends_only_what_differs(tmp_path, source):
    dest = tmp_path / "dest"
    args = {"sources": [{"src": str(source / "pyproject.toml")}, {"src": str(source / "pkg"), "folder": "lib"}],
            "dest": str(dest), "mode": "0640", "directory_mode": "0750"}
    first = play(tmp_path, args)
    assert first["changed"] and first["changed_files"] == ["lib/pkg/a.py", "lib/pkg/sub/b.py", "pyproject.toml"]
    assert "needed" not in first and "invocation" not in first
    assert tree_of(dest) == {"lib": "0o750", "lib/pkg": "0o750", "lib/pkg/a.py": "0o640", "lib/pkg/sub": "0o750",
                             "lib/pkg/sub/b.py": "0o640", "pyproject.toml": "0o640"}
    assert (dest / "lib/pkg/sub/b.py").read_text() == "B = 2\n"

    again = play(tmp_path, args)
    assert not again["changed"] and again["changed_files"] == [] and again["changed_attributes"] == []

    (source / "pkg" / "a.py").write_text("A = 3\n")
    (dest / "pyproject.toml").chmod(0o666)
    (dest / "extra.txt").write_text("mine\n")
    check = play(tmp_path, args, "--check")
    assert check["changed"] and check["changed_files"] == ["lib/pkg/a.py"]
    assert check["changed_attributes"] == [str(dest / "pyproject.toml")]
    assert (dest / "lib/pkg/a.py").read_text() == "A = 1\n" and tree_of(dest)["pyproject.toml"] == "0o666"

    third = play(tmp_path, args)
    assert third["changed"] and third["changed_files"] == ["lib/pkg/a.py"]
    assert (dest / "lib/pkg/a.py").read_text() == "A = 3\n" and tree_of(dest)["pyproject.toml"] == "0o640"
    assert (dest / "extra.txt").read_text() == "mine\n"


@pytest.mark.parametrize("args, words", [
    ({"sources": [{"src": "/nonexistent/dralab"}]}, "sources: Could not find or access '/nonexistent/dralab' on the Ansible Controller"),
    ({"sources": []}, "sources: name at least one"),
    ({"sources": [{"src": "SRC"}], "mode": "rw-"}, "mode: 'rw-' is not an octal mode"),
    ({"sources": [{"src": "SRC"}], "owner": "no-such-user-dralab"}, "owner: 'no-such-user-dralab' does not exist"),
    ({"sources": [{"src": "SRC"}], "group": "no-such-group-dralab"}, "group: 'no-such-group-dralab' does not exist"),
    ({"sources": [{"src": "SRC"}], "files": {"a": {"sha256": "0"}}}, "files: set by the action from sources"),
])
def test_bad_arguments_fail_naming_the_field_and_change_nothing(tmp_path, source, args, words):
    dest = tmp_path / "dest"
    args = dict(args, dest=str(dest), sources=[{"src": str(source / "pkg") if s["src"] == "SRC" else s["src"]} for s in args["sources"]])
    result = play(tmp_path, args)
    assert result["failed"] and words in result["msg"], result
    assert not dest.exists()
