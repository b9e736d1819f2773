# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU waitlist's plan on recorded objects: healthy.json (3 nodes x 8 GPUs), every GPU held by a seat claim
with a lease, and seats in line as can-has-gpu makes them (gated holder pods with the request annotated)."""

from __future__ import annotations

import copy
import datetime
import json
import pathlib

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.dra import collect as dra_collect
from ansible_collections.dralab.workshop.plugins.module_utils.seat import waitlist
from ansible_collections.dralab.workshop.plugins.module_utils.seat.reaper import reaper_plan
from ansible_collections.dralab.workshop.plugins.module_utils.values import (
    MANAGED_BY, MANAGED_BY_LABEL, SEAT_LABEL, WAITLIST_GATE, format_time)

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / 'fixtures' / 'dra'
NOW = datetime.datetime(2026, 10, 28, 10, 0, tzinfo=datetime.timezone.utc)
DRIVER = 'gpu.example.com'
NODES = ('node1', 'node2', 'node3')
LEASE_MAX = 8 * 3600


def at(minutes):
    return format_time(NOW + datetime.timedelta(minutes=minutes))


def seat_ns(name):
    return {'metadata': {'name': name, 'labels': {SEAT_LABEL: name, MANAGED_BY_LABEL: MANAGED_BY}}}


def holding(seat, node, device, lease_ends_in):
    """A seat's claim holding one GPU, its lease ending in lease_ends_in minutes."""
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
            'metadata': {'name': 'gpu-held', 'namespace': seat, 'uid': 'uid-%s' % seat, 'creationTimestamp': at(-60),
                         'annotations': {'dralab.workshop/lease-expires': at(lease_ends_in)}},
            'spec': {'devices': {'requests': [{'name': 'gpu', 'exactly': {
                'deviceClassName': DRIVER, 'allocationMode': 'ExactCount', 'count': 1}}]}},
            'status': {'allocation': {'devices': {'results': [
                {'request': 'gpu', 'driver': DRIVER, 'pool': node, 'device': device}]}}}}


def place(seat, claim, joined, device_class=DRIVER, renewed=None, count=1):
    """A seat's place in line: the gated holder pod can-has-gpu makes, joined minutes from NOW (negative: ago)."""
    annotations = {waitlist.REQUEST_ANNOTATION: json.dumps({'deviceClassName': device_class, 'count': count,
                                                            'selectors': []})}
    if renewed is not None:
        annotations[waitlist.RENEWED_ANNOTATION] = at(renewed)
    else:
        annotations[waitlist.RENEWED_ANNOTATION] = at(0)
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': '%s-holder' % claim, 'namespace': seat, 'uid': 'pod-%s-%s' % (seat, claim),
                         'creationTimestamp': at(joined), 'annotations': annotations},
            'spec': {'schedulingGates': [{'name': WAITLIST_GATE}],
                     'resourceClaims': [{'name': 'gpu', 'resourceClaimName': claim}],
                     'containers': [{'name': 'holder', 'image': 'busybox'}]}}


@pytest.fixture(name='lab')
def lab_fixture():
    """healthy.json's devices and nodes; seats user01..user40; user01..user24 each hold one GPU, their leases ending
    1..24 minutes from now (user01 first)."""
    raw = json.loads((FIXTURES / 'healthy.json').read_text())
    lab = dict((key, copy.deepcopy(raw[path]['items'])) for key, path in dra_collect.LIST_PATHS)
    seats = ['user%02d' % n for n in range(1, 41)]
    lab['namespaces'] = [seat_ns(s) for s in seats]
    lab['seat_namespaces'] = {s: s for s in seats}
    lab['claims'] = [holding(seats[n], NODES[n // 8], 'gpu-%d' % (n % 8), n + 1) for n in range(24)]
    lab['pods'] = []
    lab['quotas'] = []
    return lab


def plan(lab, turns=None, now=NOW, **kwargs):
    turns = {} if turns is None else turns
    return waitlist.keeper_plan(lab, now, turns, LEASE_MAX, **kwargs), turns


def release(lab, seat):
    lab['claims'] = [c for c in lab['claims'] if c['metadata']['namespace'] != seat]


def test_the_line_is_in_arrival_order_with_the_lease_ends_as_estimates(lab):
    lab['pods'] = [place('user27', 'gpu-c', -1), place('user25', 'gpu-a', -3), place('user26', 'gpu-b', -2)]
    result, turns = plan(lab)
    assert result['give'] == [] and result['drop'] == [] and turns == {}
    assert [(e['seat'], e['position']) for e in result['line']] == [('user25', 1), ('user26', 2), ('user27', 3)]
    # The first in line waits for the first lease end (user01's, in 1 minute), the third for the third.
    assert [(e['estimate'], e['estimate_seat']) for e in result['line']] == [
        (at(1), 'user01'), (at(2), 'user02'), (at(3), 'user03')]
    rows = waitlist.line_rows(result['line'])
    assert rows[0] == {'seat': 'user25', 'namespace': 'user25', 'pod': 'gpu-a-holder', 'device_class': DRIVER,
                       'count': 1, 'capacity': {}, 'position': 1, 'since': at(-3), 'estimate': at(1), 'estimate_seat': 'user01'}


def test_a_released_gpu_goes_to_the_first_in_line_and_to_nobody_else(lab):
    lab['pods'] = [place('user26', 'gpu-b', -2), place('user25', 'gpu-a', -3)]
    release(lab, 'user05')  # node1 gpu-4
    result, turns = plan(lab)
    assert [(e['seat'], e['devices']) for e in result['give']] == [('user25', [(DRIVER, 'node1', 'gpu-4')])]
    assert [(e['seat'], e['position']) for e in result['line']] == [('user26', 1)]
    assert set(turns) == {('user25', 'gpu-a-holder')}
    # Next pass: the gate is gone, the claim not made yet: the GPU stays counted as user25's.
    lab['pods'][1]['spec']['schedulingGates'] = []
    again, turns = plan(lab, turns)
    assert again['give'] == [] and again['drop'] == []
    assert [(e['seat'], e['position']) for e in again['line']] == [('user26', 1)]
    # The scheduler allocates user25's claim: the turn is taken and forgotten.
    lab['claims'].append(holding('user25', 'node1', 'gpu-4', 120))
    lab['claims'][-1]['metadata']['name'] = 'gpu-a'
    taken, turns = plan(lab, turns)
    assert turns == {} and taken['give'] == []


def test_two_free_gpus_go_to_the_first_two_each_a_different_gpu(lab):
    lab['pods'] = [place('user25', 'gpu-a', -3), place('user26', 'gpu-b', -2), place('user27', 'gpu-c', -1)]
    release(lab, 'user03')
    release(lab, 'user10')
    result, _turns = plan(lab)
    given = {e['seat']: e['devices'][0] for e in result['give']}
    assert set(given) == {'user25', 'user26'}
    assert given['user25'] != given['user26']
    assert set(given.values()) == {(DRIVER, 'node1', 'gpu-2'), (DRIVER, 'node2', 'gpu-1')}
    assert [(e['seat'], e['position']) for e in result['line']] == [('user27', 1)]


def test_a_lease_end_hands_the_gpu_to_the_next_in_line(lab):
    lab['pods'] = [place('user25', 'gpu-a', -3)]
    later = NOW + datetime.timedelta(minutes=1, seconds=5)  # user01's lease has ended
    released = reaper_plan(lab['seat_namespaces'], lab['claims'], lab['pods'], later, LEASE_MAX)
    assert [a['seat'] for a in released] == ['user01']
    release(lab, 'user01')
    result, _turns = plan(lab, now=later)
    assert [(e['seat'], e['devices']) for e in result['give']] == [('user25', [(DRIVER, 'node1', 'gpu-0')])]


def test_a_missed_turn_is_dropped_and_the_gpu_goes_to_the_next(lab):
    lab['pods'] = [place('user25', 'gpu-a', -3), place('user26', 'gpu-b', -2)]
    release(lab, 'user05')
    first, turns = plan(lab)
    assert [e['seat'] for e in first['give']] == ['user25']
    lab['pods'][0]['spec']['schedulingGates'] = []  # the keeper removed the gate; user25 never makes its claim
    late = NOW + datetime.timedelta(seconds=waitlist.DEFAULT_TURN_SECONDS + 1)
    lab['pods'][0]['metadata']['annotations'][waitlist.RENEWED_ANNOTATION] = format_time(late)
    lab['pods'][1]['metadata']['annotations'][waitlist.RENEWED_ANNOTATION] = format_time(late)
    second, turns = plan(lab, turns, now=late)
    assert [(e['seat'], e['reason']) for e in second['drop']] == [
        ('user25', 'did not take its turn within %ds' % waitlist.DEFAULT_TURN_SECONDS)]
    assert [(e['seat'], e['devices']) for e in second['give']] == [('user26', [(DRIVER, 'node1', 'gpu-4')])]
    assert set(turns) == {('user26', 'gpu-b-holder')}


def test_a_reset_empties_the_line_and_forgets_its_turns(lab):
    lab['pods'] = [place('user25', 'gpu-a', -3), place('user26', 'gpu-b', -2)]
    release(lab, 'user05')
    _first, turns = plan(lab)
    assert turns
    lab['pods'] = []  # the reset deleted the seats' pods and claims
    lab['claims'] = []
    result, turns = plan(lab, turns)
    assert result == {'give': [], 'drop': [], 'line': []} and turns == {}


def test_a_place_whose_can_has_gpu_stopped_renewing_leaves_the_line(lab):
    lab['pods'] = [place('user25', 'gpu-a', -10, renewed=-2), place('user26', 'gpu-b', -9)]
    result, _turns = plan(lab)
    assert [e['seat'] for e in result['drop']] == ['user25']
    assert 'stopped renewing' in result['drop'][0]['reason']
    assert [(e['seat'], e['position']) for e in result['line']] == [('user26', 1)]


def test_each_class_has_its_own_line(lab):
    lab['pods'] = [place('user25', 'gpu-a', -3, device_class='gpu-40gi.example.com'),
                   place('user26', 'gpu-b', -2), place('user27', 'gpu-c', -1, device_class='gpu-40gi.example.com')]
    classes = {c['metadata']['name'] for c in lab['device_classes']}
    if 'gpu-40gi.example.com' not in classes:
        other = copy.deepcopy(lab['device_classes'][0])
        other['metadata']['name'] = 'gpu-40gi.example.com'
        lab['device_classes'].append(other)
    result, _turns = plan(lab)
    assert [(e['seat'], e['device_class'], e['position']) for e in result['line']] == [
        ('user25', 'gpu-40gi.example.com', 1), ('user26', DRIVER, 1), ('user27', 'gpu-40gi.example.com', 2)]


def test_a_seat_at_its_quota_keeps_its_place_but_counts_for_nobody(lab):
    lab['quotas'] = [{'metadata': {'name': 'dralab-seat-quota', 'namespace': 'user01'},
                      'spec': {'hard': {'count/resourceclaims.resource.k8s.io': '1'}},
                      'status': {'hard': {'count/resourceclaims.resource.k8s.io': '1'},
                                 'used': {'count/resourceclaims.resource.k8s.io': '1'}}}]
    lab['pods'] = [place('user01', 'gpu-x', -5), place('user25', 'gpu-a', -3)]
    release(lab, 'user10')
    result, _turns = plan(lab)
    assert [e['seat'] for e in result['give']] == ['user25']
    assert [(e['seat'], e['position'], e['reason']) for e in result['line']] == [('user01', None, 'seat_at_quota')]


def test_one_open_turn_per_seat(lab):
    lab['pods'] = [place('user25', 'gpu-a', -3), place('user25', 'gpu-b', -2), place('user26', 'gpu-c', -1)]
    release(lab, 'user03')
    release(lab, 'user10')
    result, _turns = plan(lab)
    assert sorted(e['seat'] for e in result['give']) == ['user25', 'user26']


def test_a_place_with_its_claim_made_already_is_dropped(lab):
    lab['pods'] = [place('user25', 'gpu-a', -3)]
    made = holding('user25', 'node1', 'gpu-0', 60)
    made['metadata']['name'] = 'gpu-a'
    del made['status']
    lab['claims'].append(made)
    result, _turns = plan(lab)
    assert [(e['seat'], e['reason']) for e in result['drop']] == [('user25', 'a claim gpu-a exists already')]


def test_what_is_in_no_line(lab):
    outside = place('dra-demo', 'gpu-z', -9)
    unreadable = place('user30', 'gpu-y', -8)
    unreadable['metadata']['annotations'][waitlist.REQUEST_ANNOTATION] = '{"count": 0}'
    ungated = place('user31', 'gpu-w', -7)
    ungated['spec']['schedulingGates'] = []
    lab['pods'] = [outside, unreadable, ungated]
    assert waitlist.waiting_entries(lab['seat_namespaces'], lab['pods']) == []
    assert waitlist.waited_request({'metadata': {'annotations': {waitlist.REQUEST_ANNOTATION: 'not json'}}}) is None


def test_the_trial_claim_is_the_claim_can_has_gpu_makes():
    entry = {'namespace': 'user25', 'claim': 'gpu-a', 'device_class': DRIVER, 'count': 2,
             'selectors': ["device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"],
             'uid': 'pod-1'}
    trial = waitlist.trial_claim(entry)
    exactly = trial['spec']['devices']['requests'][0]['exactly']
    assert exactly == {'deviceClassName': DRIVER, 'allocationMode': 'ExactCount', 'count': 2,
                       'selectors': [{'cel': {'expression': entry['selectors'][0]}}]}
    assert 'uid' not in trial['metadata']  # checked against the seat's quota like a claim not made yet


def shared(lab):
    """Every GPU of the lab shareable (consumable capacity), as the example driver publishes them then."""
    for rslice in lab['slices']:
        for device in rslice['spec'].get('devices') or []:
            device['allowMultipleAllocations'] = True
            device['capacity'] = {
                'memory': {'value': '80Gi', 'requestPolicy': {'default': '80Gi', 'validRange': {
                    'min': '1Gi', 'step': '1Gi', 'max': '80Gi'}}},
                'compute': {'value': '100', 'requestPolicy': {'default': '100', 'validRange': {
                    'min': '1', 'step': '1', 'max': '100'}}}}
    lab['device_classes'].append({'metadata': {'name': 'gpu-shared.example.com'}, 'spec': {'selectors': [
        {'cel': {'expression': "device.driver == 'gpu.example.com' && device.allowMultipleAllocations == true"}}]}})
    return lab


def share_place(seat, claim, joined, memory='20Gi', compute='25'):
    pod = place(seat, claim, joined, device_class='gpu-shared.example.com')
    pod['metadata']['annotations'][waitlist.REQUEST_ANNOTATION] = json.dumps({
        'deviceClassName': 'gpu-shared.example.com', 'count': 1, 'selectors': [],
        'capacity': {'memory': memory, 'compute': compute}})
    return pod


def test_shares_in_line_fill_a_card_exactly_and_the_rest_wait(lab):
    shared(lab)
    release(lab, 'user05')  # node1 gpu-4 is free: room for four 20Gi shares
    lab['pods'] = [share_place('user%02d' % (25 + n), 'gpu-s%d' % n, -10 + n) for n in range(6)]
    result, turns = plan(lab)
    assert [e['seat'] for e in result['give']] == ['user25', 'user26', 'user27', 'user28']
    assert {tuple(e['devices']) for e in result['give']} == {((DRIVER, 'node1', 'gpu-4'),)}
    assert [(e['seat'], e['position']) for e in result['line']] == [('user29', 1), ('user30', 2)]
    # The next pass counts the four open turns (gates removed, claims not made yet) as holding the card.
    for pod in lab['pods'][:4]:
        pod['spec']['schedulingGates'] = []
    again, _turns = plan(lab, turns)
    assert again['give'] == [] and [e['seat'] for e in again['line']] == ['user29', 'user30']


def test_a_share_larger_than_any_card_is_in_no_ones_way(lab):
    shared(lab)
    release(lab, 'user05')
    lab['pods'] = [share_place('user25', 'gpu-big', -3, memory='100Gi', compute='100'),
                   share_place('user26', 'gpu-s', -2)]
    result, _turns = plan(lab)
    assert [e['seat'] for e in result['give']] == ['user26']
    assert [(e['seat'], e['verdict']) for e in result['line']] == [('user25', 'never_fits')]


def test_a_reset_of_some_seats_hands_their_gpus_to_the_line_in_order(lab):
    lab['pods'] = [place('user25', 'gpu-a', -3), place('user26', 'gpu-b', -2), place('user27', 'gpu-c', -1)]
    for seat in ('user07', 'user08'):  # reset.yml -e lab_reset_seats=[user07,user08]: their claims are deleted
        release(lab, seat)
    result, _turns = plan(lab)
    assert [(e['seat'], e['devices']) for e in result['give']] == [
        ('user25', [(DRIVER, 'node1', 'gpu-6')]), ('user26', [(DRIVER, 'node1', 'gpu-7')])]
    assert [(e['seat'], e['position']) for e in result['line']] == [('user27', 1)]


def test_the_lab_line_says_whose_turn_it_is_and_who_waits_in_order(lab):
    release(lab, 'user01')
    lab['pods'] = [place('user26', 'gpu-b', -2), place('user25', 'gpu-a', -3), place('user27', 'gpu-c', -1)]
    rows = waitlist.lab_line(lab, NOW, LEASE_MAX)
    assert [(r['seat'], r['position'], r['estimate_seat']) for r in rows] == [
        ('user25', 0, None), ('user26', 1, 'user02'), ('user27', 2, 'user03')]
    # The lab line opens no turn: the keeper's own plan still gives user25 its GPU.
    assert [e['seat'] for e in plan(lab)[0]['give']] == ['user25']


def test_places_the_keeper_would_have_dropped_long_ago_say_it_is_not_running(lab):
    lab['pods'] = [place('user25', 'gpu-a', -10, renewed=-3), place('user26', 'gpu-b', -9, renewed=-2.5),
                   place('user27', 'gpu-c', -8)]
    problems = waitlist.line_problems(lab, NOW)
    assert len(problems) == 1
    problem = problems[0]
    assert problem['type'] == 'waitlist_not_kept' and problem['severity'] == 'error'
    assert problem['pods'] == ['user25/gpu-a-holder', 'user26/gpu-b-holder']
    assert problem['reason'].startswith('2 places in the GPU waitlist (user25 and user26) are still there 3m after')
    assert 'systemctl status dralab-lease-reaper' in problem['reason']


def test_a_place_just_past_its_renewal_is_the_keepers_to_drop_not_a_problem(lab):
    # 75 s after its last renewal the keeper drops it on its next pass; only well beyond is the keeper silent.
    lab['pods'] = [place('user25', 'gpu-a', -10, renewed=-1.5), place('user26', 'gpu-b', -9)]
    assert waitlist.line_problems(lab, NOW) == []
    lab['pods'] = [place('user25', 'gpu-a', -10, renewed=-2.5)]
    assert [p['pods'] for p in waitlist.line_problems(lab, NOW)] == [['user25/gpu-a-holder']]
