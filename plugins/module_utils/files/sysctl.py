# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel settings (sysctl) on a host in one pass (`converge`): each setting this kernel has (a file below /proc/sys)
as `key=value` in a sysctl.d drop-in and as the running value, the drop-in reloaded with `sysctl -p` when it changed;
a setting this kernel does not have is left out and reported. Modules kernel_settings and seat_login_host.

The drop-in is written byte for byte as ansible.posix.sysctl (sysctl_set, reload) writes it for the same settings one
after the other, so a host that module converged has nothing to change.
"""

from __future__ import annotations

import os
import re
import stat

from ansible.module_utils.parsing.convert_bool import BOOLEANS_FALSE, BOOLEANS_TRUE

from ansible_collections.dralab.workshop.plugins.module_utils.files import write
from ansible_collections.dralab.workshop.plugins.module_utils.values import show

PROC_SYS = '/proc/sys'
# sysctl exits 0 for some keys it could not set (https://bugzilla.redhat.com/show_bug.cgi?id=1264080); these are
# the messages ansible.posix.sysctl takes for a failure.
SYSCTL_FAILED = re.compile(r'^sysctl: setting key "[^"]+": (Invalid argument|Read-only file system)$', re.MULTILINE)
# ... so sysctl runs in the C locale.
LANG_C = {'LANG': 'C', 'LC_ALL': 'C', 'LC_MESSAGES': 'C'}
# Dots become folders below /proc/sys: no empty part, no "..", no slash.
_KERNEL_KEY = re.compile(r'^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$')


class SysctlError(Exception):
    """A running value or the drop-in's reload that failed; `changes` are those of the pass up to then (what
    converge would have returned)."""

    def __init__(self, message, changes=()):
        super().__init__(message)
        self.changes = list(changes)


def sysctl_value(value):
    """value as ansible.posix.sysctl writes it: a boolean word is 1 or 0, anything else stripped text."""
    if isinstance(value, bool):
        return '1' if value else '0'
    text = str(value)
    if text.lower() in BOOLEANS_TRUE:
        return '1'
    if text.lower() in BOOLEANS_FALSE:
        return '0'
    return text.strip()


def setting_problems(settings, option='settings'):
    """What is wrong with settings (name -> value), each problem naming option, before anything is changed."""
    problems = []
    for key, value in settings.items():
        key = str(key)
        if not _KERNEL_KEY.match(key):
            problems.append('%s: %s is not a kernel setting name (dotted, such as kernel.yama.ptrace_scope)'
                            % (option, show(key)))
        elif value is None or sysctl_value(value) == '':
            problems.append('%s: %s has no value' % (option, key))
        elif '\n' in sysctl_value(value):
            problems.append('%s: the value of %s holds a line break' % (option, key))
    return problems


def sysctl_setting(line):
    """(key, value) of a stripped line of a sysctl file, or None for a comment, an empty line or no `=`."""
    if not line or line.startswith(('#', ';')) or '=' not in line:
        return None
    key, value = line.split('=', 1)
    return key.strip(), value.strip()


def sysctl_file_values(lines):
    """Key -> value of the stripped lines of a sysctl file; the last line of a key wins, as sysctl reads it."""
    return dict(setting for setting in map(sysctl_setting, lines) if setting)


def with_sysctl_setting(lines, key, value):
    """The stripped lines ansible.posix.sysctl writes for key=value over lines: each setting's first line only,
    as key=value, key's with value (appended when missing); comments and other lines kept."""
    fixed, seen = [], set()
    for line in lines:
        setting = sysctl_setting(line)
        if setting is None:
            fixed.append(line)
        elif setting[0] not in seen:
            seen.add(setting[0])
            fixed.append('%s=%s' % (setting[0], value if setting[0] == key else setting[1]))
    if key not in seen:
        fixed.append('%s=%s' % (key, value))
    return fixed


def same_values(running, value):
    """Whether a running value equals value, word for word (sysctl prints some with tabs)."""
    return running is not None and running.split() == value.split()


def proc_file(proc_sys, key):
    """The file below proc_sys that holds the running value of key."""
    return os.path.join(proc_sys, *key.split('.'))


def running_value(proc_sys, key):
    """The running value of key as its file holds it, or None when it cannot be read."""
    try:
        with open(proc_file(proc_sys, key), encoding='utf-8') as handle:
            return handle.read()
    except OSError:
        return None


def new_file_owner_mode(folder):
    """The owner, group and mode Ansible's atomic_move gives a file it creates in folder: the writer's, the folder's
    group when it is set-group-ID, and 0666 less the umask."""
    umask = os.umask(0)
    os.umask(umask)
    folder_stat = os.stat(folder)
    gid = folder_stat.st_gid if folder_stat.st_mode & stat.S_ISGID else os.getegid()
    return os.geteuid(), gid, 0o666 & ~umask


def _set_running_value(proc_sys, key, value, option):
    try:
        with open(proc_file(proc_sys, key), 'w', encoding='utf-8') as handle:
            handle.write(value + '\n')
    except OSError as exc:
        raise SysctlError('%s: setting %s to %s failed: %s' % (option, key, value, exc)) from None


def _write_file(path, text, run):
    """Replace the drop-in (keeping its owner and mode; a new one gets atomic_move's), then `sysctl -p` it."""
    real = os.path.realpath(path)
    if os.path.exists(real):
        found = os.stat(real)
        uid, gid, mode = found.st_uid, found.st_gid, stat.S_IMODE(found.st_mode)
    else:
        uid, gid, mode = new_file_owner_mode(os.path.dirname(real))
    write.replace_file(real, text, mode, uid, gid)
    rc, out, err = run(['sysctl', '-p', path])
    if rc != 0 or SYSCTL_FAILED.search(err or ''):
        raise SysctlError('sysctl -p %s failed: %s' % (path, ((out or '') + (err or '')).strip()))


def converge(settings, path, check_mode, run, proc_sys=PROC_SYS, option='settings'):
    """Each setting of settings (name -> value, checked with setting_problems) this kernel has is in the drop-in at
    path and running; the drop-in is reloaded when it changed. run(argv) runs a command and returns
    (rc, stdout, stderr); option is the name failures are worded with.

    Returns (changes, missing, reloaded): `key=value` of each setting that changed (or, in check mode, would change)
    in the file or running, the names this kernel has no file below proc_sys for, and whether `sysctl -p` ran.
    Raises SysctlError, with the changes, when a running value cannot be set, the drop-in cannot be written or its
    reload fails."""
    wanted, missing = {}, []
    for key, value in settings.items():
        if os.path.exists(proc_file(proc_sys, str(key))):
            wanted[str(key)] = sysctl_value(value)
        else:
            missing.append(str(key))
    if not wanted:
        return [], missing, False
    lines = []
    if os.path.isfile(path):
        with open(path, encoding='utf-8') as handle:
            lines = [line.strip() for line in handle.readlines()]
    changed = []
    for key, value in wanted.items():
        if sysctl_file_values(lines).get(key) != value:
            lines = with_sysctl_setting(lines, key, value)
            changed.append(key)
    running = [key for key, value in wanted.items() if not same_values(running_value(proc_sys, key), value)]
    changes = ['%s=%s' % (key, value) for key, value in wanted.items() if key in changed or key in running]
    if check_mode:
        return changes, missing, False
    try:
        for key in running:
            _set_running_value(proc_sys, key, wanted[key], option)
        if changed:
            _write_file(path, ''.join(line + '\n' for line in lines), run)
    except SysctlError as exc:
        raise SysctlError(str(exc), changes) from None
    except OSError as exc:
        raise SysctlError(str(exc), changes) from exc
    return changes, missing, bool(changed)


def command_runner(module):
    """converge's run(argv) through an AnsibleModule: the program found on the PATH, run in the C locale."""
    def run(argv):
        return module.run_command([module.get_bin_path(argv[0], required=True)] + argv[1:], environ_update=LANG_C)
    return run
