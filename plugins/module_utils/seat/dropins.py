# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A seat's systemd drop-ins on its login host, by user ID: the limits of its user-UID.slice (every process of its
login sessions) and, when the seats' login shell filters their system calls, a user@UID.service that never starts
(a user manager would start processes outside that shell: systemd-run --user)."""

from __future__ import annotations

import os
import shutil

from ansible_collections.dralab.workshop.plugins.module_utils.files import write

DROPIN = '50-dralab-seat.conf'
FOLDER_MODE = 0o755
FILE_MODE = 0o644


def folders(uid):
    """The slice's and the user manager's drop-in folder names of user ID uid."""
    return 'user-%d.slice.d' % uid, 'user@%d.service.d' % uid


def _file(folder, content, check_mode):
    path = os.path.join(folder, DROPIN)
    try:
        with open(path, encoding='utf-8') as handle:
            same = handle.read() == content
        same = same and (os.stat(path).st_mode & 0o7777) == FILE_MODE
    except FileNotFoundError:
        same = False
    if same:
        return []
    if not check_mode:
        os.makedirs(folder, FOLDER_MODE, exist_ok=True)
        os.chmod(folder, FOLDER_MODE)
        write.replace_file(path, content, FILE_MODE, 0, 0)
    return [os.path.basename(folder)]


def converge(systemd_dir, uid, slice_content, manager_content, check_mode):
    """The slice drop-in holds slice_content; the user manager's holds manager_content, or is gone when it is
    empty. Returns the folders changed (or that would be)."""
    slice_folder, manager_folder = (os.path.join(systemd_dir, name) for name in folders(uid))
    changed = _file(slice_folder, slice_content, check_mode)
    if manager_content:
        changed += _file(manager_folder, manager_content, check_mode)
    elif os.path.lexists(manager_folder):
        changed.append(os.path.basename(manager_folder) + ' removed')
        if not check_mode:
            shutil.rmtree(manager_folder)
    return changed
