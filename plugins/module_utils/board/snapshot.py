# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The board snapshot's files: the page (dest) and, beside it, the board's state (the same name ending in .json).

Both are written 0600, each through a file in the same folder renamed into
place, and only when the lab's state differs from the one the state file holds
(board_state.same_state): the page is never read back. Used by the
board_snapshot module and by dra_health (snapshot_dest); they turn an OSError
into the module's failure.
"""

from __future__ import annotations

import json
import os

from ansible_collections.dralab.workshop.plugins.module_utils.board import page as board_page
from ansible_collections.dralab.workshop.plugins.module_utils.board import state as board_state
from ansible_collections.dralab.workshop.plugins.module_utils.files import write

MODE = 0o600


def state_path(dest):
    """Where the state of the page dest is kept: board-snapshot.html -> board-snapshot.json."""
    root, extension = os.path.splitext(dest)
    return (root if extension.lower() in ('.html', '.htm') else dest) + '.json'


def read_state(path):
    """The board a state file holds, or None (no file, or not a board)."""
    try:
        with open(path, encoding='utf-8') as handle:
            board = json.load(handle)
    except (IOError, OSError, ValueError):
        return None
    return board if isinstance(board, dict) else None


def write_file(path, text):
    """Write text to path (0600) through a file in the same folder, then rename it into place. A missing folder is
    made (0700: the page names the seats' claims)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700)
    write.replace_file(path, text, MODE)


def keep(board, dest, check_mode=False):
    """Keep board in dest (its page) and beside it (its state). Returns a module's result: changed, and the dest,
    summary and generated of the board the files hold.

    An unchanged lab keeps both files and their earlier time; only a wrong mode is mended. The page is written
    first and the state last, so a state file always describes the page beside it.
    Raises OSError when a file cannot be written.
    """
    stored = state_path(dest)
    old = read_state(stored)
    if old is not None and os.path.isfile(dest) and board_state.same_state(old, board):
        wrong = [path for path in (dest, stored) if (os.stat(path).st_mode & 0o777) != MODE]
        if not check_mode:
            for path in wrong:
                os.chmod(path, MODE)
        return _kept(bool(wrong), dest, old)
    if not check_mode:
        write_file(dest, board_page.render(board))
        write_file(stored, json.dumps(board, sort_keys=True, indent=1) + '\n')
    return _kept(True, dest, board)


def _kept(changed, dest, board):
    return dict(changed=changed, dest=dest, summary=board['summary'], generated=board['generated'])


def cannot_write(dest, exc, option):
    """The failure of a module whose snapshot could not be written (option: the module's option naming dest)."""
    return ('Cannot write the board snapshot %s and its state %s: %s. Let the user the module runs as write to %s, '
            'or set %s to a path in a folder it may write to.'
            % (dest, state_path(dest), exc, os.path.dirname(os.path.abspath(dest)), option))
