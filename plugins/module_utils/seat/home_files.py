# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files the lab keeps in a seat's home, written as the seat.

Everything inside a home is the seat's: it may replace ~/.kube or ~/.kube/config by a link to any file of the host
at any time. So these writes run in a child process that is the seat (`as_user`: its user and group IDs, no
supplementary groups), never as root: a link can only lead them where the seat itself may write.
`converge_home` is what that child does; it reports what it changed (or, in check mode, would change).
"""

from __future__ import annotations

import json
import os
import stat

from ansible_collections.dralab.workshop.plugins.module_utils.files import write

KUBE_DIR = '.kube'
KUBECONFIG = '.kube/config'
DEMOS_DIR = 'demos'


def _lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _read_regular(path):
    """The bytes of a regular file at path, not following a link there; None for anything else."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        chunks = []
        while True:
            chunk = os.read(handle, 1 << 16)
            if not chunk:
                return b''.join(chunks)
            chunks.append(chunk)
    finally:
        os.close(handle)


def _private_folder(path, check_mode, changes, label):
    """path is a folder of mode 0700: a link or a file there is removed first (not followed)."""
    found = _lstat(path)
    if found is not None and not stat.S_ISDIR(found.st_mode):
        changes.append('%s: the link or file there replaced by a folder' % label)
        if not check_mode:
            os.unlink(path)
        found = None
    elif found is None:
        changes.append('%s made' % label)
    if found is None:
        if not check_mode:
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)
    elif stat.S_IMODE(found.st_mode) != 0o700:
        changes.append('%s mode 0700' % label)
        if not check_mode:
            os.chmod(path, 0o700)


def _kubeconfig(home, content, check_mode, changes):
    _private_folder(os.path.join(home, KUBE_DIR), check_mode, changes, '~/.kube')
    path = os.path.join(home, KUBECONFIG)
    found = _lstat(path)
    if _read_regular(path) != content:
        changes.append('~/.kube/config written')
        if not check_mode:
            write.replace_file(path, content, 0o600)
    elif stat.S_IMODE(found.st_mode) != 0o600:
        changes.append('~/.kube/config mode 0600')
        if not check_mode:
            os.chmod(path, 0o600)


def _missing_files(home, files, check_mode, changes, label):
    """files: relative path -> (bytes, mode). Writes those that home lacks, with their folders (0700); an entry
    that is there, whatever it is, stays as the seat left it."""
    added = []
    for rel, (content, mode) in sorted(files.items()):
        path = os.path.join(home, rel)
        if os.path.lexists(path):
            continue
        added.append(rel)
        if check_mode:
            continue
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        write.replace_file(path, content, mode)
    if added:
        changes.append('%s: %d file(s) added' % (label, len(added)))


def skeleton_files(skel):
    """The regular files below a skeleton folder (/etc/skel): relative path -> (bytes, mode)."""
    found = {}
    for top, dirs, names in os.walk(skel):
        dirs.sort()
        for name in names:
            full = os.path.join(top, name)
            content = _read_regular(full)
            if content is not None:
                found[os.path.relpath(full, skel)] = (content, stat.S_IMODE(os.lstat(full).st_mode))
    return found


def converge_home(home, kubeconfig, demos, skeleton, check_mode):
    """As the seat: ~/.kube (0700) with the kubeconfig (0600, bytes; None leaves it), the demos (relative path
    below ~/demos -> (bytes, mode)) it lacks, and the skeleton's files (relative path -> (bytes, mode); for a home
    made in this run) it lacks. Returns what changed, in words."""
    changes = []
    if skeleton:
        _missing_files(home, skeleton, check_mode, changes, 'skeleton files')
    if kubeconfig is not None:
        _kubeconfig(home, kubeconfig, check_mode, changes)
    if demos:
        _missing_files(home, {os.path.join(DEMOS_DIR, rel): value for rel, value in demos.items()},
                       check_mode, changes, '~/demos')
    return changes


def as_user(uid, gid, function, *args):
    """function(*args) in a child process that has only uid and gid (no supplementary groups, umask 077); its
    JSON-able result, or RuntimeError with the child's error."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        status = 0
        try:
            os.close(reader)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            os.umask(0o077)
            answer = {'result': function(*args)}
        except BaseException as exc:  # pylint: disable=broad-exception-caught
            answer = {'error': '%s: %s' % (type(exc).__name__, exc)}
            status = 1
        try:
            data = json.dumps(answer).encode('utf-8')
            while data:
                data = data[os.write(writer, data):]
        finally:
            os._exit(status)  # no atexit handlers of the parent (its temporary files) in the child
    os.close(writer)
    chunks = []
    with os.fdopen(reader, 'rb') as stream:
        for chunk in iter(lambda: stream.read(1 << 16), b''):
            chunks.append(chunk)
    os.waitpid(pid, 0)
    try:
        answer = json.loads(b''.join(chunks).decode('utf-8'))
    except ValueError:
        raise RuntimeError('the process of user ID %d ended without an answer' % uid) from None
    if 'error' in answer:
        raise RuntimeError(answer['error'])
    return answer['result']
