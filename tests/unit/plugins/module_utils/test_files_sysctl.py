# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel settings on a host below tmp_path (files/sysctl.py `converge`): the drop-in as ansible.posix.sysctl writes it
for the same settings one after the other (checked against that module's own code when it is installed), the running
values in a fake /proc/sys, `sysctl -p` only when the drop-in changed."""

from __future__ import annotations

import importlib
import os
import shlex
import stat

import pytest
from fake_host import Commands, mode_owner, snapshot

from ansible_collections.dralab.workshop.plugins.module_utils.files import sysctl

SETTINGS = {"kernel.yama.ptrace_scope": 1, "kernel.unprivileged_userns_clone": 0}


@pytest.fixture
def host(tmp_path):
    """A host below tmp_path: an empty sysctl.d, and a kernel with Yama and IPv4 forwarding only."""
    return make_host(tmp_path)


def make_host(root):
    (root / "proc" / "sys" / "kernel" / "yama").mkdir(parents=True)
    (root / "proc" / "sys" / "kernel" / "yama" / "ptrace_scope").write_text("0\n")
    (root / "proc" / "sys" / "net" / "ipv4").mkdir(parents=True)
    (root / "proc" / "sys" / "net" / "ipv4" / "ip_forward").write_text("0\n")
    (root / "proc" / "sys" / "net" / "ipv4" / "tcp_rmem").write_text("4096\t131072\t6291456\n")
    (root / "etc" / "sysctl.d").mkdir(parents=True)
    return root


def drop_in(root):
    return root / "etc" / "sysctl.d" / "60-dralab.conf"


def running(root, key):
    return (root / "proc" / "sys" / key.replace(".", "/")).read_text()


def converge(root, settings=None, check_mode=False, commands=None):
    return sysctl.converge(dict(SETTINGS) if settings is None else settings, str(drop_in(root)), check_mode,
                           commands or Commands(), proc_sys=str(root / "proc" / "sys"))


def test_a_cold_host_gets_the_settings_it_has_and_a_rerun_changes_nothing(host):
    commands = Commands()
    changes, missing, reloaded = converge(host, commands=commands)
    assert changes == ["kernel.yama.ptrace_scope=1"] and missing == ["kernel.unprivileged_userns_clone"] and reloaded
    # sysctl.py writes key=value, no spaces; the kernel has no unprivileged_userns_clone: not in the file.
    assert drop_in(host).read_text() == "kernel.yama.ptrace_scope=1\n"
    assert running(host, "kernel.yama.ptrace_scope") == "1\n"
    assert commands.calls == [["sysctl", "-p", str(drop_in(host))]]
    before = snapshot(host)
    commands = Commands()
    assert converge(host, commands=commands) == ([], ["kernel.unprivileged_userns_clone"], False)
    assert commands.calls == [] and snapshot(host) == before


def test_check_mode_writes_nothing_runs_nothing_and_says_what_would_change(host):
    before = snapshot(host)
    commands = Commands()
    assert converge(host, check_mode=True, commands=commands) == (
        ["kernel.yama.ptrace_scope=1"], ["kernel.unprivileged_userns_clone"], False)
    assert commands.calls == [] and snapshot(host) == before


def test_a_setting_this_kernel_lacks_is_reported_and_not_written(host):
    commands = Commands()
    assert converge(host, {"kernel.unprivileged_userns_clone": 0}, commands=commands) == (
        [], ["kernel.unprivileged_userns_clone"], False)
    assert not drop_in(host).exists() and commands.calls == []
    assert not (host / "proc" / "sys" / "kernel" / "unprivileged_userns_clone").exists()


def test_the_settings_file_is_rendered_again_as_sysctl_does(host):
    # sysctl.py reads the last line of a key, keeps the first (rewritten), drops the others, strips every line.
    drop_in(host).write_text("  # seats\n\nvm.swappiness = 10\nkernel.yama.ptrace_scope = 0\n"
                             "kernel.yama.ptrace_scope=2\n; old\nnoequals \n")
    os.chmod(drop_in(host), 0o600)
    assert converge(host, {"kernel.yama.ptrace_scope": True})[2]
    assert drop_in(host).read_text() == "# seats\n\nvm.swappiness=10\nkernel.yama.ptrace_scope=1\n; old\nnoequals\n"
    assert mode_owner(drop_in(host)) == (0o600, 0, 0)
    # A file whose last line of the key holds the value is not rewritten, however it is written.
    drop_in(host).write_text("kernel.yama.ptrace_scope = 0\nkernel.yama.ptrace_scope =  1 \n")
    assert converge(host, {"kernel.yama.ptrace_scope": "yes"})[0] == []


def test_a_running_value_that_differs_is_set_without_a_reload(host):
    drop_in(host).write_text("kernel.yama.ptrace_scope=1\n")
    commands = Commands()
    assert converge(host, commands=commands)[0::2] == (["kernel.yama.ptrace_scope=1"], False)
    assert commands.calls == [] and running(host, "kernel.yama.ptrace_scope") == "1\n"
    assert sysctl.same_values("4096\t16384\t4194304\n", "4096 16384 4194304")
    assert not sysctl.same_values("4096\t16384\n", "4096 16384 4194304") and not sysctl.same_values(None, "1")
    # Words as sysctl prints them count as the same value.
    assert converge(host, {"net.ipv4.tcp_rmem": " 4096 131072 6291456"})[0] == ["net.ipv4.tcp_rmem=4096 131072 6291456"]
    assert running(host, "net.ipv4.tcp_rmem") == "4096\t131072\t6291456\n"


def test_a_new_settings_file_gets_what_atomic_move_gives_and_a_failed_reload_fails(host):
    umask = os.umask(0o027)
    try:
        with pytest.raises(sysctl.SysctlError, match="^sysctl -p .* failed: bad key$") as failed:
            converge(host, commands=Commands((255, "", "bad key")))
    finally:
        os.umask(umask)
    assert failed.value.changes == ["kernel.yama.ptrace_scope=1"]
    assert mode_owner(drop_in(host)) == (0o640, 0, 0)
    answer = (0, "", 'sysctl: setting key "kernel.yama.ptrace_scope": Invalid argument\n')
    drop_in(host).unlink()
    with pytest.raises(sysctl.SysctlError, match="Invalid argument"):
        converge(host, commands=Commands(answer))


def test_a_running_value_or_a_file_that_cannot_be_written_fails_with_the_changes(host):
    (host / "proc" / "sys" / "kernel" / "yama" / "ptrace_scope").unlink()
    (host / "proc" / "sys" / "kernel" / "yama" / "ptrace_scope").mkdir()
    with pytest.raises(sysctl.SysctlError, match="^settings: setting kernel.yama.ptrace_scope to 1 failed: ") as failed:
        converge(host)
    assert failed.value.changes == ["kernel.yama.ptrace_scope=1"] and not drop_in(host).exists()
    with pytest.raises(sysctl.SysctlError, match="^kernel_settings: setting "):
        sysctl.converge(SETTINGS, str(drop_in(host)), False, Commands(), str(host / "proc" / "sys"),
                        option="kernel_settings")
    with pytest.raises(sysctl.SysctlError, match="No such file or directory") as failed:
        sysctl.converge({"net.ipv4.ip_forward": 1}, str(host / "etc" / "nowhere" / "x.conf"), False, Commands(),
                        str(host / "proc" / "sys"))
    assert failed.value.changes == ["net.ipv4.ip_forward=1"]


NOT_A_NAME = "settings: %s is not a kernel setting name (dotted, such as kernel.yama.ptrace_scope)"


@pytest.mark.parametrize("settings, problems", [
    ({"kernel/../../x": 1}, [NOT_A_NAME % "'kernel/../../x'"]),
    ({"kernel..x": 1, ".x": 1, "kernel.yama.ptrace_scope": 1}, [NOT_A_NAME % "'kernel..x'", NOT_A_NAME % "'.x'"]),
    ({"kernel.yama.ptrace_scope": ""}, ["settings: kernel.yama.ptrace_scope has no value"]),
    ({"kernel.yama.ptrace_scope": None}, ["settings: kernel.yama.ptrace_scope has no value"]),
    ({"kernel.yama.ptrace_scope": "1\n2"}, ["settings: the value of kernel.yama.ptrace_scope holds a line break"]),
    ({"kernel.yama.ptrace_scope": 1, "net.ipv4.tcp_rmem": "4096 131072 6291456", "vm.x_y-z": False}, []),
])
def test_setting_problems_name_the_option(settings, problems):
    assert sysctl.setting_problems(settings) == problems
    assert sysctl.setting_problems(settings, "kernel_settings") == [
        problem.replace("settings: ", "kernel_settings: ", 1) for problem in problems]


@pytest.mark.parametrize("value, written", [
    (True, "1"), (False, "0"), (1, "1"), (0, "0"), ("yes", "1"), ("Off", "0"), ("10", "10"),
    (" 4096 16384 ", "4096 16384"),
])
def test_values_are_written_as_sysctl_writes_them(value, written):
    assert sysctl.sysctl_value(value) == written


@pytest.fixture
def posix_sysctl():
    """ansible.posix.sysctl's own code (the `ansible` package of requirements-dev.txt holds it)."""
    return importlib.import_module("ansible_collections.ansible.posix.plugins.modules.sysctl")


class PosixModule:
    """What ansible.posix.sysctl asks of AnsibleModule, on the fake /proc/sys below root: sysctl -e -n, -w and -p,
    and atomic_move (an existing file keeps its mode, a new one gets 0666 less the umask)."""

    def __init__(self, root, name, value):
        self.proc_sys = str(root / "proc" / "sys")
        self.params = {"name": name, "value": str(value), "state": "present", "reload": True, "sysctl_set": True,
                       "ignoreerrors": False, "sysctl_file": str(drop_in(root))}
        self.check_mode = False

    def get_bin_path(self, name, required=False):
        return name

    def run_command(self, command, environ_update=None):
        argv = shlex.split(command) if isinstance(command, str) else command
        if argv[1:3] == ["-e", "-n"]:
            value = sysctl.running_value(self.proc_sys, argv[3])
            return (1, "", "unknown key") if value is None else (0, value, "")
        if argv[1] == "-w":
            key, value = argv[2].split("=", 1)
            with open(sysctl.proc_file(self.proc_sys, key), "w", encoding="utf-8") as handle:
                handle.write(value + "\n")
            return 0, "", ""
        assert argv[1:] == ["-p", self.params["sysctl_file"]]
        return 0, "", ""

    def atomic_move(self, source, dest):
        if os.path.exists(dest):
            os.chmod(source, stat.S_IMODE(os.stat(dest).st_mode))
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(source, 0o666 & ~umask)
        os.replace(source, dest)

    def fail_json(self, **result):
        raise AssertionError(result)


def old_tasks(posix_sysctl, root, settings):
    """The old tasks of role prereqs on root: ansible.posix.sysctl (sysctl_set, reload) for each setting this kernel
    has, one after the other; whether any changed."""
    changed = False
    for key, value in settings.items():
        if os.path.exists(sysctl.proc_file(str(root / "proc" / "sys"), key)):
            changed |= posix_sysctl.SysctlModule(PosixModule(root, key, value)).changed
    return changed


@pytest.mark.parametrize("start", [
    None,
    "",
    "net.ipv4.ip_forward = 1\n",
    "# kept\n  kernel.yama.ptrace_scope = 2  \n\n; old\nnet.ipv4.ip_forward=0\nkernel.yama.ptrace_scope=3\nnoequals\n",
    "vm.swappiness=10",
])
def test_the_old_tasks_and_converge_write_the_same_and_a_host_they_converged_has_nothing_to_change(
        posix_sysctl, tmp_path, start):
    settings = {"net.ipv4.ip_forward": 1, "kernel.yama.ptrace_scope": "yes", "net.bridge.bridge-nf-call-iptables": 1,
                "net.ipv4.tcp_rmem": "4096 87380  6291456"}
    posix, ours = make_host(tmp_path / "posix"), make_host(tmp_path / "ours")
    if start is not None:
        drop_in(posix).write_text(start)
        drop_in(ours).write_text(start)
    assert old_tasks(posix_sysctl, posix, settings)
    assert converge(ours, settings)[1] == ["net.bridge.bridge-nf-call-iptables"]
    assert drop_in(ours).read_bytes() == drop_in(posix).read_bytes()
    assert mode_owner(drop_in(ours)) == mode_owner(drop_in(posix))
    for key in ("net.ipv4.ip_forward", "kernel.yama.ptrace_scope", "net.ipv4.tcp_rmem"):
        assert running(ours, key) == running(posix, key)
    # The old tasks' host, converged again: no change, nothing written, no command.
    before = snapshot(posix)
    commands = Commands()
    assert converge(posix, settings, commands=commands) == ([], ["net.bridge.bridge-nf-call-iptables"], False)
    assert commands.calls == [] and snapshot(posix) == before
    assert not old_tasks(posix_sysctl, ours, settings)
