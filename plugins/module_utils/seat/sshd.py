# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seats' sshd drop-in on a login host, in one pass: its folder, the drop-in written only once
`sshd -t -f` accepts it, then `sshd -t` on the whole configuration and `sshd -T` for a seat, which must show every
expected setting. When sshd refuses any of it the drop-in is removed, so SSH stays as it was for every other
account; reloading sshd is the caller's (a handler)."""

from __future__ import annotations

import collections
import errno
import os
import stat
import tempfile

from ansible_collections.dralab.workshop.plugins.module_utils.files import write
from ansible_collections.dralab.workshop.plugins.module_utils.values import seat_name_problem

SSHD = '/usr/sbin/sshd'
ROOT = (0, 0)
FOLDER_MODE = 0o755
FILE_MODE = 0o644

REFUSED = ("sshd refused its configuration with the seats' drop-in %s, so the drop-in was removed and sshd was not "
           "reloaded: SSH stays as it was for every other account.")
REFUSED_CHECK_MODE = ("sshd refused its configuration with the seats' drop-in %s, so a real run removes the drop-in "
                      "and does not reload sshd (check mode: nothing was changed).")
NOT_APPLIED = ("sshd on this host does not read %s (no Include of %s/*.conf in /etc/ssh/sshd_config?) or another "
               "setting overrides it: seat %s does not get %s (sshd -T says %s).")
NOT_CHECKED = ("check mode: %s would change, and only the new drop-in was checked (sshd -t -f); sshd -t and sshd -T "
               "on the whole configuration run once it is written.")

Result = collections.namedtuple('Result', 'changed effective note')


class SshdError(Exception):
    """sshd refused the configuration; the message says so and what the drop-in became."""


def input_problems(dropin, seat, expected):
    """What is wrong with the arguments, before anything is changed: each problem names its option."""
    problems = []
    if not os.path.isabs(dropin):
        problems.append('dropin: %r is not an absolute path' % dropin)
    elif dropin.endswith('/'):
        problems.append('dropin: %r names a folder, not a file' % dropin)
    if seat is not None:
        # Also keeps the seat from adding its own fields to sshd -T -C (a comma, "=", white space).
        problem = seat_name_problem(seat)
        if problem:
            problems.append('seat: %s' % problem)
    for name, value in expected.items():
        if str(name).split() != [str(name)]:
            problems.append('expected: %r is not an sshd setting name (one word)' % (name,))
        if isinstance(value, (dict, list)) or '\n' in str(value):
            problems.append('expected: the value of %s is not one line of text' % name)
    return problems


def expected_lines(expected):
    """The lines `sshd -T` prints for the expected settings (name -> value): "name value", lower case."""
    return ['%s %s' % (name.lower(), str(value).lower()) for name, value in expected.items()]


def effective_argv(sshd, seat):
    """`sshd -T` for what a login of seat from this host gets."""
    return [sshd, '-T', '-C', 'user=%s,host=localhost,addr=127.0.0.1' % seat]


def _folder(folder, owner, check_mode):
    """Make the folder, or set its owner and mode; whether it changed (or would)."""
    try:
        info = os.stat(folder)
    except FileNotFoundError:
        info = None
    if info and stat.S_ISDIR(info.st_mode) and (info.st_uid, info.st_gid) == owner \
            and stat.S_IMODE(info.st_mode) == FOLDER_MODE:
        return False
    if not check_mode:
        os.makedirs(folder, FOLDER_MODE, exist_ok=True)
        os.chown(folder, *owner)
        os.chmod(folder, FOLDER_MODE)
    return True


def _state(path, data, owner):
    """(same content, same owner and mode) of the file at path; a link, or no file, has neither."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP):
            return False, False
        raise
    with os.fdopen(handle, 'rb') as source:
        info = os.fstat(source.fileno())
        if not stat.S_ISREG(info.st_mode):
            return False, False
        same = source.read() == data
    return same, (info.st_uid, info.st_gid) == owner and stat.S_IMODE(info.st_mode) == FILE_MODE


def _candidate_check(run, sshd, folder, name, data, owner):
    """`sshd -t -f` on a temporary file with data, owner and mode (as ansible's validate), deleted afterwards."""
    # A dot file not ending in .conf: an sshd started meanwhile does not read it through its Include of the folder.
    # Check mode may not have the folder yet: then the system's temporary folder.
    handle, candidate = tempfile.mkstemp(prefix='.%s.' % name, suffix='.candidate',
                                         dir=folder if os.path.isdir(folder) else None)
    try:
        with os.fdopen(handle, 'wb') as out:
            out.write(data)
            os.fchown(out.fileno(), *owner)
            os.fchmod(out.fileno(), FILE_MODE)
        return run([sshd, '-t', '-f', candidate])
    finally:
        os.unlink(candidate)


def _complaint(argv, result):
    rc, out, err = result
    return (err or out).strip() or '%s exited with rc %d.' % (' '.join(argv[:3]), rc)


def _refused(dropin, detail, check_mode):
    """The error that ends the pass; outside check mode the drop-in is removed first."""
    if check_mode:
        return SshdError('%s %s' % (REFUSED_CHECK_MODE % dropin, detail))
    try:
        os.unlink(dropin)
    except FileNotFoundError:
        pass
    return SshdError('%s %s' % (REFUSED % dropin, detail))


def _check(run, argv, dropin, check_mode):
    """stdout of argv; SshdError (the drop-in removed) when it fails."""
    result = run(argv)
    if result[0] != 0:
        raise _refused(dropin, _complaint(argv, result), check_mode)
    return result[1]


def _effective(stdout, expected, seat, dropin):
    """The sshd -T lines of the expected settings; SshdError (the drop-in removed) when one is not applied."""
    names = set(name.lower() for name in expected)
    lines = stdout.splitlines()
    effective = [line for line in lines if line.split(' ', 1)[0] in names]
    missing = [line for line in expected_lines(expected) if line not in lines]
    if missing:
        missing_names = set(line.split(' ', 1)[0] for line in missing)
        says = [line for line in effective if line.split(' ', 1)[0] in missing_names]
        detail = NOT_APPLIED % (dropin, os.path.dirname(dropin), seat, ', '.join(missing),
                                ', '.join(says) or 'nothing of them')
        raise _refused(dropin, detail, False)
    return effective


def converge(run, dropin, content, sshd=SSHD, seat=None, expected=None, check_mode=False, owner=ROOT):
    """Converge the drop-in at dropin to content (owner, mode 0644) in a folder of owner and mode 0755, then check
    sshd's configuration and, for seat, the expected settings (name -> value). run(argv) -> (rc, stdout, stderr)
    runs sshd; it also runs in check mode, which writes nothing. Raises SshdError when sshd refuses."""
    expected = expected or {}
    data = content.encode('utf-8')
    folder, name = os.path.split(dropin)
    changed = _folder(folder, owner, check_mode)
    same_content, same_attributes = _state(dropin, data, owner)
    if not same_content:
        result = _candidate_check(run, sshd, folder, name, data, owner)
        if result[0] != 0:
            raise _refused(dropin, _complaint([sshd, '-t', '-f'], result), check_mode)
    if not (same_content and same_attributes):
        changed = True
        if not check_mode:
            write.replace_file(dropin, data, FILE_MODE, *owner)
    if check_mode and not same_content:
        # sshd would read the old drop-in (or none): its answer would say nothing of the new one.
        return Result(changed, [], NOT_CHECKED % dropin)
    _check(run, [sshd, '-t'], dropin, check_mode)
    if check_mode or seat is None:
        return Result(changed, [], None)
    stdout = _check(run, effective_argv(sshd, seat), dropin, check_mode)
    return Result(changed, _effective(stdout, expected, seat, dropin), None)
