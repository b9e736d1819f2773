# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""files/write.py: a file replaced whole with its mode, written only when its content or mode differs."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.files import write


def test_write_if_changed_is_atomic_0600_and_idempotent(tmp_path):
    path = str(tmp_path / 'user01.kubeconfig')
    assert write.write_if_changed(path, 'a') is True
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert write.write_if_changed(path, 'a') is False
    os.chmod(path, 0o644)
    assert write.file_state(path, 'a') is False
    assert write.write_if_changed(path, 'a') is True
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert write.file_state(path, 'a') is True
    assert write.write_if_changed(path, 'b') is True and open(path).read() == 'b'
    assert [p.name for p in tmp_path.iterdir()] == ['user01.kubeconfig']


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    path = tmp_path / 'sheet.csv'
    path.write_text('old')
    with pytest.raises(RuntimeError):
        with write.new_file(str(path), 0o600) as out:
            out.write(b'half')
            raise RuntimeError('interrupted')
    assert path.read_text() == 'old' and [p.name for p in tmp_path.iterdir()] == ['sheet.csv']
