# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""board_page.render(): one self-contained page for the live board and the snapshot."""

from __future__ import annotations

import datetime
import json
import re

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.board import build as board_build
from ansible_collections.dralab.workshop.plugins.module_utils.board import page as board_page
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_time, parse_time

NOW = '2026-10-28T10:00:00Z'
HOSTILE = '</script><script>alert(1)</script><!--'


def embedded(page):
    """The board a page carries for its script, or None."""
    match = re.search(r'<script id="dralab-board" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(match.group(1)) if match else None


def board_with(claim_name='gpu-x7k2p', title='DRA lab'):
    board = board_build.build({}, now=NOW, board=dict(title=title))['board']
    board['nodes'] = [{'name': 'node1', 'ready': True, 'published': 1, 'expected': 1, 'devices': [{
        'device': 'gpu-0', 'pool': 'node1', 'node': 'node1', 'state': 'in_use', 'taints': [], 'memory': '80Gi',
        'shared': False, 'capacity': [], 'holders': [{
            'seat': 'user01', 'namespace': 'user01', 'claim': claim_name, 'in_use': True, 'pods': ['p'],
            'since': '2026-10-28T09:00:00Z', 'lease_until': '2026-10-28T11:00:00Z'}]}]}]
    return board


def test_the_snapshot_embeds_the_board_and_reads_back():
    board = board_with()
    page = board_page.render(board)
    assert page.startswith('<!DOCTYPE html>') and embedded(page) == board
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
    assert embedded(page)['nodes'][0]['devices'][0]['holders'][0]['claim'] == HOSTILE
    # The script builds text nodes only.
    assert 'innerHTML' not in board_page.SCRIPT and 'insertAdjacentHTML' not in board_page.SCRIPT
    assert 'document.write' not in board_page.SCRIPT


def test_a_sentence_names_its_ages_against_the_clock_of_the_page():
    sentence = ['claim user07/old-gpu was created ', {'since': '2026-10-28T07:20:00Z'}, ' ago and holds the GPU.']
    assert board_page.words(sentence, NOW) == 'claim user07/old-gpu was created 2h40m ago and holds the GPU.'
    assert board_page.words(sentence, '2026-10-28T10:05:00Z') == \
        'claim user07/old-gpu was created 2h45m ago and holds the GPU.'
    assert board_page.words([], NOW) == ''


@pytest.mark.parametrize('seconds, text', [(45, '45s'), (119, '119s'), (720, '12m'), (3 * 3600, '3h'),
                                           (3 * 3600 + 300, '3h5m'), (50 * 3600, '2d2h'), (8 * 86400, '8d')])
def test_the_script_writes_a_sentences_ages_in_the_reports_words(seconds, text):
    """The page's script and words() name an age as values.format_age does (the sentences said it so)."""
    since = '2026-10-20T00:00:00Z'
    now = format_time(parse_time(since) + datetime.timedelta(seconds=seconds))
    assert board_page.words([{'since': since}], now) == text
    assert "duration((now() - Date.parse(part.since)) / 1000, true)" in board_page.SCRIPT
    assert "exact && days < 7 && hours % 24 ? (hours % 24) + 'h' : ''" in board_page.SCRIPT


def test_the_page_writes_the_sentences_with_words():
    assert 'words(p.sentence)' in board_page.SCRIPT and 'words(p.reason)' in board_page.SCRIPT
