# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""controller_template as a task runs it: ansible-playbook renders a template beside the playbook into a file, the
same bytes as ansible.builtin.template writes, then reports no change; check and diff mode; bad input."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[4]
TEMPLATE = """# {{ title }}
{% for seat in seats %}
{{ seat }},{{ 'x' ~ loop.index }}
{% endfor %}
last line
"""


def run(tmp_path: pathlib.Path, args: dict, *flags: str, module: str = "dralab.workshop.controller_template"):
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "sheet.j2").write_text(TEMPLATE)
    plays = [{"name": "Write", "hosts": "localhost", "gather_facts": False,
              "vars": {"title": "Seats", "seats": ["user01", "user02"]},
              "tasks": [{"name": "Write the file", module: args, "register": "written"},
                        {"name": "Keep the result", "check_mode": False, "ansible.builtin.copy": {
                            "content": "{{ written | to_json }}", "dest": str(tmp_path / "result.json"),
                            "mode": "0600"}}]}]
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps(plays))
    (tmp_path / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = False\n")
    env = {**os.environ, "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_COLLECTIONS_PATH": str(REPO / "collections"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}
    beside = pathlib.Path(sys.executable).parent / "ansible-playbook"
    command = str(beside) if beside.exists() else shutil.which("ansible-playbook")
    result = subprocess.run([command, "-i", "localhost,", "-c", "local", "-e",
                             f"ansible_python_interpreter={sys.executable}", *flags, str(playbook)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    kept = tmp_path / "result.json"
    return result, (json.loads(kept.read_text()) if kept.exists() else None)


def test_it_writes_what_ansible_builtin_template_writes_then_changes_nothing(tmp_path):
    builtin = tmp_path / "builtin.csv"
    result, _written = run(tmp_path, {"src": "sheet.j2", "dest": str(builtin), "mode": "0600"},
                           module="ansible.builtin.template")
    assert result.returncode == 0, result.stdout + result.stderr
    ours = tmp_path / "ours.csv"
    result, written = run(tmp_path, {"src": "sheet.j2", "dest": str(ours)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert written["changed"] is True and written["dest"] == str(ours)
    assert ours.read_bytes() == builtin.read_bytes()
    assert stat.S_IMODE(ours.stat().st_mode) == 0o600
    result, written = run(tmp_path, {"src": "sheet.j2", "dest": str(ours)})
    assert written["changed"] is False
    # A mode that differs is set again.
    ours.chmod(0o644)
    result, written = run(tmp_path, {"src": "sheet.j2", "dest": str(ours), "mode": "0600"})
    assert written["changed"] is True and stat.S_IMODE(ours.stat().st_mode) == 0o600


def test_check_mode_reports_and_writes_nothing_and_diff_shows_both(tmp_path):
    dest = tmp_path / "sheet.csv"
    dest.write_text("old\n")
    result, written = run(tmp_path, {"src": "sheet.j2", "dest": str(dest)}, "--check", "--diff")
    assert result.returncode == 0, result.stdout + result.stderr
    assert written["changed"] is True and dest.read_text() == "old\n"
    assert written["diff"]["before"] == "old\n" and "user02,x2" in written["diff"]["after"]


def test_bad_input_fails_naming_the_field(tmp_path):
    result, _written = run(tmp_path, {"src": "sheet.j2", "dest": str(tmp_path / "sheet.csv"), "mode": "rw"})
    assert result.returncode != 0 and "mode: 'rw' is no octal mode" in result.stdout, result.stdout
    result, _written = run(tmp_path, {"src": "sheet.j2", "dest": str(tmp_path / "nowhere" / "sheet.csv")})
    assert result.returncode != 0 and "dest: the folder of" in result.stdout, result.stdout
    result, _written = run(tmp_path, {"src": "missing.j2", "dest": str(tmp_path / "sheet.csv")})
    assert result.returncode != 0 and "missing.j2" in result.stdout, result.stdout
