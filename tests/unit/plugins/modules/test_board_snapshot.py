# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""board_snapshot end to end: a real AnsibleModule, the real collect, board and page, a fake API client."""

from __future__ import annotations

import json
import os
import stat
from unittest import mock

import pytest

from ansible.module_utils import _internal as module_utils_internal
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.dralab.workshop.plugins.module_utils.board import page as board_page
from ansible_collections.dralab.workshop.plugins.modules import board_snapshot
from test_dra_health import FakeClient

NOW = '2026-10-28T10:00:00Z'


def run(args, client, capsys, now=NOW):
    with patch_module_args(args), mock.patch.object(module_utils_internal, 'is_controller', False):
        module = AnsibleModule(argument_spec=board_snapshot.argspec(), supports_check_mode=True)
        with pytest.raises(SystemExit) as exc:
            board_snapshot.run(module, client, now=now)
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_writes_the_page_0600_and_only_again_when_the_lab_changes(tmp_path, capsys):
    dest = tmp_path / 'board-snapshot.html'
    code, result = run({'dest': str(dest)}, FakeClient('healthy'), capsys)
    assert code == 0 and result['changed'] is True and result['summary']['devices'] == 24
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    board = board_page.embedded(dest.read_text())
    assert board['generated'] == NOW and len([t for n in board['nodes'] for t in n['devices']]) == 24
    before = dest.read_bytes()
    code, result = run({'dest': str(dest)}, FakeClient('healthy'), capsys, now='2026-10-28T10:05:00Z')
    assert code == 0 and result['changed'] is False and result['generated'] == NOW
    assert dest.read_bytes() == before
    # An hour on, user04's unused claim has become a problem: the lab's board changed.
    code, result = run({'dest': str(dest)}, FakeClient('healthy'), capsys, now='2026-10-28T11:00:00Z')
    assert result['changed'] is True and board_page.embedded(dest.read_text())['summary']['errors'] == 1
    code, result = run({'dest': str(dest)}, FakeClient('broken'), capsys, now='2026-10-28T11:00:00Z')
    assert result['changed'] is True and board_page.embedded(dest.read_text())['summary']['devices'] == 22


def test_check_mode_writes_nothing(tmp_path, capsys):
    dest = tmp_path / 'board-snapshot.html'
    code, result = run({'dest': str(dest), '_ansible_check_mode': True}, FakeClient('healthy'), capsys)
    assert code == 0 and result['changed'] is True and not dest.exists()
    run({'dest': str(dest)}, FakeClient('healthy'), capsys)
    os.chmod(dest, 0o644)
    code, result = run({'dest': str(dest), '_ansible_check_mode': True}, FakeClient('healthy'), capsys)
    assert result['changed'] is True and stat.S_IMODE(dest.stat().st_mode) == 0o644
    code, result = run({'dest': str(dest)}, FakeClient('healthy'), capsys)
    assert result['changed'] is True and stat.S_IMODE(dest.stat().st_mode) == 0o600


def test_a_bad_lease_is_refused(tmp_path, capsys):
    code, result = run({'dest': str(tmp_path / 'x.html'), 'lease_max': 'soon'}, FakeClient('healthy'), capsys)
    assert code == 1 and result['msg'].startswith('Invalid lease_max')
