# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files seat_accounts keeps in a home, written as the seat: links are replaced, never followed, and a seat's
own files stay as it left them."""

from __future__ import annotations

import os
import pathlib
import pwd
import shutil
import stat
import tempfile

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.seat import home_files

KUBECONFIG = b"apiVersion: v1\nkind: Config\n"
DEMOS = {"prioritized-list/claim.yaml": (b"kind: ResourceClaim\n", 0o600),
         "prioritized-list/run.sh": (b"#!/bin/sh\n", 0o700)}


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_home_gets_its_kubeconfig_demos_and_skeleton_and_a_rerun_changes_nothing(tmp_path):
    skeleton = {".bashrc": (b"# bash\n", 0o644)}
    changes = home_files.converge_home(str(tmp_path), KUBECONFIG, DEMOS, skeleton, False)
    assert changes == ["skeleton files: 1 file(s) added", "~/.kube made", "~/.kube/config written",
                       "~/demos: 2 file(s) added"]
    assert (tmp_path / ".kube" / "config").read_bytes() == KUBECONFIG
    assert (mode(tmp_path / ".kube"), mode(tmp_path / ".kube" / "config")) == (0o700, 0o600)
    assert mode(tmp_path / "demos" / "prioritized-list" / "run.sh") == 0o700
    assert mode(tmp_path / "demos" / "prioritized-list") == 0o700
    assert (mode(tmp_path / ".bashrc"), (tmp_path / ".bashrc").read_bytes()) == (0o644, b"# bash\n")
    assert home_files.converge_home(str(tmp_path), KUBECONFIG, DEMOS, None, False) == []


def test_a_seats_own_files_stay_and_only_what_it_lacks_is_added(tmp_path):
    home_files.converge_home(str(tmp_path), KUBECONFIG, DEMOS, {".bashrc": (b"# bash\n", 0o644)}, False)
    (tmp_path / "demos" / "prioritized-list" / "claim.yaml").write_bytes(b"my edit\n")
    (tmp_path / "demos" / "prioritized-list" / "run.sh").unlink()
    (tmp_path / ".bashrc").unlink()
    changes = home_files.converge_home(str(tmp_path), KUBECONFIG, DEMOS, None, False)
    assert changes == ["~/demos: 1 file(s) added"]
    assert (tmp_path / "demos" / "prioritized-list" / "claim.yaml").read_bytes() == b"my edit\n"
    assert not (tmp_path / ".bashrc").exists(), "an existing home got the skeleton again"


def test_a_changed_kubeconfig_and_a_loose_mode_are_put_back(tmp_path):
    home_files.converge_home(str(tmp_path), KUBECONFIG, {}, None, False)
    (tmp_path / ".kube").chmod(0o755)
    (tmp_path / ".kube" / "config").chmod(0o644)
    assert home_files.converge_home(str(tmp_path), KUBECONFIG, {}, None, False) == [
        "~/.kube mode 0700", "~/.kube/config mode 0600"]
    assert home_files.converge_home(str(tmp_path), b"rotated\n", {}, None, False) == ["~/.kube/config written"]
    assert (tmp_path / ".kube" / "config").read_bytes() == b"rotated\n"


def test_links_the_seat_planted_are_replaced_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config").write_bytes(b"root's\n")
    canary = tmp_path / "canary"
    canary.write_bytes(b"canary\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".kube").symlink_to(outside)
    changes = home_files.converge_home(str(home), KUBECONFIG, {}, None, False)
    assert changes[0] == "~/.kube: the link or file there replaced by a folder"
    assert not (home / ".kube").is_symlink() and (home / ".kube" / "config").read_bytes() == KUBECONFIG
    assert (outside / "config").read_bytes() == b"root's\n"
    (home / ".kube" / "config").unlink()
    (home / ".kube" / "config").symlink_to(canary)
    assert home_files.converge_home(str(home), KUBECONFIG, {}, None, False) == ["~/.kube/config written"]
    assert not (home / ".kube" / "config").is_symlink()
    assert canary.read_bytes() == b"canary\n"


def test_check_mode_reports_and_writes_nothing(tmp_path):
    (tmp_path / ".kube").symlink_to(tmp_path)
    changes = home_files.converge_home(str(tmp_path), KUBECONFIG, DEMOS, {".bashrc": (b"x", 0o644)}, True)
    assert changes == ["skeleton files: 1 file(s) added", "~/.kube: the link or file there replaced by a folder",
                       "~/.kube/config written", "~/demos: 2 file(s) added"]
    assert sorted(os.listdir(tmp_path)) == [".kube"] and (tmp_path / ".kube").is_symlink()


def test_the_skeleton_is_read_as_files_and_modes(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / ".profile").write_text("p\n")
    (tmp_path / "sub" / "x").write_text("x\n")
    (tmp_path / "sub" / "x").chmod(0o755)
    (tmp_path / "link").symlink_to("/etc/passwd")
    assert home_files.skeleton_files(str(tmp_path)) == {".profile": (b"p\n", 0o644), "sub/x": (b"x\n", 0o755)}


def test_as_user_answers_with_the_function_result_and_its_error():
    assert home_files.as_user(os.getuid(), os.getgid(), sorted, [3, 1, 2]) == [1, 2, 3]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        home_files.as_user(os.getuid(), os.getgid(), divmod, 1, 0)


@pytest.fixture
def open_tmp():
    """A folder every user may reach (pytest's tmp_path sits below a folder of mode 0700)."""
    path = pathlib.Path(tempfile.mkdtemp(prefix="dralab-home-files-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def test_as_another_user_a_link_to_a_root_file_is_not_written(open_tmp):
    """The attack: ~/.kube/config a link to a file only root may write. As the seat, the write cannot reach it."""
    assert os.geteuid() == 0, "the unit tier runs as root (it sets the user ID of a child process)"
    nobody = pwd.getpwnam("nobody")
    tmp_path = open_tmp
    canary = tmp_path / "canary"
    canary.write_bytes(b"root only\n")
    canary.chmod(0o644)
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").symlink_to(canary)
    # The seat owns only its home itself; the folder it may write is .kube, where the link is replaced.
    os.lchown(home, nobody.pw_uid, nobody.pw_gid)
    os.lchown(home / ".kube", nobody.pw_uid, nobody.pw_gid)
    changes = home_files.as_user(nobody.pw_uid, nobody.pw_gid, home_files.converge_home, str(home), KUBECONFIG,
                                 {}, None, False)
    assert changes == ["~/.kube mode 0700", "~/.kube/config written"]
    assert canary.read_bytes() == b"root only\n"
    assert os.lstat(home / ".kube" / "config").st_uid == nobody.pw_uid
    # A folder of root's the seat cannot write: the child fails, and says why.
    (home / ".kube").rename(home / "kube-old")
    (home / ".kube").symlink_to(tmp_path)
    os.lchown(home, 0, 0)
    with pytest.raises(RuntimeError, match="PermissionError"):
        home_files.as_user(nobody.pw_uid, nobody.pw_gid, home_files.converge_home, str(home), KUBECONFIG, {}, None,
                           False)
    assert sorted(os.listdir(tmp_path)) == ["canary", "home"]
