# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way the collection's code replaces a file: never half written, never with another mode for a moment; and
the one way it makes a folder with a mode (or sets that mode on the folder there)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile


@contextlib.contextmanager
def new_file(path, mode, uid=-1, gid=-1):
    """A new file in path's folder, open for writing bytes; when the block ends without an error it gets mode (and
    uid/gid; -1 keeps the writer's) and is renamed over path; on an error it is removed and path left as it was."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=folder)
    try:
        with os.fdopen(handle, 'wb') as out:
            yield out
        os.chown(temporary, uid, gid)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def replace_file(path, data, mode, uid=-1, gid=-1):
    """Write data (bytes or text, UTF-8) to path through new_file."""
    if isinstance(data, str):
        data = data.encode('utf-8')
    with new_file(path, mode, uid, gid) as out:
        out.write(data)


def folder(path, mode, check_mode=False):
    """Make path (and the folders above it that are missing) with mode, or set mode on the folder there; True when
    it did (in check mode: would)."""
    if os.path.isdir(path) and stat.S_IMODE(os.stat(path).st_mode) == mode:
        return False
    if not check_mode:
        if not os.path.isdir(path):
            os.makedirs(path, mode)
        os.chmod(path, mode)
    return True


def text_and_mode(path):
    """(text, permission bits) of the file at path, or (None, None) when it cannot be read."""
    try:
        with open(path, 'r') as handle:
            return handle.read(), stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
    except (IOError, OSError):
        return None, None


def write_if_changed(path, content, mode=0o600):
    """Write content atomically with mode when it differs (only the mode set when only it differs); return True when
    the file changed."""
    text, current = text_and_mode(path)
    if text == content:
        if current == mode:
            return False
        os.chmod(path, mode)
        return True
    replace_file(path, content, mode)
    return True


def file_state(path, content, mode=0o600):
    """Whether path already holds content with mode (for check mode)."""
    return text_and_mode(path) == (content, mode)
