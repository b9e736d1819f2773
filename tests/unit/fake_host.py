# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""For the unit tests of the module_utils that converge a host's files in a test folder: a fake run(argv), and the
files below a folder with their modes and owners."""

from __future__ import annotations

import os
import stat


class Commands:
    """A fake run(argv): records each command and answers rc 0, or what the test set."""

    def __init__(self, answer=(0, "", "")):
        self.calls = []
        self.answer = answer

    def __call__(self, argv):
        self.calls.append(argv)
        return self.answer


def mode_owner(path):
    found = os.stat(path)
    return stat.S_IMODE(found.st_mode), found.st_uid, found.st_gid


def snapshot(root):
    """Every file below root -> its bytes, mode and owner (a link -> where it points)."""
    found = {}
    for folder, _folders, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                found[path] = ("link", os.readlink(path))
                continue
            with open(path, "rb") as handle:
                found[path] = (handle.read(), mode_owner(path))
    return found
