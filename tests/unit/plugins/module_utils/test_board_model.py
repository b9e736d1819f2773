# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The board's state (board_build.build(), arranged by board_model.arrange()) on recorded resource.k8s.io/v1
objects: tiles, holders, leases, capacity, waiting claims, problems, the seats table, the public view without
people, and the times that stand for ages in its sentences."""

from __future__ import annotations

import copy
import json

from ansible_collections.dralab.workshop.plugins.module_utils.board import build as board_build
from ansible_collections.dralab.workshop.plugins.module_utils.board import page as board_page
from ansible_collections.dralab.workshop.plugins.module_utils.board import state as board_model
from ansible_collections.dralab.workshop.plugins.module_utils.dra import explain as dra_explain
from ansible_collections.dralab.workshop.plugins.module_utils.dra import health as dra_health
from ansible_collections.dralab.workshop.plugins.module_utils.dra import report as dra_report
from ansible_collections.dralab.workshop.plugins.module_utils.board import sentences as board_sentences
from test_dra_model import LABELS, NOW, broken_fixture, crash, find, healthy_fixture, plugin_of  # pylint: disable=unused-import  # noqa: F401


BOARD_OPTIONS = ('lease_max', 'people', 'activity', 'title')


def build(data, now=NOW, **options):
    """The board of data at now: options are the board's (BOARD_OPTIONS) and the judgement's."""
    board = dict((key, options.pop(key)) for key in BOARD_OPTIONS if key in options)
    return board_build.build(data, now=now, board=board, **options)['board']


def text(board, sentence):
    """A sentence of the board as its page writes it at the board's time."""
    return board_page.words(sentence, board['generated'])


def tiles(board):
    return dict(((t['node'], t['device']), t) for node in board['nodes'] for t in node['devices'])


def seat_row(board, seat):
    return next(s for s in board['seats'] if s['seat'] == seat)


def test_one_tile_per_published_device_with_its_holder(healthy):
    board = build(healthy)
    by_key = tiles(board)
    assert len(by_key) == 24 and [n['name'] for n in board['nodes']] == ['node1', 'node2', 'node3']
    assert [t['device'] for t in board['nodes'][0]['devices']] == ['gpu-%d' % i for i in range(8)]
    states = [t['state'] for t in by_key.values()]
    assert (states.count('in_use'), states.count('allocated'), states.count('free')) == (4, 1, 19)
    assert board['summary']['devices'] == 24 and board['summary']['devices_free'] == 19
    tile = by_key[('node1', 'gpu-0')]
    assert tile['state'] == 'in_use' and tile['memory'] == '80Gi' and not tile['shared']
    [holder] = tile['holders']
    claim = find(healthy['claims'], 'user01', 'gpu-claim')
    assert holder['seat'] == 'user01' and holder['claim'] == 'gpu-claim' and holder['in_use']
    assert holder['since'] == claim['metadata']['creationTimestamp'] == '2026-10-28T09:34:00Z'
    # No annotation: the lease ends at creation + the lab's maximum (8h by default).
    assert holder['lease_until'] == '2026-10-28T17:34:00Z'
    # Allocated without a live pod: "allocated", not "in use".
    assert by_key[('node2', 'gpu-5')]['state'] == 'allocated'
    assert by_key[('node2', 'gpu-5')]['holders'][0]['in_use'] is False


def test_the_states_are_those_of_dra_health(healthy):
    board = build(healthy)
    report = dra_health.analyze(now=NOW, **healthy)
    held = dict(((d['pool'], d['device']), row) for row in report['claims'] for d in row['devices'])
    for tile in tiles(board).values():
        row = held.get((tile['pool'], tile['device']))
        if row is None:
            assert tile['state'] == 'free' and not tile['holders']
        else:
            assert tile['state'] == ('in_use' if row['holder_pods_alive'] else 'allocated'), tile
            assert tile['holders'][0]['pods'] == row['holder_pods_alive']


def test_a_claim_outside_the_seats_has_no_seat_and_no_lease(healthy):
    [holder] = tiles(build(healthy))[('node1', 'gpu-1')]['holders']
    assert holder['namespace'] == 'dra-demo' and holder['seat'] is None and holder['lease_until'] is None


def test_the_lease_is_the_annotation_but_never_past_the_maximum(healthy):
    claim = find(healthy['claims'], 'user01', 'gpu-claim')
    claim['metadata']['annotations'] = {'dralab.workshop/lease-expires': '2026-10-28T10:34:00Z'}
    holder = tiles(build(healthy))[('node1', 'gpu-0')]['holders'][0]
    assert holder['lease_until'] == '2026-10-28T10:34:00Z'
    # A seat may edit its annotation; the creation time caps it (lease_max 2h here).
    claim['metadata']['annotations'] = {'dralab.workshop/lease-expires': '2027-01-01T00:00:00Z'}
    holder = tiles(build(healthy, lease_max='2h'))[('node1', 'gpu-0')]['holders'][0]
    assert holder['lease_until'] == '2026-10-28T11:34:00Z'


def test_the_seat_comes_from_the_namespace_labels_only(healthy):
    claim = find(healthy['claims'], 'user01', 'gpu-claim')
    claim['metadata'].setdefault('labels', {})['dralab.workshop/seat'] = 'user99'
    assert tiles(build(healthy))[('node1', 'gpu-0')]['holders'][0]['seat'] == 'user01'
    # A namespace that only carries the seat label (not ours) is no seat.
    namespace = next(n for n in healthy['namespaces'] if n['metadata']['name'] == 'user01')
    del namespace['metadata']['labels']['app.kubernetes.io/managed-by']
    board = build(healthy)
    assert tiles(board)[('node1', 'gpu-0')]['holders'][0]['seat'] is None
    assert 'user01' not in [s['seat'] for s in board['seats']]


def test_shared_devices_show_capacity_used_and_free(broken):
    for name, amount in (('share-a', '10Gi'), ('share-b', '20Gi')):
        claim = find(broken['claims'], name.replace('share-a', 'user13').replace('share-b', 'user14'), name)
        for result in claim['status']['allocation']['devices']['results']:
            result['consumedCapacity'] = {'memory': amount, 'compute': '25'}
    tile = tiles(build(broken))[('node1', 'gpu-7')]
    assert tile['shared'] and [h['seat'] for h in tile['holders']] == ['user13', 'user14']
    capacity = dict((c['name'], c) for c in tile['capacity'])
    assert capacity['memory'] == {'name': 'memory', 'total': '80Gi', 'used': '30Gi', 'free': '50Gi'}
    assert capacity['compute'] == {'name': 'compute', 'total': '100', 'used': '50', 'free': '50'}
    # A device that is not shareable shows no capacity rows.
    assert tiles(build(broken))[('node2', 'gpu-0')]['capacity'] == []


def test_a_tainted_device_is_tainted_whoever_holds_it(healthy):
    piece = next(s for s in healthy['slices'] if s['spec']['nodeName'] == 'node1')
    device = next(d for d in piece['spec']['devices'] if d['name'] == 'gpu-0')
    device['taints'] = [{'key': 'example.com/broken', 'value': 'ecc', 'effect': 'NoSchedule'}]
    board = build(healthy)
    tile = tiles(board)[('node1', 'gpu-0')]
    assert tile['state'] == 'tainted' and tile['taints'] == ['example.com/broken=ecc:NoSchedule']
    assert tile['holders'][0]['seat'] == 'user01' and board['summary']['devices_tainted'] == 1


def test_waiting_claims_carry_the_explainers_sentence(broken):
    board = build(broken)
    explained = dict((e['claim'], e) for e in dra_explain.explain_pending(
        device_classes=broken['device_classes'], slices=broken['slices'], claims=broken['claims'],
        pods=broken['pods'], nodes=broken['nodes'], namespaces=broken['namespaces'], now=NOW))
    assert [(p['seat'], p['claim']) for p in board['pending']] == [
        ('user16', 'gpu-claim'), ('user17', 'train-1-gpu-bs5sl'), ('user18', 'unused-claim'), ('user19', 'huge-claim')]
    for row in board['pending']:
        answer = explained['%s/%s' % (row['namespace'], row['claim'])]
        assert (row['reason'], text(board, row['sentence'])) == (answer['reason'], answer['sentence'])
    huge = board['pending'][-1]
    assert huge['reason'] == 'no_such_class' and 'gpu-huge.example.com' in text(board, huge['sentence'])
    assert huge['since'] == '2026-10-28T09:58:00Z'


def test_the_pending_claims_are_explained_once_for_the_report_and_the_board(broken, monkeypatch):
    """dra_health's report and the board of its snapshot share one explanation of the pending claims."""
    answers = dra_explain.explain_pending(
        device_classes=broken['device_classes'], slices=broken['slices'], claims=broken['claims'],
        pods=broken['pods'], nodes=broken['nodes'], namespaces=broken['namespaces'], now=NOW)
    own = build(broken)
    calls = []
    monkeypatch.setattr(dra_explain, 'explain_pending', lambda **kwargs: calls.append(kwargs) or answers)
    lab = board_build.build(broken, now=NOW, board={})
    assert len(calls) == 1 and lab['board'] == own
    explained = [p for p in lab['report']['problems'] if p.get('explain_sentence')]
    assert explained and all(p['reason'].endswith(p['explain_sentence']) for p in explained)
    reworded = [dict(answer, sentence='as the explainer said') for answer in answers]
    monkeypatch.setattr(dra_explain, 'explain_pending', lambda **kwargs: reworded)
    assert {text(own, row['sentence']) for row in build(broken)['pending']} == {'as the explainer said'}


def test_the_problems_are_dra_healths(broken):
    board = build(broken)
    report = dra_health.analyze(now=NOW, **broken)
    assert [(p['severity'], p['type'], p['object'], text(board, p['reason'])[:40]) for p in board['problems']] == \
        [(p['severity'], p['type'], p['object'], p['reason'][:40]) for p in report['problems']]
    assert (board['summary']['errors'], board['summary']['warnings']) == (10, 7) and not board['healthy']
    # The node that publishes nothing still has its section (with no tile).
    node3 = next(n for n in board['nodes'] if n['name'] == 'node3')
    assert node3['devices'] == [] and node3['expected'] == 8


def test_the_seats_table(broken):
    board = build(broken, activity={'user16': '2026-10-28T09:59:30Z', 'user07': '2026-10-01T00:00:00Z',
                                    'kube-system': '2026-10-28T09:59:59Z'})
    assert [s['seat'] for s in board['seats']] == ['user%02d' % i for i in range(7, 23)]
    user11 = seat_row(board, 'user11')
    assert (user11['holds'], user11['devices'], user11['pending']) == (1, ['gpu-2 on node2'], 0)
    user16 = seat_row(board, 'user16')
    assert (user16['holds'], user16['pending']) == (0, 1)
    # Last activity: the newest of its claims' and pods' creation and the changes the board saw there.
    assert user16['last_activity'] == '2026-10-28T09:59:30Z'
    assert seat_row(board, 'user07')['last_activity'] == '2026-10-28T07:00:00Z'
    assert board['summary']['seats'] == 16 and board['summary']['seats_holding'] == 12


def test_people_are_shown_to_the_instructor_only(healthy):
    claim = find(healthy['claims'], 'user01', 'gpu-claim')
    claim['metadata']['annotations'] = {'note': 'hunter2-secret'}
    board = build(healthy, people={'user01': 'Ada Lovelace', 'user02': 'Grace Hopper'})
    assert board['view'] == 'instructor' and seat_row(board, 'user01')['person'] == 'Ada Lovelace'
    shown = board_model.public(board)
    text = json.dumps(shown)
    assert shown['view'] == 'public' and 'Ada' not in text and 'Grace' not in text
    assert all('person' not in row for row in shown['seats'])
    assert seat_row(board, 'user01')['person'] == 'Ada Lovelace', 'public() must not change the instructor board'
    # Nothing a seat writes on its objects beyond names reaches a board.
    assert 'hunter2' not in json.dumps(board)


def test_the_same_lab_gives_the_same_board_at_another_time(healthy):
    first = build(healthy)
    later = build(healthy, now='2026-10-28T10:05:00Z')
    assert first['generated'] != later['generated'] and board_model.same_state(first, later)
    fewer = copy.deepcopy(healthy)
    fewer['claims'] = [c for c in fewer['claims'] if c['metadata']['namespace'] != 'user04']
    assert not board_model.same_state(first, build(fewer))


def test_an_age_that_moved_on_is_the_same_lab(broken):
    """health.yml writes the snapshot again only when the lab changed: five minutes later the stale claim's
    sentence names another age on the page, and the board's state is the same."""
    first = build(broken, now='2026-10-28T12:35:00Z')
    later = build(broken, now='2026-10-28T12:40:00Z')
    reasons = [(text(first, p['reason']), text(later, q['reason'])) for p, q in zip(first['problems'], later['problems'])
               if text(first, p['reason']) != text(later, q['reason'])]
    assert reasons and all('2h40m ago' in old and '2h45m ago' in new for old, new in reasons)
    assert board_model.same_state(first, later)
    assert dict(first, generated=None) == dict(later, generated=None), 'the state holds times, not ages'
    moved = copy.deepcopy(later)
    moved['problems'][0]['reason'] = [part.replace('node2', 'node3') if isinstance(part, str) else part
                                      for part in moved['problems'][0]['reason']]
    assert moved != later and not board_model.same_state(first, moved)


def test_a_stale_claims_age_is_its_creation_time(broken):
    board = build(broken, now='2026-10-28T12:35:00Z')
    [stale] = [p for p in board['problems'] if p['type'] == 'claim_allocated_unused'][:1]
    claim = find(broken['claims'], *stale['object'].split(' ')[1].split('/'))
    assert {'since': claim['metadata']['creationTimestamp']} in stale['reason']
    assert ' was created ' in stale['reason'][0] and stale['reason'][2].startswith(' ago and holds the GPU')


def test_the_explainers_holders_are_named_with_the_time_they_hold_since(healthy):
    """A claim that waits because every GPU is held names each holder "for 26m": the board keeps the holder
    claim's creation, and the page says the same words as the explainer at the board's time."""
    held = {('node1', 'gpu-0'), ('node1', 'gpu-1'), ('node2', 'gpu-3'), ('node2', 'gpu-5'), ('node3', 'gpu-2')}
    for piece in healthy['slices']:
        piece['spec']['devices'] = [d for d in piece['spec']['devices'] if (piece['spec']['pool']['name'], d['name']) in held]
    waiting = copy.deepcopy(find(healthy['claims'], 'user01', 'gpu-claim'))
    waiting['metadata'].update(name='waiting', uid='waiting-uid', creationTimestamp='2026-10-28T09:50:00Z')
    waiting['status'] = {}
    healthy['claims'].append(waiting)
    answer = next(a for a in dra_explain.explain_pending(now=NOW, lease_max='8h', **dict(
        (k, healthy[k]) for k in ('device_classes', 'slices', 'claims', 'pods', 'nodes', 'namespaces')))
        if a['claim'] == 'user01/waiting')
    assert answer['reason'] == 'all_matching_in_use' and ' for 26m' in answer['sentence'], answer['sentence']
    # The holder's lease end, as its tile shows it (the board's lease maximum, 8h by default).
    assert 'gpu-0 on node1 by user01/gpu-claim for 26m (lease until 2026-10-28T17:34:00Z)' in answer['sentence']
    board = build(healthy)
    assert tiles(board)[('node1', 'gpu-0')]['holders'][0]['lease_until'] == '2026-10-28T17:34:00Z'
    [row] = [p for p in board['pending'] if p['claim'] == 'waiting']
    held = [part['since'] for part in row['sentence'] if isinstance(part, dict)]
    assert '2026-10-28T09:34:00Z' in held and text(board, row['sentence']) == answer['sentence']
    later = build(healthy, now='2026-10-28T10:20:00Z')
    assert board_model.same_state(board, later) and ' for 46m' in text(later, row['sentence'])


def test_a_plugins_restart_is_kept_as_the_time_it_ended(healthy):
    crash(plugin_of(healthy, 'node2'), 1, '2026-10-28T09:58:00Z')
    first = build(healthy, plugin_labels=LABELS)
    later = build(healthy, plugin_labels=LABELS, now='2026-10-28T10:03:00Z')
    [problem] = [p for p in first['problems'] if p['type'] == 'driver_plugin_restarted']
    assert {'since': '2026-10-28T09:58:00Z'} in problem['reason'] and 'ended 2m ago (exit code 137' in text(first, problem['reason'])
    assert board_model.same_state(first, later) and 'ended 5m ago' in text(later, later['problems'][0]['reason'])


def test_parts_keep_the_text_and_mark_only_the_known_ages():
    phrase = ('gpu-3 on node1 by user07 for ', '12m', '', '2026-10-28T09:48:00Z')
    text_ = '1 GPU matches; it is in use: gpu-3 on node1 by user07 for 12m. Wait 12m.'
    parts = board_sentences.parts(text_, [phrase])
    assert parts == ['1 GPU matches; it is in use: gpu-3 on node1 by user07 for ', {'since': '2026-10-28T09:48:00Z'},
                     '. Wait 12m.']
    assert board_page.words(parts, NOW) == text_
    assert board_sentences.parts('no age here', [phrase]) == ['no age here']
    assert board_sentences.parts('', [phrase]) == []


def test_holder_phrases_find_what_parts_finds_in_one_pass():
    """The board's way for the explainer's holders (800 of them on 100 busy nodes) gives the parts of parts()."""
    phrases = [('gpu-%d on node%d by user%02d/gpu for ' % (d, n, d + n), '%dm' % (d + 1), ' (lease until 12:00)',
                '2026-10-28T09:%02d:00Z' % d) for n in range(1, 4) for d in range(8)]
    phrases.append(('gpu-0 on node9 in use outside the seats for ', '3h', '', '2026-10-28T07:00:00Z'))
    held = board_sentences.HolderPhrases(phrases)
    texts = ['24 GPUs match; all are in use: gpu-0 on node1 by user01/gpu for 1m (lease until 12:00), gpu-1 on node1 '
             'by user02/gpu for 2m (lease until 12:00), gpu-0 on node9 in use outside the seats for 3h, and 21 more.',
             'gpu-0 on node1 by user01/gpu for 1m (lease until 13:00): not the same lease, not an age to keep.',
             'for 1m', ' for ', '', 'no holder named for once', 'gpu-7 on node3 by user10/gpu for 8m (lease until 12:00)']
    for text_ in texts:
        assert held.parts(text_) == board_sentences.parts(text_, phrases), text_
    assert held.parts(texts[0]).count({'since': '2026-10-28T07:00:00Z'}) == 1
    assert len([p for p in held.parts(texts[0]) if isinstance(p, dict)]) == 3
    other = board_sentences.HolderPhrases([('claim a was created ', '3m', ' ago', '2026-10-28T09:57:00Z')])
    assert other.parts('claim a was created 3m ago') == board_sentences.parts(
        'claim a was created 3m ago', other.phrases)


def test_claims_that_share_the_explainers_rows_share_their_holders_phrases(monkeypatch):
    """9,000 claims waiting alike name the same holders: their phrases are made once, not once per claim."""
    calls = []
    real = board_sentences.holder_phrase
    monkeypatch.setattr(board_sentences, 'holder_phrase', lambda holder: calls.append(holder) or real(holder))
    rows = [{'holders': [{'device': 'gpu-%d' % d, 'node': 'node1', 'claim': 'user%02d/gpu' % d, 'seat': True,
                          'age': '%dm' % d, 'namespace': 'user%02d' % d} for d in range(1, 9)]}]
    claims = [{'metadata': {'namespace': 'user%02d' % d, 'name': 'gpu', 'creationTimestamp': '2026-10-28T09:00:00Z'}}
              for d in range(1, 9)]
    answers = [{'claim': 'load/c%d' % n, 'requests': rows} for n in range(50)]
    said = board_sentences.Sentences({'claims': claims, 'pods': []}, answers, NOW)
    for n in range(50):
        said.explained('load/c%d' % n, 'all are in use: gpu-1 on node1 by user01/gpu for 1m; pod c%d waits.' % n)
    assert len(calls) == 8
    assert said.explained('load/c3', 'all are in use: gpu-1 on node1 by user01/gpu for 1m; pod c3 waits.')[1] == {
        'since': '2026-10-28T09:00:00Z'}


def test_an_empty_lab(healthy):
    board = build({})
    assert board['nodes'] == [] and board['pending'] == [] and board['seats'] == []
    assert board['summary']['devices'] == 0 and board['healthy']
    json.dumps(board)


def _full_with_line(healthy):
    """healthy.json with every free GPU taken by user05 and user06 holding one each beyond, and three seats in line
    (gated holder pods of the GPU waitlist, as can-has-gpu makes them)."""
    from test_seat_waitlist import place  # pylint: disable=import-outside-toplevel
    data = copy.deepcopy(healthy)
    taken = {(r['pool'], r['device']) for c in data['claims']
             for r in ((c.get('status') or {}).get('allocation') or {}).get('devices', {}).get('results', [])}
    number = 0
    for node in ('node1', 'node2', 'node3'):
        for index in range(8):
            if (node, 'gpu-%d' % index) in taken:
                continue
            number += 1
            data['claims'].append({
                'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
                'metadata': {'name': 'fill-%d' % number, 'namespace': 'user05', 'uid': 'fill-%d' % number,
                             'creationTimestamp': '2026-10-28T09:00:00Z',
                             'annotations': {'dralab.workshop/lease-expires': '2026-10-28T10:%02d:00Z' % (10 + number)}},
                'spec': {'devices': {'requests': [{'name': 'gpu', 'exactly': {
                    'deviceClassName': 'gpu.example.com', 'allocationMode': 'ExactCount', 'count': 1}}]}},
                'status': {'allocation': {'devices': {'results': [
                    {'request': 'gpu', 'driver': 'gpu.example.com', 'pool': node, 'device': 'gpu-%d' % index}]}}}})
    data['pods'] += [place('user06', 'gpu-b', -2), place('user03', 'gpu-a', -3)]
    for pod in data['pods'][-2:]:
        pod['metadata']['annotations']['dralab.workshop/waiting-renewed'] = NOW
    return data


def test_the_board_shows_the_line_in_order_and_the_projector_without_who(healthy):
    board = build(_full_with_line(healthy))
    assert [(r['seat'], r['position'], r['device_class']) for r in board['line']] == [
        ('user03', 1, 'gpu.example.com'), ('user06', 2, 'gpu.example.com')]
    assert board['line'][0]['estimate'] and board['line'][0]['estimate_seat']
    assert board['summary']['waiting'] == 2
    shown = board_model.public(board)
    assert [(r['position'], sorted(r)) for r in shown['line']] == [
        (1, ['count', 'device_class', 'estimate', 'position', 'since']),
        (2, ['count', 'device_class', 'estimate', 'position', 'since'])]
    # dra_health's report has the same line, in its lines too.
    report = board_build.build(_full_with_line(healthy), now=NOW)['report']
    assert report['waitlist'] == board['line'] and report['summary']['waiting'] == 2
    lines = dra_report.report_lines(report)
    at = lines.index('GPU waitlist: 2 seats in line')
    assert lines[at + 1] == "  gpu.example.com: user03, user06; the next GPU about %s, when %s's lease ends" % (
        board['line'][0]['estimate'], board['line'][0]['estimate_seat'])
    # A place in line is no pod waiting for a missing claim: no problem is reported for it.
    assert not [p for p in board['problems'] if 'gpu-a' in p['object'] or 'gpu-b' in p['object']]


def test_a_free_gpu_shows_whose_turn_it_is(healthy):
    from test_seat_waitlist import place  # pylint: disable=import-outside-toplevel
    data = copy.deepcopy(healthy)
    data['pods'].append(place('user06', 'gpu-b', -2))
    data['pods'][-1]['metadata']['annotations']['dralab.workshop/waiting-renewed'] = NOW
    board = build(data)
    assert [(r['seat'], r['position']) for r in board['line']] == [('user06', 0)]
