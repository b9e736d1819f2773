# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""board_page.render(): one self-contained page for the live board and the snapshot."""

from __future__ import annotations

import re

from ansible_collections.dralab.workshop.plugins.module_utils.board import state as board_model
from ansible_collections.dralab.workshop.plugins.module_utils.board import page as board_page

NOW = '2026-10-28T10:00:00Z'
HOSTILE = '</script><script>alert(1)</script><!--'


def board_with(claim_name='gpu-x7k2p', title='DRA lab'):
    board = board_model.build(now=NOW, title=title)
    board['nodes'] = [{'name': 'node1', 'ready': True, 'published': 1, 'expected': 1, 'devices': [{
        'device': 'gpu-0', 'pool': 'node1', 'node': 'node1', 'state': 'in_use', 'taints': [], 'memory': '80Gi',
        'shared': False, 'capacity': [], 'holders': [{
            'seat': 'user01', 'namespace': 'user01', 'claim': claim_name, 'in_use': True, 'pods': ['p'],
            'since': '2026-10-28T09:00:00Z', 'lease_until': '2026-10-28T11:00:00Z'}]}]}]
    return board


def test_the_snapshot_embeds_the_board_and_reads_back():
    board = board_with()
    page = board_page.render(board)
    assert page.startswith('<!DOCTYPE html>') and board_page.embedded(page) == board
    config = re.search(r'<script id="dralab-board-config" type="application/json">(.*?)</script>', page).group(1)
    assert config == '{"stream":""}', 'a snapshot opens no stream'
    assert "connect-src" not in page


def test_the_live_page_names_its_stream():
    page = board_page.render(board_with(), stream='/instructor/events')
    assert '{"stream":"/instructor/events"}' in page and "connect-src 'self'" in page
    assert 'new EventSource(config.stream + window.location.search)' in page


def test_the_page_needs_no_network():
    page = board_page.render(board_with(), stream='/events')
    assert not re.search(r'(src|href)\s*=', page), 'no external script, style or image'
    assert 'http://' not in page and 'https://' not in page and '@import' not in page
    assert "default-src 'none'" in page


def test_a_seats_words_cannot_end_the_script_or_become_html():
    page = board_page.render(board_with(claim_name=HOSTILE, title='<b>lab</b>'))
    assert HOSTILE not in page and '<script>alert' not in page and '<b>lab</b>' not in page
    assert page.count('</script>') == 3, 'only the page\'s own three scripts end'
    assert board_page.embedded(page)['nodes'][0]['devices'][0]['holders'][0]['claim'] == HOSTILE
    # The script builds text nodes only.
    assert 'innerHTML' not in board_page.SCRIPT and 'insertAdjacentHTML' not in board_page.SCRIPT
    assert 'document.write' not in board_page.SCRIPT


def test_embedded_of_something_else():
    assert board_page.embedded('<html></html>') is None
    assert board_page.embedded('') is None
