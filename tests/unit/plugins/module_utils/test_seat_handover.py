# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seat_handover's pass on recorded host state: what a leaving seat left is found and removed, nothing of anyone
else is (the real accounts, sessions and processes are handed over on the lab: tests/lab/test_seat_host.py)."""

from __future__ import annotations

import os
import pwd

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.seat import handover

LEAVER, STAYER = 64101, 64102  # user IDs no account of the test machine has


def account(name, uid):
    return pwd.struct_passwd((name, "x", uid, uid, "dralab.workshop seat", "/home/" + name, "/bin/bash"))


def owned(path, uid, content=b"x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    os.chown(path, uid, uid)
    return path


def test_only_the_leaving_seats_entries_go_and_links_are_not_followed(tmp_path):
    shared, elsewhere = tmp_path / "tmp", tmp_path / "elsewhere"
    owned(shared / "leaver-file", LEAVER)
    owned(shared / "stayer-file", STAYER)
    leaver_dir = shared / "leaver-dir"
    owned(leaver_dir / "inner", LEAVER)
    os.chown(leaver_dir, LEAVER, LEAVER)
    mixed = shared / "leaver-dir-with-another-file"
    owned(mixed / "stayer-inside", STAYER)
    os.chown(mixed, LEAVER, LEAVER)
    # Another seat's link into a folder holding a file of the leaver: never entered.
    owned(elsewhere / "leaver-outside", LEAVER)
    (shared / "link").symlink_to(elsewhere)
    os.lchown(shared / "link", STAYER, STAYER)
    found = handover.remove_owned(str(shared), {LEAVER}, dry_run=True)
    assert sorted(os.path.relpath(path, shared) for path, _uid in found) == [
        "leaver-dir", "leaver-dir-with-another-file", "leaver-dir/inner", "leaver-file"]
    assert (shared / "leaver-file").exists(), "a dry run removed a file"
    removed = handover.remove_owned(str(shared), {LEAVER})
    assert sorted(os.path.relpath(path, shared) for path, _uid in removed) == [
        "leaver-dir", "leaver-dir/inner", "leaver-file"]
    assert sorted(os.listdir(shared)) == ["leaver-dir-with-another-file", "link", "stayer-file"]
    assert (mixed / "stayer-inside").exists() and (elsewhere / "leaver-outside").exists()
    assert handover.remove_owned(str(tmp_path / "missing"), {LEAVER}) == []


def test_a_link_owned_by_the_leaver_is_removed_itself_not_its_target(tmp_path):
    target = owned(tmp_path / "target", STAYER)
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "link").symlink_to(target)
    os.lchown(tmp_path / "tmp" / "link", LEAVER, LEAVER)
    assert [path for path, _uid in handover.remove_owned(str(tmp_path / "tmp"), {LEAVER})] == [
        str(tmp_path / "tmp" / "link")]
    assert target.read_bytes() == b"x"


def test_at_jobs_are_read_by_their_user_column():
    atq = ("12\tThu Dec  3 14:00:00 2026 a user01\n13\tThu Dec  3 15:00:00 2026 a user010\n"
           "14\tThu Dec  3 16:00:00 2026 = user02\n\n")
    assert handover.at_jobs_of(atq, {"user01", "user02"}) == [("12", "user01"), ("14", "user02")]


def test_process_owners_are_the_real_and_effective_ids(tmp_path):
    for pid, uids in (("41", "64101\t64101\t64101\t64101"), ("42", "0\t64101\t0\t0"), ("43", "0\t0\t0\t0")):
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "status").write_text(f"Name:\tsleep\nUid:\t{uids}\nGid:\t0\t0\t0\t0\n")
    (tmp_path / "self").mkdir()
    (tmp_path / "44").mkdir()  # gone before its status was read
    assert handover.process_owners(str(tmp_path)) == {41: {64101}, 42: {0, 64101}, 43: {0}}


class Host:
    """Commands as a login host would answer them, recorded."""

    def __init__(self, atq="", users=""):
        self.answers = {"atq": atq, "loginctl": users}
        self.commands = []

    def run(self, argv, data=None):
        self.commands.append((argv, data))
        return 0, self.answers.get(argv[0], ""), ""


@pytest.fixture
def host_state(tmp_path, monkeypatch):
    paths = {name: tmp_path / name for name in ("home", "spool", "linger", "tmp", "systemd", "proc")}
    for path in paths.values():
        path.mkdir()
    (tmp_path / "shadow").write_text("user01:$6$a$b:19000::::::\nuser02:!$6$c$d:19000::::::\n")
    owned(paths["home"] / "user01" / "notes", LEAVER)
    owned(paths["spool"] / "user01", LEAVER)
    owned(paths["linger"] / "user01", 0)
    owned(paths["tmp"] / "user01-leftover", LEAVER)
    owned(paths["tmp"] / "user03-file", STAYER)
    (paths["systemd"] / "user-64101.slice.d").mkdir()
    accounts = {"user01": account("user01", LEAVER), "user02": account("user02", 64103)}
    monkeypatch.setattr(handover, "seat_accounts", lambda seats, group: {s: accounts[s] for s in seats if s in accounts})
    monkeypatch.setattr(handover.shutil, "which", lambda name: "/usr/bin/" + name)
    params = {"seats": ["user01", "user02", "user09"], "group": "workshop-seats", "home_base": str(paths["home"]),
              "cron_spool_dirs": [str(paths["spool"])], "tmp_dirs": [str(paths["tmp"]), str(tmp_path / "gone")],
              "remove": False, "shadow_file": str(tmp_path / "shadow"), "systemd_dir": str(paths["systemd"]),
              "linger_dir": str(paths["linger"]), "proc": str(paths["proc"])}
    return params, paths


def test_check_mode_reports_everything_and_changes_nothing(host_state):
    params, paths = host_state
    host = Host(atq="7\tThu Dec  3 14:00:00 2026 a user01\n", users="64101 user01\n")
    work = handover.Handover(host.run, params, check_mode=True)
    assert work.converge() == ["user01", "user02"]
    # user02 is locked already and left nothing: not reported.
    assert work.changes == {"user01": ["password locked", f"{paths['spool']}/user01 removed",
                                       f"{paths['linger']}/user01 removed", "at job 7 removed", "sessions ended",
                                       "1 entries of the shared temporary folders removed", "home removed"]}
    assert [argv[0] for argv, _data in host.commands] == ["atq", "loginctl"]
    assert (paths["home"] / "user01" / "notes").exists() and (paths["spool"] / "user01").exists()


def test_the_handover_removes_what_the_seat_left_and_kills_its_processes(host_state, monkeypatch):
    params, paths = host_state
    (paths["proc"] / "500").mkdir()
    (paths["proc"] / "500" / "status").write_text(f"Uid:\t{LEAVER}\t{LEAVER}\t{LEAVER}\t{LEAVER}\n")
    killed = []

    def kill(pid, signum):
        killed.append((pid, signum))
        (paths["proc"] / str(pid) / "status").unlink()
        (paths["proc"] / str(pid)).rmdir()

    monkeypatch.setattr(handover.os, "kill", kill)
    host = Host(atq="7\tThu Dec  3 14:00:00 2026 a user01\n8\tThu Dec  3 14:00:00 2026 a user03\n",
                users="64101 user01\n1000 debian\n")
    work = handover.Handover(host.run, params, check_mode=False, sleep=lambda seconds: None)
    assert work.converge() == ["user01", "user02"]
    assert work.changes["user01"] == [
        "password locked", f"{paths['spool']}/user01 removed", f"{paths['linger']}/user01 removed", "at job 7 removed",
        "sessions ended", "processes killed", "1 entries of the shared temporary folders removed", "home removed"]
    assert "user02" not in work.changes
    assert killed == [(500, handover.signal.SIGKILL)]
    assert (["chpasswd", "-e"], "user01:!$6$a$b\n") in host.commands
    assert (["atrm", "7"], None) in host.commands and (["loginctl", "terminate-user", "64101"], None) in host.commands
    assert not (paths["home"] / "user01").exists() and not (paths["spool"] / "user01").exists()
    assert sorted(os.listdir(paths["tmp"])) == ["user03-file"]
    assert (paths["systemd"] / "user-64101.slice.d").exists(), "a handover without remove took the drop-ins"


def test_remove_takes_the_drop_ins_account_and_group(host_state):
    params, paths = host_state
    host = Host()
    work = handover.Handover(host.run, dict(params, seats=["user01"], remove=True), check_mode=False)
    work.converge()
    assert work.changes["user01"][-2:] == ["user-64101.slice.d removed", "account removed"]
    assert not (paths["systemd"] / "user-64101.slice.d").exists()
    assert (["userdel", "user01"], None) in host.commands


def test_processes_that_do_not_die_fail_the_handover_by_name(host_state, monkeypatch):
    params, paths = host_state
    (paths["proc"] / "600").mkdir()
    (paths["proc"] / "600" / "status").write_text(f"Uid:\t{LEAVER}\t{LEAVER}\t{LEAVER}\t{LEAVER}\n")
    monkeypatch.setattr(handover.os, "kill", lambda pid, signum: None)  # a process that outlives every SIGKILL
    work = handover.Handover(Host().run, params, check_mode=False, sleep=lambda seconds: None)
    with pytest.raises(handover.accounts.AccountError, match=r"processes of user01 still run .* \(PIDs 600\)"):
        work.end_processes({"user01": account("user01", LEAVER)})
