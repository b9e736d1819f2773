# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way the collection's code replaces a file: never half written, never with another mode for a moment."""

from __future__ import annotations

import os
import tempfile


def replace_file(path, data, mode, uid=-1, gid=-1):
    """Write data (bytes or text, UTF-8) to path through a new file in the same folder that gets mode (and uid/gid;
    -1 keeps the writer's) before it is renamed into place."""
    if isinstance(data, str):
        data = data.encode('utf-8')
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=folder)
    try:
        with os.fdopen(handle, 'wb') as out:
            out.write(data)
        os.chown(temporary, uid, gid)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
