# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The board snapshot file: written 0600, and only when the lab's board differs from the one it holds.

Used by the board_snapshot module and by dra_health (snapshot_dest), which writes the
snapshot from the objects it has read already.
"""

from __future__ import annotations

import os
import tempfile

from ansible_collections.dralab.workshop.plugins.module_utils.board import state as board_model
from ansible_collections.dralab.workshop.plugins.module_utils.board import page as board_page

MODE = 0o600


def read_page(path):
    try:
        with open(path, encoding='utf-8') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def write_page(path, text):
    """Write text to path (0600) through a file in the same folder, then rename it into place. A missing folder is
    made (0700: the page names the seats' claims)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700)
    handle, temporary = tempfile.mkstemp(prefix='.board-', dir=folder)
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as out:
            out.write(text)
        os.chmod(temporary, MODE)
        os.rename(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def write_snapshot(board, dest, check_mode=False):
    """Keep board in dest. Returns (changed, the board the file holds afterwards).

    An unchanged lab (board_model.same_state) keeps the file and its earlier time; only a wrong mode is mended.
    Raises OSError when the file cannot be written.
    """
    old = board_page.embedded(read_page(dest) or '')
    if old is not None and board_model.same_state(old, board):
        if (os.stat(dest).st_mode & 0o777) == MODE:
            return False, old
        if not check_mode:
            os.chmod(dest, MODE)
        return True, old
    if not check_mode:
        write_page(dest, board_page.render(board))
    return True, board


def snapshot(module, data, dest, now=None, **board_options):
    """The board of the objects read (dra_collect.collect's data) kept in dest, for a module: its changed, dest,
    summary and generated. board_options go to board_model.build; a file that cannot be written fails the module."""
    board = board_model.build(now=now, **dict(data, **board_options))
    try:
        changed, board = write_snapshot(board, dest, check_mode=module.check_mode)
    except (IOError, OSError) as exc:
        module.fail_json(msg='Cannot write the board snapshot %s: %s' % (dest, exc))
    return dict(changed=changed, dest=dest, summary=board['summary'], generated=board['generated'])
