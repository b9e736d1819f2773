# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seat_login_host's pass on a login host's files below tmp_path: each file as ansible.builtin.blockinfile,
ansible.builtin.lineinfile and ansible.posix.sysctl write it for the same input (the expected texts follow those
modules' code), so a host the old tasks of workshop_users converged has nothing to change. The kernel settings on
their own (files/sysctl.py): test_files_sysctl.py; here only how the pass uses them."""

from __future__ import annotations

import grp
import os

import pytest
from fake_host import Commands, mode_owner, snapshot

from ansible_collections.dralab.workshop.plugins.module_utils.seat import login_host

BEGIN, END = "# BEGIN dralab.workshop seats\n", "# END dralab.workshop seats\n"
CRON_DENY = BEGIN + "user01\nuser02\n" + END
REFUSAL = "auth requisite pam_succeed_if.so quiet user notingroup workshop-seats\n"
# Debian's /etc/pam.d/chfn (package login).
CHFN = ("#\n# The PAM configuration file for the Shadow `chfn' service\n#\n\n"
        "# This allows root to change user infomation without being\n# prompted for a password\n"
        "auth\t\tsufficient\tpam_rootok.so\n\n"
        "# The standard Unix authentication modules, used with\n"
        "# NIS (man nsswitch) as well as normal /etc/passwd and\n# /etc/shadow entries.\n"
        "@include common-auth\n@include common-account\n@include common-session\n")
CHFN_REFUSING = CHFN.replace("pam_rootok.so\n", "pam_rootok.so\n" + REFUSAL)
COMMON_SESSION = "session\trequired\tpam_unix.so\nsession\toptional\tpam_systemd.so\n"
SHELL = "#!/usr/bin/python3 -I\nprint('the seats shell')\n"
SETTINGS = {"kernel.yama.ptrace_scope": 1, "kernel.unprivileged_userns_clone": 0}


@pytest.fixture
def host(tmp_path):
    """A login host below tmp_path: PAM services with pam_systemd, chfn and chsh, and a kernel with Yama only."""
    pam_dir = tmp_path / "pam.d"
    pam_dir.mkdir()
    (pam_dir / "common-session").write_text(COMMON_SESSION)
    (pam_dir / "chfn").write_text(CHFN)
    (pam_dir / "chsh").write_text(CHFN.replace("chfn", "chsh"))
    yama = tmp_path / "proc" / "sys" / "kernel" / "yama"
    yama.mkdir(parents=True)
    (yama / "ptrace_scope").write_text("0\n")
    (tmp_path / "etc").mkdir()
    return tmp_path


def params(root, **changed):
    values = {"group": "workshop-seats", "seats": ["user01", "user02"],
              "login_shell": {"path": str(root / "sbin" / "dralab-seat-shell"), "content": SHELL},
              "deny_jobs": True,
              "job_deny_files": [{"path": str(root / "etc" / "cron.deny"), "group": "root", "mode": "0644"},
                                 {"path": str(root / "etc" / "at.deny"), "group": "daemon", "mode": "0640"}],
              "pam_refused_programs": ["chfn", "chsh", "chage"],
              "kernel_settings": dict(SETTINGS),
              "kernel_settings_file": str(root / "etc" / "sysctl.d" / "60-dralab-seats.conf"),
              "require_pam_systemd": True}
    values.update(changed)
    return values


def converge(root, check_mode=False, commands=None, **changed):
    (root / "sbin").mkdir(exist_ok=True)
    (root / "etc" / "sysctl.d").mkdir(parents=True, exist_ok=True)
    host = login_host.LoginHost(params(root, **changed), check_mode, commands or Commands(),
                                pam_dir=str(root / "pam.d"), proc_sys=str(root / "proc" / "sys"))
    host.converge()
    return host


def test_a_cold_host_gets_everything_and_a_rerun_changes_nothing(host):
    commands = Commands()
    done = converge(host, commands=commands)
    sysctl_file = str(host / "etc" / "sysctl.d" / "60-dralab-seats.conf")
    assert done.changes == ["%s/sbin/dralab-seat-shell written" % host, "%s/etc/cron.deny seats block" % host,
                            "%s/etc/at.deny seats block" % host, "%s/pam.d/chfn refuses the seats" % host,
                            "%s/pam.d/chsh refuses the seats" % host, "kernel.yama.ptrace_scope=1"]
    assert (host / "sbin" / "dralab-seat-shell").read_text() == SHELL
    assert mode_owner(host / "sbin" / "dralab-seat-shell") == (0o755, 0, 0)
    assert (host / "etc" / "cron.deny").read_text() == CRON_DENY
    assert mode_owner(host / "etc" / "cron.deny") == (0o644, 0, 0)
    assert (host / "etc" / "at.deny").read_text() == CRON_DENY
    assert mode_owner(host / "etc" / "at.deny") == (0o640, 0, grp.getgrnam("daemon").gr_gid)
    assert (host / "pam.d" / "chfn").read_text() == CHFN_REFUSING
    assert not (host / "pam.d" / "chage").exists()
    # sysctl.py writes key=value, no spaces; the kernel has no unprivileged_userns_clone: not in the file.
    assert open(sysctl_file).read() == "kernel.yama.ptrace_scope=1\n"
    assert (host / "proc" / "sys" / "kernel" / "yama" / "ptrace_scope").read_text() == "1\n"
    assert done.kernel_settings_missing == ["kernel.unprivileged_userns_clone"]
    assert done.sysctl_reloaded and commands.calls == [["sysctl", "-p", sysctl_file]]
    before = snapshot(host)
    commands = Commands()
    again = converge(host, commands=commands)
    assert again.changes == [] and not again.sysctl_reloaded and commands.calls == []
    assert snapshot(host) == before


def test_check_mode_writes_nothing_runs_nothing_and_says_what_would_change(host):
    before = snapshot(host)
    commands = Commands()
    done = converge(host, check_mode=True, commands=commands)
    assert len(done.changes) == 6 and done.changes[-1] == "kernel.yama.ptrace_scope=1"
    assert done.kernel_settings_missing == ["kernel.unprivileged_userns_clone"]
    assert not done.sysctl_reloaded and commands.calls == []
    assert snapshot(host) == before


def test_a_host_the_old_tasks_converged_has_nothing_to_change(host):
    etc = host / "etc"
    (etc / "sysctl.d").mkdir()
    (host / "sbin").mkdir()
    (host / "sbin" / "dralab-seat-shell").write_text(SHELL)
    os.chmod(host / "sbin" / "dralab-seat-shell", 0o755)
    (etc / "cron.deny").write_text(CRON_DENY)
    os.chmod(etc / "cron.deny", 0o644)
    (etc / "at.deny").write_text(CRON_DENY)
    os.chown(etc / "at.deny", 0, grp.getgrnam("daemon").gr_gid)
    os.chmod(etc / "at.deny", 0o640)
    (host / "pam.d" / "chfn").write_text(CHFN_REFUSING)
    (host / "pam.d" / "chsh").write_text(CHFN_REFUSING.replace("chfn", "chsh"))
    (etc / "sysctl.d" / "60-dralab-seats.conf").write_text("kernel.yama.ptrace_scope=1\n")
    (host / "proc" / "sys" / "kernel" / "yama" / "ptrace_scope").write_text("1\n")
    before = snapshot(host)
    assert converge(host).changes == []
    assert snapshot(host) == before


def test_the_block_goes_at_the_end_with_a_line_break_before_it_and_an_old_block_is_replaced_in_place(host):
    deny = host / "etc" / "cron.deny"
    deny.write_text("guest")
    converge(host, login_shell=None)
    assert deny.read_text() == "guest\n" + CRON_DENY
    deny.write_text("guest\n" + BEGIN + "user09\n" + END + "intern\n")
    done = converge(host, login_shell=None, seats=["user01", "user02"])
    assert deny.read_text() == "guest\n" + CRON_DENY + "intern\n"
    assert done.changes[0] == "%s seats block" % deny
    # Markers in the wrong order: blockinfile replaces from the END marker to the BEGIN marker.
    deny.write_text("guest\n" + END + "user09\n" + BEGIN + "intern\n")
    converge(host, login_shell=None)
    assert deny.read_text() == "guest\n" + CRON_DENY + "intern\n"


def test_owner_group_and_mode_are_enforced_on_a_deny_file_with_the_right_block(host):
    deny = host / "etc" / "at.deny"
    deny.write_text(CRON_DENY)
    os.chmod(deny, 0o666)
    done = converge(host, login_shell=None, pam_refused_programs=[], kernel_settings={})
    assert "%s group daemon, mode 0640" % deny in done.changes
    assert mode_owner(deny) == (0o640, 0, grp.getgrnam("daemon").gr_gid)
    assert deny.read_text() == CRON_DENY


def test_without_seats_or_denial_the_block_goes_the_rest_stays_and_no_file_is_made(host):
    cron = host / "etc" / "cron.deny"
    cron.write_text("guest\n" + CRON_DENY + "intern\n")
    done = converge(host, seats=[], login_shell=None, pam_refused_programs=[], kernel_settings={})
    assert cron.read_text() == "guest\nintern\n"
    assert not (host / "etc" / "at.deny").exists()
    assert done.changes == ["%s seats block removed" % cron]
    cron.write_text("guest\n" + CRON_DENY)
    converge(host, deny_jobs=False, login_shell=None, pam_refused_programs=[], kernel_settings={})
    assert cron.read_text() == "guest\n"
    # blockinfile gives the last line its line break even when there was no block to remove.
    cron.write_text("guest")
    assert converge(host, deny_jobs=False, login_shell=None, pam_refused_programs=[], kernel_settings={}).changes \
        == ["%s final line break (as blockinfile adds one)" % cron]
    assert cron.read_text() == "guest\n"


def test_an_existing_refusal_line_is_replaced_the_first_one_as_lineinfile_with_firstmatch(host):
    chfn = host / "pam.d" / "chfn"
    old = "auth  requisite  pam_succeed_if.so quiet user notingroup old-seats\n"
    chfn.write_text("auth\tsufficient\tpam_rootok.so\n" + old + "@include common-auth\n" + old)
    os.chmod(chfn, 0o600)
    converge(host, login_shell=None, job_deny_files=[], kernel_settings={})
    assert chfn.read_text() == "auth\tsufficient\tpam_rootok.so\n" + REFUSAL + "@include common-auth\n" + old
    assert mode_owner(chfn) == (0o600, 0, 0)


def test_a_refusal_goes_at_the_end_of_a_service_without_pam_rootok(host):
    chfn = host / "pam.d" / "chfn"
    chfn.write_text("@include common-auth\n@include common-session")
    converge(host, login_shell=None, job_deny_files=[], kernel_settings={})
    assert chfn.read_text() == "@include common-auth\n@include common-session\n" + REFUSAL
    chfn.write_text("")
    converge(host, login_shell=None, job_deny_files=[], kernel_settings={})
    assert chfn.read_text() == REFUSAL


def test_a_refusal_after_a_pam_rootok_line_that_ends_the_service_gets_its_own_line(host):
    chfn = host / "pam.d" / "chfn"
    chfn.write_text("auth sufficient pam_rootok.so")
    converge(host, login_shell=None, job_deny_files=[], kernel_settings={})
    assert chfn.read_text() == "auth sufficient pam_rootok.so\n" + REFUSAL


def test_without_pam_systemd_nothing_is_changed(host):
    (host / "pam.d" / "common-session").write_text("session\trequired\tpam_unix.so\n#session optional pam_systemd.so\n"
                                                   "session optional pam_env.so # not pam_systemd.so\n")
    before = snapshot(host)
    with pytest.raises(login_host.LoginHostError) as failed:
        converge(host)
    assert str(failed.value) == login_host.NO_PAM_SYSTEMD
    assert "No PAM service on this host runs pam_systemd" in str(failed.value)
    assert snapshot(host) == before
    assert converge(host, require_pam_systemd=False, check_mode=True).changes
    # grep -r reads the files of folders below /etc/pam.d too.
    (host / "pam.d" / "extra").mkdir()
    (host / "pam.d" / "extra" / "sshd").write_text(COMMON_SESSION)
    assert login_host.runs_pam_systemd(str(host / "pam.d"))


def test_a_failed_reload_fails_the_pass_with_what_it_changed(host):
    with pytest.raises(login_host.LoginHostError, match="^sysctl -p .* failed: bad key$"):
        converge(host, commands=Commands((255, "", "bad key")))
    # Everything else is in place now: only the settings file changes again, and the pass says so when it fails.
    (host / "etc" / "sysctl.d" / "60-dralab-seats.conf").unlink()
    failing = login_host.LoginHost(params(host), False, Commands((255, "", "bad key")), pam_dir=str(host / "pam.d"),
                                   proc_sys=str(host / "proc" / "sys"))
    with pytest.raises(login_host.LoginHostError):
        failing.converge()
    assert failing.changes == ["kernel.yama.ptrace_scope=1"]
    assert not failing.sysctl_reloaded


@pytest.mark.parametrize("changed, named", [
    ({"login_shell": {"path": "sbin/dralab-seat-shell", "content": SHELL}}, "login_shell.path: 'sbin/"),
    ({"job_deny_files": [{"path": "/etc/cron.deny", "group": "root", "mode": "0648"}]}, "job_deny_files[0].mode"),
    ({"job_deny_files": [{"path": "/etc/cron.deny", "group": "root", "mode": "u=rw"}]}, "job_deny_files[0].mode"),
    ({"job_deny_files": [{"path": "etc/cron.deny", "group": "root", "mode": "0644"}]}, "job_deny_files[0].path"),
    ({"job_deny_files": [{"path": "/etc/cron.deny", "group": "no-such-group-here", "mode": 0o644}]},
     "job_deny_files[0].group: this host has no group 'no-such-group-here'"),
    ({"seats": ["user01", "user02\nroot"]}, "seats: 'user02\\nroot' is not a valid Linux user name"),
    ({"group": "seats\nroot"}, "group: "),
    ({"pam_refused_programs": ["../shadow"]}, "pam_refused_programs: '../shadow'"),
    ({"kernel_settings": {"kernel/../../x": 1}}, "kernel_settings: 'kernel/../../x' is not a kernel setting"),
    ({"kernel_settings": {"kernel.yama.ptrace_scope": ""}}, "kernel_settings: kernel.yama.ptrace_scope has no value"),
    ({"kernel_settings_file": "60-dralab-seats.conf"}, "kernel_settings_file: "),
])
def test_bad_input_fails_before_any_change_naming_the_option(host, changed, named):
    before = snapshot(host)
    with pytest.raises(login_host.LoginHostError) as failed:
        converge(host, **changed)
    assert named in str(failed.value) and str(failed.value).endswith("Nothing was changed.")
    assert snapshot(host) == before


def test_the_login_shell_is_written_again_when_it_differs_and_its_mode_fixed(host):
    shell = host / "sbin" / "dralab-seat-shell"
    converge(host, job_deny_files=[], pam_refused_programs=[], kernel_settings={})
    os.chmod(shell, 0o775)
    assert converge(host, job_deny_files=[], pam_refused_programs=[], kernel_settings={}).changes == [
        "%s mode 0755" % shell]
    assert mode_owner(shell) == (0o755, 0, 0)
    shell.write_text("#!/bin/sh\n")
    assert converge(host, job_deny_files=[], pam_refused_programs=[], kernel_settings={}).changes == [
        "%s written" % shell]
    assert shell.read_text() == SHELL
    shell.unlink()
    shell.symlink_to("/bin/sh")
    converge(host, job_deny_files=[], pam_refused_programs=[], kernel_settings={})
    assert not shell.is_symlink() and shell.read_text() == SHELL
