# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""board_snapshot end to end: a real AnsibleModule, the real collect, board and page, a fake API client.
The page is board-snapshot.html, the board's state beside it board-snapshot.json."""

from __future__ import annotations

import json
import os
import stat
from unittest import mock

import pytest

from ansible.module_utils import _internal as module_utils_internal
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.dralab.workshop.plugins.modules import board_snapshot
from test_dra_health import FakeClient

NOW = '2026-10-28T10:00:00Z'


def stored(dest):
    """The board's state kept beside the page dest."""
    return json.loads(dest.with_suffix('.json').read_text())


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
    assert stat.S_IMODE(dest.stat().st_mode) == stat.S_IMODE(dest.with_suffix('.json').stat().st_mode) == 0o600
    board = stored(dest)
    assert json.dumps(board, sort_keys=True, separators=(',', ':')) in dest.read_text(), 'the page draws that state'
    assert board['generated'] == NOW and len([t for n in board['nodes'] for t in n['devices']]) == 24
    before = dest.read_bytes()
    code, result = run({'dest': str(dest)}, FakeClient('healthy'), capsys, now='2026-10-28T10:05:00Z')
    assert code == 0 and result['changed'] is False and result['generated'] == NOW
    assert dest.read_bytes() == before
    # An hour on, user04's unused claim has become a problem: the lab's board changed.
    code, result = run({'dest': str(dest)}, FakeClient('healthy'), capsys, now='2026-10-28T11:00:00Z')
    assert result['changed'] is True and stored(dest)['summary']['errors'] == 1
    code, result = run({'dest': str(dest)}, FakeClient('broken'), capsys, now='2026-10-28T11:00:00Z')
    assert result['changed'] is True and stored(dest)['summary']['devices'] == 22


def test_changed_compares_the_states_not_the_pages(tmp_path, capsys):
    dest = tmp_path / 'board-snapshot.html'
    run({'dest': str(dest)}, FakeClient('healthy'), capsys)
    dest.write_text(dest.read_text() + '<!-- an instructor\'s note -->')
    os.chmod(dest, 0o600)
    code, result = run({'dest': str(dest)}, FakeClient('healthy'), capsys, now='2026-10-28T10:05:00Z')
    assert code == 0 and result['changed'] is False and 'note' in dest.read_text()
    # Without its state the page is written again, the state with it.
    dest.with_suffix('.json').unlink()
    code, result = run({'dest': str(dest)}, FakeClient('healthy'), capsys, now='2026-10-28T10:05:00Z')
    assert result['changed'] is True and 'note' not in dest.read_text()
    assert stored(dest)['generated'] == result['generated'] == '2026-10-28T10:05:00Z'
    # A state file of the wrong mode is mended, and that is a change.
    os.chmod(dest.with_suffix('.json'), 0o644)
    code, result = run({'dest': str(dest)}, FakeClient('healthy'), capsys, now='2026-10-28T10:06:00Z')
    assert result['changed'] is True and stat.S_IMODE(dest.with_suffix('.json').stat().st_mode) == 0o600


def test_a_folder_it_cannot_write_fails_with_what_to_do(tmp_path, capsys):
    (tmp_path / 'artifacts').write_text('a file where the folder should be')
    dest = tmp_path / 'artifacts' / 'board.html'
    code, result = run({'dest': str(dest)}, FakeClient('healthy'), capsys)
    assert code == 1 and result['msg'].startswith('Cannot write the board snapshot %s and its state %s: ' % (
        dest, dest.with_suffix('.json')))
    assert result['msg'].endswith('or set dest to a path in a folder it may write to.')


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
