# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import hashlib

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.files import tree
from module_runner import run_module


def test_local_files_lands_files_and_folders_as_copy_does_and_leaves_byte_code_out(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "m.py").write_text("x")
    (tmp_path / "pkg" / "m.pyc").write_text("x")
    (tmp_path / "pkg" / "__pycache__" / "m.pyc").write_text("x")
    (tmp_path / "top.toml").write_text("x")
    found = tree.local_files([(str(tmp_path / "pkg") + "/", "a/b/"), (str(tmp_path / "top.toml"), "")])
    assert found == {"a/b/pkg/m.py": str(tmp_path / "pkg" / "m.py"), "top.toml": str(tmp_path / "top.toml")}


def test_local_files_refuses_a_missing_source_and_two_sources_on_one_path(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "one" / "x").write_text("1")
    (tmp_path / "two" / "x").write_text("2")
    with pytest.raises(ValueError, match="does not exist on the controller"):
        tree.local_files([(str(tmp_path / "missing"), "")])
    with pytest.raises(ValueError, match="would both be copied to x"):
        tree.local_files([(str(tmp_path / "one" / "x"), ""), (str(tmp_path / "two" / "x"), "")])


def test_differences_name_missing_and_other_files(tmp_path):
    (tmp_path / "same").write_text("s")
    (tmp_path / "other").write_text("o")
    (tmp_path / "folder").mkdir()
    digest = hashlib.sha256(b"s").hexdigest()
    wanted = {"same": digest, "other": digest, "missing": digest, "folder": digest, "same/below": digest}
    assert tree.differences(str(tmp_path), wanted) == ["folder", "missing", "other", "same/below"]


@pytest.mark.parametrize("rel", ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a"])
def test_the_module_refuses_paths_outside_its_destination(tmp_path, rel):
    code, result = run_module("copy_tree", {"dest": str(tmp_path / "d"), "files": {rel: {"sha256": "0", "content": "eA=="}}})
    assert code == 1 and result["msg"].startswith("files: ") and "not a relative path below the destination" in result["msg"]
    assert not (tmp_path / "d").exists() and not (tmp_path / "x").exists()


def test_the_module_run_alone_says_to_run_it_as_a_task(tmp_path):
    code, result = run_module("copy_tree", {"dest": str(tmp_path)})
    assert code == 1 and "action plugin sets files from sources" in result["msg"]
