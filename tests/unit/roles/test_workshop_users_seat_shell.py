# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seats' login shell (workshop_users, dralab-seat-shell): run for real on this machine's kernel, its seccomp
filter refuses the btrfs requests that make a subvolume or a snapshot (EPERM, where an unfiltered process gets
ENOTTY from a file system that is not btrfs), user namespaces (EPERM), clone3 (ENOSYS: threads and
child processes still start, through clone), and nothing else, is inherited by every child, and the real shell
then runs with the same arguments. The seats get it as their login shell, and no user manager."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest
import yaml

from render import REPO, render_role_template


def test_this_machine_is_one_the_filter_is_for():
    """The tests below run the filter for real: on another machine they fail, they are never skipped (the lab's login
    hosts, and the machines make test runs on, are Linux on x86_64 or aarch64)."""
    assert sys.platform == "linux" and platform.machine() in ("x86_64", "aarch64"), (
        f"the seats' seccomp filter is for Linux on x86_64 and aarch64, not {sys.platform} on {platform.machine()}")


# Each requested ioctl on a folder: the errno name it ends with (or "ok").
PROBE = r"""
import errno, fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
for request in (0x50009401, 0x5000940E, 0x50009417, 0x50009418, 0x80086601, 0x5401):
    try:
        fcntl.ioctl(fd, request, bytearray(4096))
        print(hex(request), "ok")
    except OSError as exc:
        print(hex(request), errno.errorcode[exc.errno])
with open("/proc/self/status") as status:
    print(" ".join(line.split()[1] for line in status if line.startswith(("NoNewPrivs:", "Seccomp:"))))
"""
REFUSED = ["0x50009401", "0x5000940e", "0x50009417", "0x50009418"]
# What a seat's program would do with user namespaces, each "ok" or the errno's name; then whether a thread and a
# child process still start.
NAMESPACES_AND_TRACING = r"""
import ctypes, errno, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)

def call(function, *args):
    return "ok" if function(*args) != -1 else errno.errorcode[ctypes.get_errno()]
pid = os.fork()
if pid == 0:  # the namespace calls in a child, so that the probe itself stays where it is
    results = [call(libc.unshare, 0x10000000), call(libc.unshare, 0x10000000 | 0x04000000)]
    results.append("ok" if os.system("unshare -U -r true 2>/dev/null") == 0 else "refused")
    print("userns", *results, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
thread = threading.Thread(target=lambda: None)
thread.start()
thread.join()
print("spawn", subprocess.run(["sh", "-c", "echo started"], capture_output=True, text=True, check=True).stdout.strip())
"""


@pytest.fixture(scope="module")
def seat_shell(tmp_path_factory):
    path = tmp_path_factory.mktemp("shell") / "dralab-seat-shell"
    path.write_text(render_role_template("workshop_users", "dralab-seat-shell.j2",
                                         {"workshop_users_shell": "/bin/sh"}))
    path.chmod(0o755)
    return path


def probe(command: list, folder) -> dict:
    proc = subprocess.run(command + [str(folder)], input=None, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    return dict(line.split() for line in lines if line.startswith("0x")), lines[-2]


def test_the_filter_refuses_only_the_subvolume_and_snapshot_requests_and_children_inherit_it(seat_shell, tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    plain, plain_status = probe([sys.executable, str(script)], tmp_path)
    # Through the seat's shell (/bin/sh -c here), a grandchild: python started by the shell.
    filtered, status = probe([str(seat_shell), "-c", f'exec "$0" {script} "$1"', sys.executable], tmp_path)
    assert plain_status.split()[0] == "0"
    assert status == "1 2", "no_new_privs and a seccomp filter"
    for request in REFUSED:
        assert plain[request] != "EPERM", (request, plain[request])
        assert filtered[request] == "EPERM", (request, filtered[request])
    # Every other request gets what it gets without the filter.
    for request in ("0x80086601", "0x5401"):
        assert filtered[request] == plain[request]


def test_the_filter_refuses_user_namespaces_and_programs_still_start_threads_and_children(seat_shell, tmp_path):
    script = tmp_path / "namespaces.py"
    script.write_text(NAMESPACES_AND_TRACING)

    def lines(command):
        proc = subprocess.run(command + [str(script)], capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr
        return dict((line.split()[0], line.split()[1:]) for line in proc.stdout.splitlines())

    plain = lines([sys.executable])
    filtered = lines([str(seat_shell), "-c", 'exec "$0" "$1"', sys.executable])
    # Without the filter the kernel makes a user namespace, unless this machine's kernel forbids them already: then
    # the test says nothing about the filter.
    assert plain["userns"][0] == "ok", f"this kernel refuses unprivileged user namespaces already: {plain}"
    assert filtered["userns"] == ["EPERM", "EPERM", "refused"], filtered
    assert filtered["spawn"] == plain["spawn"] == ["started"]


def test_the_real_shell_runs_with_the_same_arguments_and_as_a_login_shell(seat_shell):
    proc = subprocess.run([str(seat_shell), "-c", 'echo "$0|$1"', "zero", "one"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (proc.returncode, proc.stdout) == (0, "zero|one\n"), proc.stderr
    # sshd starts a login shell as "-dralab-seat-shell": the real one then sees itself as a login shell ("-sh").
    login = subprocess.run(["-dralab-seat-shell"], executable=str(seat_shell), input='echo "$0"\n',
                           capture_output=True, text=True, timeout=60, check=False)
    assert login.stdout == "-sh\n", login.stderr


def test_the_seats_get_the_shell_and_no_user_manager():
    tasks = REPO / "roles" / "workshop_users" / "tasks"
    defaults = yaml.safe_load((REPO / "roles" / "workshop_users" / "defaults" / "main.yml").read_text())
    assert defaults["workshop_users_seat_shell_filter"] is True
    linux = yaml.safe_load((tasks / "linux.yml").read_text())[0]["block"]
    converge = next(task for task in linux if "dralab.workshop.seat_accounts" in task)
    accounts = converge["dralab.workshop.seat_accounts"]
    assert "workshop_users_seat_login_shell if workshop_users_seat_shell_filter" in accounts["shell"]
    rules = next(task for task in linux if "dralab.workshop.seat_login_host" in task)
    assert "workshop_users_seat_login_shell" in rules["dralab.workshop.seat_login_host"]["login_shell"]
    assert "lookup('ansible.builtin.template', 'dralab-seat-shell.j2')" in rules["dralab.workshop.seat_login_host"]["login_shell"]
    assert linux.index(rules) < linux.index(converge)
    assert "seat-user-manager.conf.j2" in accounts["user_manager_dropin"]
    assert "if workshop_users_seat_shell_filter | bool" in accounts["user_manager_dropin"]
    manager = (REPO / "roles" / "workshop_users" / "templates" / "seat-user-manager.conf.j2").read_text()
    assert "ConditionPathExists=/run/dralab-seats-have-no-user-manager" in manager.splitlines()


def test_kernel_settings_are_set_where_the_kernel_has_them_and_the_lab_leaves_its_shared_kernel_alone():
    linux = yaml.safe_load((REPO / "roles" / "workshop_users" / "tasks" / "linux.yml").read_text())[0]["block"]
    rules = next(task for task in linux if "dralab.workshop.seat_login_host" in task)
    assert rules["dralab.workshop.seat_login_host"]["kernel_settings"] == "{{ workshop_users_kernel_settings }}"
    assert rules["dralab.workshop.seat_login_host"]["kernel_settings_file"] == "{{ workshop_users_kernel_settings_file }}"
    report = linux[linux.index(rules) + 1]
    assert report["when"] == "workshop_users_host_rules.kernel_settings_missing | default([]) | length > 0"
    defaults = yaml.safe_load((REPO / "roles" / "workshop_users" / "defaults" / "main.yml").read_text())
    assert defaults["workshop_users_kernel_settings"] == {
        "kernel.yama.ptrace_scope": 1, "kernel.unprivileged_userns_clone": 0,
        "kernel.apparmor_restrict_unprivileged_userns": 1}
    lab = yaml.safe_load((REPO / "inventories" / "local" / "group_vars" / "all.yml").read_text())
    assert lab["workshop_users_kernel_settings"] == {}
