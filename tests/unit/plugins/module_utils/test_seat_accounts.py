# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seat_accounts' account rules and systemd drop-ins (the accounts themselves are made on the lab's login hosts:
tests/lab/test_seat_host.py)."""

from __future__ import annotations

import os
import pwd
import stat

from ansible_collections.dralab.workshop.plugins.module_utils.seat import accounts, dropins

WANTED = {"name": "user01", "group": "workshop-seats", "comment": "dralab.workshop seat", "shell": "/bin/bash",
          "home": "/home/seats/user01"}


def entry(**fields) -> pwd.struct_passwd:
    values = {"pw_name": "user01", "pw_passwd": "x", "pw_uid": 1001, "pw_gid": 1001,
              "pw_gecos": "dralab.workshop seat", "pw_dir": "/home/seats/user01", "pw_shell": "/bin/bash"}
    values.update(fields)
    return pwd.struct_passwd(tuple(values[name] for name in ("pw_name", "pw_passwd", "pw_uid", "pw_gid", "pw_gecos",
                                                             "pw_dir", "pw_shell")))


def test_an_account_as_wanted_needs_no_usermod():
    assert accounts.usermod_args(WANTED, entry(), 1001, {"workshop-seats"}) == ([], [])


def test_what_a_seat_changed_with_chfn_and_chsh_and_an_old_primary_group_are_put_back():
    args, words = accounts.usermod_args(WANTED, entry(pw_gecos="hacker,,,", pw_shell="/bin/zsh", pw_gid=999), 1001,
                                        {"workshop-seats", "sudo"})
    assert args == ["-c", "dralab.workshop seat", "-s", "/bin/bash", "-g", "user01", "-G", "workshop-seats"]
    assert words == ["comment", "shell", "primary group", "groups"]
    # A group check mode has not made yet (None) differs from any ID.
    assert accounts.usermod_args(WANTED, entry(), None, {"workshop-seats"}) == (["-g", "user01"], ["primary group"])


def test_the_shadow_file_is_read_as_name_and_password_field(tmp_path):
    shadow = tmp_path / "shadow"
    shadow.write_text("root:*:19000:0:99999:7:::\nuser01:!$6$salt$hash:19000::::::\n\nbroken\n")
    assert accounts.read_shadow(str(shadow)) == {"root": "*", "user01": "!$6$salt$hash"}


def test_the_drop_ins_are_written_once_and_the_user_manager_one_goes_when_empty(tmp_path):
    assert dropins.converge(str(tmp_path), 1001, "[Slice]\nTasksMax=256\n", "[Unit]\n", False) == [
        "user-1001.slice.d", "user@1001.service.d"]
    slice_file = tmp_path / "user-1001.slice.d" / dropins.DROPIN
    assert slice_file.read_text() == "[Slice]\nTasksMax=256\n"
    assert stat.S_IMODE(os.stat(slice_file).st_mode) == 0o644
    assert stat.S_IMODE(os.stat(slice_file.parent).st_mode) == 0o755
    assert dropins.converge(str(tmp_path), 1001, "[Slice]\nTasksMax=256\n", "[Unit]\n", False) == []
    assert dropins.converge(str(tmp_path), 1001, "[Slice]\nTasksMax=256\n", "", True) == ["user@1001.service.d removed"]
    assert (tmp_path / "user@1001.service.d").is_dir()
    assert dropins.converge(str(tmp_path), 1001, "[Slice]\nTasksMax=128\n", "", False) == [
        "user-1001.slice.d", "user@1001.service.d removed"]
    assert sorted(os.listdir(tmp_path)) == ["user-1001.slice.d"]
    slice_file.chmod(0o666)
    assert dropins.converge(str(tmp_path), 1001, "[Slice]\nTasksMax=128\n", "", False) == ["user-1001.slice.d"]
    assert stat.S_IMODE(os.stat(slice_file).st_mode) == 0o644
