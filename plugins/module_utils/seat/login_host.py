# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files of a login host that fence the seats in, converged in one pass (module seat_login_host).

The seats' login shell; their names in the cron and at deny files (a job would run outside the seat's slice); the
PAM services of chfn and chsh refusing them; the kernel settings that shrink their reach (a sysctl.d file and the
running values, through files/sysctl.py). Before any of it: a PAM service runs pam_systemd, else the seats' slice
limits would not apply.

Each file is written byte for byte as the tasks this pass replaces wrote it (ansible.builtin.blockinfile,
ansible.builtin.lineinfile, ansible.posix.sysctl), so a host those tasks converged has nothing to change.
"""

from __future__ import annotations

import grp
import os
import re
import stat

from ansible_collections.dralab.workshop.plugins.module_utils.files import sysctl, write
from ansible_collections.dralab.workshop.plugins.module_utils.values import seat_name_problem, show

ROOT = 0
SHELL_MODE = 0o755
MARKER = '# {mark} dralab.workshop seats'
BLOCK_BEGIN = MARKER.replace('{mark}', 'BEGIN') + '\n'
BLOCK_END = MARKER.replace('{mark}', 'END') + '\n'
PAM_REFUSAL = re.compile(r'^auth\s+requisite\s+pam_succeed_if\.so\s+quiet\s+user\s+notingroup\s')
PAM_REFUSAL_LINE = 'auth requisite pam_succeed_if.so quiet user notingroup %s'
PAM_ROOTOK = re.compile(r'^auth\s+sufficient\s+pam_rootok\.so')
# grep -E '^[^#]*pam_systemd[.]so' reads line by line: [^#] never crosses a line here either.
PAM_SYSTEMD = re.compile(rb'^[^#\n]*pam_systemd[.]so', re.MULTILINE)
NO_PAM_SYSTEMD = (
    "No PAM service on this host runs pam_systemd, so SSH logins do not get a user-UID.slice and the seats' limits "
    '(memory, tasks, CPU) would not apply. Install it (Debian/Ubuntu: package libpam-systemd) and run the playbook '
    'again.')
_GROUP_NAME = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$')
_PROGRAM = re.compile(r'^[A-Za-z0-9_+-][A-Za-z0-9_.+-]*$')
_OCTAL_MODE = re.compile(r'^[0-7]{3,4}$')


class LoginHostError(Exception):
    """A check or a step that failed, in words that name the option or the file."""


def file_mode(value):
    """The mode of a job deny file's `mode`: an octal string such as '0644', or an int taken as the mode itself
    (as the file modules take one); None when it is neither."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 0o7777:
        return value
    if isinstance(value, str) and _OCTAL_MODE.match(value):
        return int(value, 8)
    return None


def _path_problem(option, path):
    if not isinstance(path, str) or not os.path.isabs(path):
        return '%s: %s is not an absolute path' % (option, show(path))
    return None


def _job_deny_file_problems(index, entry):
    option = 'job_deny_files[%d]' % index
    problems = [_path_problem(option + '.path', entry['path'])]
    try:
        grp.getgrnam(entry['group'])
    except KeyError:
        problems.append('%s.group: this host has no group %s' % (option, show(entry['group'])))
    if file_mode(entry['mode']) is None:
        problems.append('%s.mode: %s is not an octal mode such as "0644"' % (option, show(entry['mode'])))
    return [problem for problem in problems if problem]


def input_problems(params):
    """What is wrong with the arguments, each naming its option, before anything is changed."""
    problems = []
    if not _GROUP_NAME.match(params['group']):
        problems.append('group: %s is not a Linux group name' % show(params['group']))
    problems += ['seats: %s' % problem for problem in map(seat_name_problem, params['seats']) if problem]
    if params['login_shell']:
        problems.append(_path_problem('login_shell.path', params['login_shell']['path']))
    for index, entry in enumerate(params['job_deny_files']):
        problems += _job_deny_file_problems(index, entry)
    problems += ['pam_refused_programs: %s is not a file name of a PAM service' % show(program)
                 for program in params['pam_refused_programs']
                 if not _PROGRAM.match(program) or program in ('.', '..')]
    problems += sysctl.setting_problems(params['kernel_settings'], 'kernel_settings')
    problems.append(_path_problem('kernel_settings_file', params['kernel_settings_file']))
    return [problem for problem in problems if problem]


def runs_pam_systemd(pam_dir):
    """Whether a file below pam_dir has a line that runs pam_systemd (what `grep -rlE` finds: links below pam_dir are
    not followed)."""
    for folder, _folders, names in os.walk(pam_dir):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, 'rb') as handle:
                if PAM_SYSTEMD.search(handle.read()):
                    return True
    return False


def deny_block(seats):
    """The block of the job deny files: one seat a line."""
    return ''.join(seat + '\n' for seat in seats)


def with_block(original, block):
    """The text ansible.builtin.blockinfile (insertafter EOF) makes of original (None: no file) with block between the
    seats' markers; an empty block removes it. A block already there is replaced where it is, a new one goes at the
    end. As blockinfile does, the line before the block's place always gets its line break, even when only a block
    is removed or none is found."""
    lines = original.splitlines(True) if original else []
    begin = end = None
    for index, line in enumerate(lines):
        if line == BLOCK_BEGIN:
            begin = index
        if line == BLOCK_END:
            end = index
    if begin is None or end is None:
        place = len(lines)
    else:
        place = min(begin, end)
        del lines[place:max(begin, end) + 1]
    if place > 0 and not lines[place - 1].endswith('\n'):
        lines[place - 1] += '\n'
    if block:
        lines[place:place] = [BLOCK_BEGIN] + block.splitlines(True) + [BLOCK_END]
    return ''.join(lines)


def with_pam_refusal(lines, group):
    """The lines (as read with universal newlines) ansible.builtin.lineinfile (firstmatch) makes of lines with the line
    that refuses group's members: it replaces the first refusal line, else goes after the first pam_rootok line,
    else at the end."""
    line = PAM_REFUSAL_LINE % group + '\n'
    for index, current in enumerate(lines):
        if PAM_REFUSAL.search(current):
            return lines[:index] + [line] + lines[index + 1:]
    place = next((index + 1 for index, current in enumerate(lines) if PAM_ROOTOK.search(current)), len(lines))
    before = lines[:place]
    # lineinfile adds no line break to a pam_rootok line that ends the file: it would glue the two lines together.
    if before and not before[-1].endswith('\n'):
        before[-1] += '\n'
    return before + [line] + lines[place:]


def attribute_words(found, uid, gid, mode, group_name):
    """What differs of a file's stat result found from root, gid and mode, in words."""
    words = []
    if found.st_uid != uid:
        words.append('owner root')
    if found.st_gid != gid:
        words.append('group %s' % group_name)
    if stat.S_IMODE(found.st_mode) != mode:
        words.append('mode %04o' % mode)
    return words


def _read_text(path, newline=None):
    with open(path, encoding='utf-8', newline=newline) as handle:
        return handle.read()


def write_needed(path, data):
    """Whether the file at path holds other bytes than data."""
    with open(path, 'rb') as handle:
        return handle.read() != data


def block_words(original, block):
    """What with_block changed of original, in words."""
    if block:
        return 'seats block'
    if original and BLOCK_BEGIN in original.splitlines(True) and BLOCK_END in original.splitlines(True):
        return 'seats block removed'
    return 'final line break (as blockinfile adds one)'


class LoginHost:
    """One pass over a login host's seat fences with what it changed (or, in check mode, would change), in words
    (`changes`). run(argv) runs a command and returns (rc, stdout, stderr)."""

    def __init__(self, params, check_mode, run, pam_dir='/etc/pam.d', proc_sys='/proc/sys'):
        self.params = params
        self.check_mode = check_mode
        self.run = run
        self.pam_dir = pam_dir
        self.proc_sys = proc_sys
        self.changes = []
        self.kernel_settings_missing = []
        self.sysctl_reloaded = False

    def converge(self):
        """Check, then everything in order. Raises LoginHostError before any change when the input or the PAM
        configuration is wrong."""
        problems = input_problems(self.params)
        if problems:
            raise LoginHostError('; '.join(problems) + '. Nothing was changed.')
        if self.params['require_pam_systemd'] and not runs_pam_systemd(self.pam_dir):
            raise LoginHostError(NO_PAM_SYSTEMD)
        if self.params['login_shell']:
            self.login_shell(self.params['login_shell']['path'], self.params['login_shell']['content'])
        for entry in self.params['job_deny_files']:
            self.job_deny_file(entry['path'], entry['group'], file_mode(entry['mode']))
        for program in self.params['pam_refused_programs']:
            self.pam_refusal(os.path.join(self.pam_dir, program))
        self.kernel_settings(self.params['kernel_settings'], self.params['kernel_settings_file'])

    def login_shell(self, path, content):
        """path holds content, owner root:root, mode 0755 (ansible.builtin.template replaces a link at path)."""
        data = content.encode('utf-8')
        try:
            found = os.lstat(path)
        except FileNotFoundError:
            found = None
        if found is None or not stat.S_ISREG(found.st_mode) or write_needed(path, data):
            self.changes.append('%s written' % path)
            if not self.check_mode:
                write.replace_file(path, data, SHELL_MODE, ROOT, ROOT)
            return
        words = attribute_words(found, ROOT, ROOT, SHELL_MODE, 'root')
        if words:
            self.changes.append('%s %s' % (path, ', '.join(words)))
            if not self.check_mode:
                os.chown(path, ROOT, ROOT)
                os.chmod(path, SHELL_MODE)

    def job_deny_file(self, path, group, mode):
        """The seats' block in path (owner root, group, mode), or no block when jobs are not denied; a file that is not
        there is made for a block only."""
        present = bool(self.params['deny_jobs'] and self.params['seats'])
        block = deny_block(self.params['seats']) if present else ''
        real = os.path.realpath(path)
        if os.path.isdir(real):
            raise LoginHostError('job_deny_files: %s is a folder' % path)
        try:
            found = os.stat(real)
        except FileNotFoundError:
            if not present:
                return
            found = None
        gid = grp.getgrnam(group).gr_gid
        original = None if found is None else _read_text(real, newline='')
        wanted = with_block(original, block)
        words = [] if found is None else attribute_words(found, ROOT, gid, mode, group)
        if wanted != original:
            self.changes.append('%s %s' % (path, block_words(original, block)))
        if words:
            self.changes.append('%s %s' % (path, ', '.join(words)))
        if self.check_mode:
            return
        if wanted != original:
            os.makedirs(os.path.dirname(real), exist_ok=True)
            write.replace_file(real, wanted, mode, ROOT, gid)
        elif words:
            os.chown(real, ROOT, gid)
            os.chmod(real, mode)

    def pam_refusal(self, path):
        """The PAM service at path refuses the seats' group; it keeps its owner and mode. A service that is not there
        is left alone."""
        if not os.path.exists(path):
            return
        real = os.path.realpath(path)
        with open(real, encoding='utf-8') as handle:
            lines = handle.readlines()
        wanted = with_pam_refusal(lines, self.params['group'])
        if wanted == lines:
            return
        self.changes.append('%s refuses the seats' % path)
        if not self.check_mode:
            found = os.stat(real)
            write.replace_file(real, ''.join(wanted), stat.S_IMODE(found.st_mode), found.st_uid, found.st_gid)

    def kernel_settings(self, settings, path):
        """Each setting this kernel has is in the file at path and running; the file is reloaded when it changed."""
        try:
            changes, self.kernel_settings_missing, self.sysctl_reloaded = sysctl.converge(
                settings, path, self.check_mode, self.run, self.proc_sys, option='kernel_settings')
        except sysctl.SysctlError as exc:
            self.changes += exc.changes
            raise LoginHostError(str(exc)) from None
        self.changes += changes
