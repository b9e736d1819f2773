# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dra_explain on recorded objects: healthy.json (3 nodes x 8 GPUs, 5 claims) plus explain.json (seed 004 demo 3)."""

from __future__ import annotations

import copy
import json
import pathlib

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel as dra_cel
from ansible_collections.dralab.workshop.plugins.module_utils.dra import collect as dra_collect
from ansible_collections.dralab.workshop.plugins.module_utils.dra import explain as dra_explain
from ansible_collections.dralab.workshop.plugins.module_utils.dra import explain_claim

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / 'fixtures' / 'dra'
NOW = '2026-10-28T10:00:00Z'
DRIVER = 'gpu.example.com'
MEMORY = "device.capacity['gpu.example.com'].memory.compareTo(quantity('%s')) >= 0"
INDEX = "device.attributes['gpu.example.com'].index %s"


def _items(raw, path):
    return copy.deepcopy(raw[path]['items'])


@pytest.fixture(name='lab')
def lab_fixture():
    raw = json.loads((FIXTURES / 'healthy.json').read_text())
    extra = json.loads((FIXTURES / 'explain.json').read_text())
    lab = dict((key, _items(raw, path)) for key, path in dra_collect.LIST_PATHS)
    lab['claims'] += extra['claims']
    lab['pods'] += extra['pods']
    lab['quotas'] = extra['quotas']
    return lab


def claim(name, namespace='user05', requests=None, constraints=None, uid=True, created='2026-10-28T09:55:00Z'):
    meta = {'name': name, 'namespace': namespace, 'creationTimestamp': created}
    if uid:
        meta['uid'] = 'uid-%s-%s' % (namespace, name)
    devices = {'requests': requests or [request()]}
    if constraints:
        devices['constraints'] = constraints
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim', 'metadata': meta,
            'spec': {'devices': devices}}


def request(name='gpu', selectors=(), count=1, mode='ExactCount', device_class=DRIVER, admin=False):
    exactly = {'deviceClassName': device_class, 'allocationMode': mode}
    if mode == 'ExactCount':
        exactly['count'] = count
    if selectors:
        exactly['selectors'] = [{'cel': {'expression': e}} for e in selectors]
    if admin:
        exactly['adminAccess'] = True
    return {'name': name, 'exactly': exactly}


def allocate(target, devices, created=None):
    """Give a claim an allocation of (node, device) pairs, as the scheduler writes it."""
    target['status'] = {'allocation': {'devices': {'results': [
        {'request': 'gpu', 'driver': DRIVER, 'pool': node, 'device': device} for node, device in devices]}}}
    if created:
        target['metadata']['creationTimestamp'] = created
    return target


def explain(lab, target, **changes):
    data = dict(lab, **changes)
    claims = data['claims'] + ([target] if target not in data['claims'] else [])
    return dra_explain.explain_claim(target, device_classes=data['device_classes'], slices=data['slices'],
                                     claims=claims, pods=data['pods'], nodes=data['nodes'],
                                     quotas=data['quotas'], namespaces=data['namespaces'], now=NOW)


def fill_lab(lab, keep_free=()):
    """Every GPU of the 3 x 8 lab allocated to one claim of seat userNN (except keep_free)."""
    claims = []
    number = 0
    for node in ('node1', 'node2', 'node3'):
        for index in range(8):
            if (node, 'gpu-%d' % index) in keep_free:
                continue
            number += 1
            seat = 'user%02d' % number
            claims.append(allocate(claim('hold', namespace=seat, created='2026-10-28T0%d:00:00Z' % (number % 8 + 1)),
                                   [(node, 'gpu-%d' % index)]))
    return claims


def test_demo3_claim_asking_100gi_names_the_largest_memory(lab):
    huge = next(c for c in lab['claims'] if c['metadata']['name'] == 'huge-gpu-gpu-8k2vd')
    answer = explain(lab, huge)
    assert answer['claim'] == 'dra-demo/huge-gpu-gpu-8k2vd'
    assert answer['allocatable'] is False
    assert answer['reason'] == 'no_matching_device'
    assert answer['cause'] == 'no GPU has memory >= 100Gi (the largest has 80Gi).'
    assert (answer['verdict'], answer['action']) == ('never_fits', 'change')
    assert answer['sentence'] == answer['cause'] + ' Change the request: ask for no more than the devices offer.'
    row = answer['requests'][0]
    assert (row['devices_in_class'], row['devices_matching']) == (24, 0)


def test_demo3_claim_asking_40gi_is_allocatable(lab):
    mid = next(c for c in lab['claims'] if c['metadata']['name'] == 'mid-gpu-gpu-q7x2m')
    answer = explain(lab, mid)
    assert (answer['allocatable'], answer['reason']) == (True, 'allocatable')
    row = answer['requests'][0]
    # healthy.json holds 5 GPUs (node1 gpu-0, gpu-1; node2 gpu-3, gpu-5; node3 gpu-2).
    assert (row['devices_in_class'], row['devices_matching'], row['devices_free']) == (24, 24, 19)
    assert sorted(h['claim'] for h in row['holders']) == [
        'dra-demo/big-gpu-gpu-4tnvz', 'user01/gpu-claim', 'user02/train-1-gpu-wkfpl', 'user03/shared-gpu',
        'user04/gpu-claim']
    holder = next(h for h in row['holders'] if h['claim'] == 'user01/gpu-claim')
    assert (holder['device'], holder['node'], holder['seat'], holder['age']) == ('gpu-0', 'node1', 'user01', '26m')


def test_full_lab_names_who_holds_the_gpus(lab):
    held = fill_lab(lab)
    target = claim('late', namespace='user30')
    answer = explain(lab, target, claims=held)
    assert (answer['allocatable'], answer['reason']) == (False, 'all_matching_in_use')
    # A seat's claim by namespace/claim; user07 and on are no seats in healthy.json: in use outside the seats.
    assert answer['cause'].startswith('24 GPUs match; all are in use: gpu-0 on node1 by user01/hold for ')
    assert answer['cause'].endswith(', and 21 more.')
    assert (answer['verdict'], answer['action']) == ('waits', 'wait')
    row = answer['requests'][0]
    assert (row['devices_matching'], row['devices_free'], len(row['holders'])) == (24, 0, 24)
    assert {h['namespace'] for h in row['holders']} == set('user%02d' % n for n in range(1, 25))
    # healthy.json labels the namespaces user01..user06 as seats.
    assert [h['seat'] for h in row['holders'][:7]] == ['user01', 'user02', 'user03', 'user04', 'user05', 'user06', None]


def test_full_lab_with_one_gpu_freed_is_allocatable(lab):
    held = fill_lab(lab, keep_free={('node2', 'gpu-6')})
    answer = explain(lab, claim('late'), claims=held)
    assert answer['allocatable'] is True
    assert answer['node'] == 'node2'
    assert 'gpu-6 on node2' in answer['sentence']


def test_admin_access_ignores_allocations(lab):
    held = fill_lab(lab)
    answer = explain(lab, claim('observer', requests=[request(admin=True)]), claims=held)
    assert answer['allocatable'] is True


def test_two_gpus_on_one_node_when_only_one_free_per_node(lab):
    held = fill_lab(lab, keep_free={('node1', 'gpu-1'), ('node2', 'gpu-2'), ('node3', 'gpu-3')})
    answer = explain(lab, claim('pair', requests=[request(count=2)]), claims=held)
    assert answer['reason'] == 'all_matching_in_use'
    assert '3 of the 24 matching are free, but at most 1 on one node' in answer['sentence']


def test_count_larger_than_a_node(lab):
    answer = explain(lab, claim('nine', requests=[request(count=9)]))
    assert answer['reason'] == 'too_few_per_node'
    assert 'asks for 9 GPUs on one node, but at most 8' in answer['sentence']


def test_match_attribute_model_is_allocatable(lab):
    target = claim('two', requests=[request('a'), request('b')],
                   constraints=[{'requests': ['a', 'b'], 'matchAttribute': 'gpu.example.com/model'}])
    assert explain(lab, target)['allocatable'] is True


def test_match_attribute_index_cannot_be_met_on_one_node(lab):
    # Two different GPUs with the same index exist only on different nodes.
    target = claim('two', requests=[request('a'), request('b')],
                   constraints=[{'requests': ['a', 'b'], 'matchAttribute': 'gpu.example.com/index'}])
    answer = explain(lab, target)
    assert (answer['allocatable'], answer['reason']) == (False, 'constraint_unsatisfiable')
    assert answer['cause'] == (
        'each request could be served alone, but the requests must get devices with the same gpu.example.com/index '
        '(matchAttribute) on one node, and no node has such devices even when all are free.')
    assert answer['verdict'] == 'never_fits'
    assert answer['advice'].startswith('Change the request: drop the matchAttribute constraint')
    # Without the constraint the same two requests fit.
    del target['spec']['devices']['constraints']
    assert explain(lab, target)['allocatable'] is True


def test_two_requests_with_one_free_gpu_per_node(lab):
    held = fill_lab(lab, keep_free={('node1', 'gpu-1'), ('node2', 'gpu-2'), ('node3', 'gpu-3')})
    target = claim('two', requests=[request('a'), request('b')],
                   constraints=[{'requests': ['a', 'b'], 'matchAttribute': 'gpu.example.com/model'}])
    answer = explain(lab, target, claims=held)
    # The constraint is not the obstacle (all GPUs share the model): the two GPUs do not fit on one node.
    assert (answer['allocatable'], answer['reason']) == (False, 'requests_do_not_fit')
    # It fits once GPUs are free: it waits, and the cause names who holds them.
    assert 'not now: enough of them exist, but some are in use: gpu-0 on node1 by user01/hold for ' in answer['cause']
    assert answer['verdict'] == 'waits' and answer['sentence'].startswith(answer['cause'] + ' Wait until one of')


def test_distinct_attribute_is_met_by_different_gpus_of_one_node(lab):
    target = claim('two', requests=[request('a'), request('b')],
                   constraints=[{'requests': ['a', 'b'], 'distinctAttribute': 'gpu.example.com/index'}])
    answer = explain(lab, target)
    assert answer['allocatable'] is True and answer['not_modeled'] == [], answer


def test_distinct_attribute_no_two_gpus_meet_never_fits(lab):
    # Every GPU of the lab has the same model: no two of them have different ones.
    target = claim('two', requests=[request('a'), request('b')],
                   constraints=[{'requests': ['a', 'b'], 'distinctAttribute': 'gpu.example.com/model'}])
    answer = explain(lab, target)
    assert (answer['reason'], answer['verdict']) == ('constraint_unsatisfiable', 'never_fits')
    assert answer['sentence'] == (
        'each request could be served alone, but the requests must get devices with a different gpu.example.com/model '
        'each (distinctAttribute) on one node, and no node has such devices even when all are free. Change the '
        'request: drop the distinctAttribute constraint, or ask for fewer devices in one claim.'), answer['sentence']
    both = claim('two', requests=[request('a'), request('b')],
                 constraints=[{'matchAttribute': 'gpu.example.com/model'}, {'distinctAttribute': 'gpu.example.com/model'}])
    assert explain(lab, both)['cause'].startswith(
        'each request could be served alone, but the requests must get devices with the same gpu.example.com/model '
        '(matchAttribute) and a different gpu.example.com/model each (distinctAttribute) on one node')


def test_match_attribute_missing_attribute(lab):
    target = claim('two', requests=[request('a'), request('b')],
                   constraints=[{'matchAttribute': 'example.com/rack'}])
    assert explain(lab, target)['reason'] == 'constraint_unsatisfiable'


def test_first_available_falls_back_to_the_second_subrequest(lab):
    target = claim('fallback', requests=[{'name': 'gpu', 'firstAvailable': [
        {'name': 'big', 'deviceClassName': DRIVER, 'selectors': [{'cel': {'expression': MEMORY % '100Gi'}}]},
        {'name': 'small', 'deviceClassName': DRIVER, 'selectors': [{'cel': {'expression': MEMORY % '40Gi'}}]},
    ]}])
    answer = explain(lab, target)
    assert answer['allocatable'] is True
    assert [(r['name'], r['devices_matching']) for r in answer['requests']] == [('gpu/big', 0), ('gpu/small', 24)]


def test_first_available_all_impossible(lab):
    target = claim('fallback', requests=[{'name': 'gpu', 'firstAvailable': [
        {'name': 'big', 'deviceClassName': DRIVER, 'selectors': [{'cel': {'expression': MEMORY % '100Gi'}}]},
        {'name': 'many', 'deviceClassName': DRIVER, 'count': 10},
    ]}])
    answer = explain(lab, target)
    assert answer['allocatable'] is False
    assert answer['sentence'].startswith('none of the 2 alternatives of request gpu can be served: gpu/big: no GPU '
                                         'has memory >= 100Gi')
    assert 'gpu/many: request gpu/many asks for 10 GPUs on one node' in answer['sentence']


def test_all_mode_needs_every_matching_device_free(lab):
    # healthy.json holds node1 gpu-0 and gpu-1: node1's GPUs cannot all be had, node2 and node3 hold some too.
    answer = explain(lab, claim('everything', requests=[request(mode='All')]))
    assert (answer['allocatable'], answer['reason']) == (False, 'all_matching_in_use')
    assert answer['requests'][0]['count'] is None
    free_lab = [c for c in lab['claims'] if not (c.get('status') or {}).get('allocation')]
    assert explain(lab, claim('everything', requests=[request(mode='All')]), claims=free_lab)['allocatable'] is True


def test_all_mode_on_one_node_by_index_range(lab):
    target = claim('high', requests=[request(mode='All', selectors=[INDEX % '>= 6'])])
    # gpu-6 and gpu-7 are free on every node.
    assert explain(lab, target)['allocatable'] is True


def test_unknown_class(lab):
    answer = explain(lab, claim('typo', requests=[request(device_class='gpu.exmaple.com')]))
    assert answer['reason'] == 'no_such_class'
    assert 'gpu.exmaple.com' in answer['sentence'] and 'gpu.example.com' in answer['sentence']


def test_invalid_selector(lab):
    answer = explain(lab, claim('bad', requests=[request(selectors=['device.memory > 1'])]))
    assert answer['reason'] == 'invalid_selector'
    assert "device has no field 'memory'" in answer['sentence']


def test_selector_runtime_error(lab):
    answer = explain(lab, claim('bad', requests=[request(selectors=["device.attributes['gpu.example.com'].numa == 0"])]))
    assert answer['reason'] == 'selector_runtime_error'
    assert 'numa' in answer['sentence']


def test_attribute_selector_lists_what_is_offered(lab):
    answer = explain(lab, claim('h100', requests=[request(selectors=[
        "device.attributes['gpu.example.com'].model == 'H100'"])]))
    assert answer['reason'] == 'no_matching_device'
    assert 'model offered: LATEST-GPU-MODEL' in answer['sentence']


def test_nodes_not_ready(lab):
    nodes = copy.deepcopy(lab['nodes'])
    for node in nodes:
        for cond in node['status']['conditions']:
            if cond['type'] == 'Ready':
                cond.update(status='Unknown', reason='NodeStatusUnknown')
    answer = explain(lab, claim('any'), nodes=nodes)
    assert answer['reason'] == 'nodes_not_ready'
    assert 'node1 is NotReady' in answer['sentence']


def test_cordoned_node_and_taint(lab):
    nodes = copy.deepcopy(lab['nodes'])
    nodes[0]['spec']['unschedulable'] = True
    nodes[1]['spec']['taints'] = [{'key': 'maintenance', 'effect': 'NoSchedule'}]
    held = fill_lab(lab, keep_free={('node1', 'gpu-0'), ('node2', 'gpu-0')})
    answer = explain(lab, claim('any'), nodes=nodes, claims=held)
    assert answer['reason'] == 'nodes_not_ready'
    assert answer['cause'] == (
        'the free matching GPUs (gpu-0 on node1, gpu-0 on node2) are on nodes the pod cannot use: node1 is cordoned '
        '(unschedulable) and node2 is tainted maintenance:NoSchedule; the others are in use.')
    assert (answer['verdict'], answer['action']) == ('blocked', 'instructor')
    tolerating = {'metadata': {'name': 'p', 'namespace': 'user05'},
                  'spec': {'resourceClaims': [{'name': 'gpu', 'resourceClaimName': 'any'}],
                           'tolerations': [{'key': 'maintenance', 'operator': 'Exists'}]}, 'status': {}}
    answer = explain(lab, claim('any'), nodes=nodes, claims=held, pods=[tolerating])
    assert (answer['allocatable'], answer['node']) == (True, 'node2')


def test_a_pod_not_created_yet_gets_the_default_tolerations(lab):
    """A node still carrying unreachable:NoExecute after it came back: the API server gives every new pod
    300 s of toleration for it (DefaultTolerationSeconds), so the scheduler may use that node; a pod that
    exists without those tolerations may not."""
    nodes = copy.deepcopy(lab['nodes'])
    for node in nodes[:2]:
        node['spec']['unschedulable'] = True
    nodes[2]['spec']['taints'] = [{'key': 'node.kubernetes.io/unreachable', 'effect': 'NoExecute'}]
    answer = explain(lab, claim('any'), nodes=nodes)
    assert (answer['allocatable'], answer['node']) == (True, nodes[2]['metadata']['name'])
    bare = {'metadata': {'name': 'p', 'namespace': 'user05'},
            'spec': {'resourceClaims': [{'name': 'gpu', 'resourceClaimName': 'any'}], 'tolerations': []}, 'status': {}}
    answer = explain(lab, claim('any'), nodes=nodes, pods=[bare])
    assert answer['reason'] == 'nodes_not_ready'
    assert 'tainted node.kubernetes.io/unreachable:NoExecute' in answer['sentence']


def test_quota_of_a_claim_not_created_yet(lab):
    draft = claim('another', namespace='user04', uid=False)
    answer = explain(lab, draft)
    assert (answer['allocatable'], answer['reason']) == (False, 'quota_exceeded')
    assert 'allows 1 devices of class gpu.example.com and 1 are in use' in answer['sentence']
    # An existing claim already passed quota at creation: only devices decide.
    assert explain(lab, claim('another', namespace='user04'))['allocatable'] is True


def test_allocated_claim(lab):
    answer = explain(lab, lab['claims'][0])
    assert (answer['allocatable'], answer['reason']) == (False, 'allocated')
    assert answer['sentence'] == 'already allocated: gpu-0 on node1.'


def test_explain_pending_indexes_once(lab, monkeypatch):
    """10,000 pending claims with 3 selector shapes: CEL runs once per (expression, device), not per claim."""
    calls = []
    real = dra_cel.evaluate

    def counting(expression, variable, consumable_capacity=False):
        calls.append(expression)
        return real(expression, variable, consumable_capacity)

    monkeypatch.setattr(dra_cel, 'evaluate', counting)
    shapes = [[MEMORY % '40Gi'], [MEMORY % '100Gi'], [INDEX % '< 4']]
    pending = [claim('c%05d' % n, namespace='user%02d' % (n % 72 + 1), requests=[request(selectors=shapes[n % 3])])
               for n in range(10000)]
    answers = dra_explain.explain_pending(device_classes=lab['device_classes'], slices=lab['slices'],
                                          claims=lab['claims'] + pending, pods=lab['pods'], nodes=lab['nodes'],
                                          namespaces=lab['namespaces'], now=NOW)
    # explain.json adds two pending claims: demo 3's >= 100Gi (no match) and a >= 40Gi one (allocatable).
    assert len(answers) == 10002
    reasons = {}
    for answer in answers:
        reasons[answer['reason']] = reasons.get(answer['reason'], 0) + 1
    assert reasons == {'allocatable': 3334 + 3333 + 1, 'no_matching_device': 3333 + 1}
    # 5 distinct expressions (the class selector, 40Gi, 100Gi, index < 4, the demo's model) x 24 devices.
    assert len(calls) == 24 * 5


def shared_lab(lab, shares=3, memory='10Gi', compute='10'):
    """Every GPU shareable (gpuAllowMultipleAllocations=true, the chart's requestPolicy), and all others in use
    but node1/gpu-0, which `shares` claims of seat user04 share."""
    for rslice in lab['slices']:
        for device in rslice['spec']['devices']:
            device['allowMultipleAllocations'] = True
            for name, entry in device['capacity'].items():
                entry['requestPolicy'] = {'default': entry['value'],
                                          'validRange': {'min': '1Gi' if name == 'memory' else '1',
                                                         'step': '1Gi' if name == 'memory' else '1',
                                                         'max': entry['value']}}
    lab['claims'] = fill_lab(lab, keep_free={('node1', 'gpu-0')})
    for number in range(shares):
        share = allocate(claim('small-%d' % number, namespace='user04'), [('node1', 'gpu-0')])
        share['status']['allocation']['devices']['results'][0]['consumedCapacity'] = {'memory': memory,
                                                                                      'compute': compute}
        lab['claims'].append(share)
    return lab


def sharing(memory, compute=None):
    exactly = request()
    exactly['exactly']['capacity'] = {'requests': dict([('memory', memory)] + ([('compute', compute)] if compute
                                                                               else []))}
    return exactly


def test_a_share_that_fits_beside_the_others_is_allocatable(lab):
    shared_lab(lab)
    answer = explain(lab, claim('fourth', requests=[sharing('40Gi', '10')]))
    assert (answer['reason'], answer['not_modeled']) == ('allocatable', [])
    assert 'gpu-0 on node1' in answer['sentence']
    assert answer['requests'][0]['devices_free'] == 1


def test_a_share_that_does_not_fit_is_in_use(lab):
    shared_lab(lab)
    # 30Gi of 80Gi are taken: 60Gi do not fit, and a share that names no compute wants all of it.
    for asked in (sharing('60Gi', '10'), sharing('10Gi'), request()):
        answer = explain(lab, claim('too-big', requests=[asked]))
        assert answer['reason'] == 'all_matching_in_use', (asked, answer['sentence'])
        assert answer['requests'][0]['devices_free'] == 0


def test_the_shared_class_selects_shareable_devices(lab):
    shared_lab(lab)
    lab['device_classes'].append({'metadata': {'name': 'gpu-shared.example.com'}, 'spec': {'selectors': [{'cel': {
        'expression': "device.driver == 'gpu.example.com' && device.allowMultipleAllocations == true"}}]}})
    asked = sharing('40Gi', '10')
    asked['exactly']['deviceClassName'] = 'gpu-shared.example.com'
    answer = explain(lab, claim('fourth', requests=[asked]))
    assert answer['reason'] == 'allocatable', answer['sentence']


def test_a_share_larger_than_any_card_never_fits(lab):
    shared_lab(lab)
    answer = explain(lab, claim('huge', requests=[sharing('100Gi', '10')]))
    assert (answer['reason'], answer['verdict']) == ('no_matching_device', 'never_fits'), answer['sentence']
    assert answer['sentence'] == ('no GPU has room for what the claim asks: memory 100Gi (the largest has 80Gi). '
                                  'Change the request: ask for at most 80Gi of memory.')
    # Beyond the devices' requestPolicy maximum too, though the card has more.
    for rslice in lab['slices']:
        for device in rslice['spec']['devices']:
            device['capacity']['memory']['requestPolicy']['validRange']['max'] = '40Gi'
    answer = explain(lab, claim('big', requests=[sharing('60Gi', '10')]))
    assert answer['verdict'] == 'never_fits' and '(the largest has 40Gi)' in answer['sentence'], answer['sentence']


def test_a_share_is_counted_as_the_request_policy_raises_it(lab):
    """What a share consumes is its request raised to the policy's minimum and next step (validRange), or to the next
    valid value (validValues): 30Gi of node1/gpu-0's 80Gi are taken, 50Gi free."""
    shared_lab(lab)
    for rslice in lab['slices']:
        for device in rslice['spec']['devices']:
            device['capacity']['memory']['requestPolicy']['validRange'] = {'min': '4Gi', 'step': '16Gi', 'max': '80Gi'}
    # 40Gi is raised to 52Gi (4Gi + 3 x 16Gi), which does not fit; 36Gi exactly is a step and fits.
    assert explain(lab, claim('raised', requests=[sharing('40Gi', '10')]))['reason'] == 'all_matching_in_use'
    assert explain(lab, claim('aligned', requests=[sharing('36Gi', '10')]))['reason'] == 'allocatable'
    # The minimum: 1Gi asks for 4Gi, which fits.
    assert explain(lab, claim('tiny', requests=[sharing('1Gi', '10')]))['reason'] == 'allocatable'
    for rslice in lab['slices']:
        for device in rslice['spec']['devices']:
            device['capacity']['memory']['requestPolicy'] = {'default': '20Gi', 'validValues': ['20Gi', '60Gi']}
    # 30Gi is raised to the next valid value, 60Gi, which does not fit beside the others; above all of them it
    # never fits.
    assert explain(lab, claim('valued', requests=[sharing('30Gi', '10')]))['reason'] == 'all_matching_in_use'
    assert explain(lab, claim('small', requests=[sharing('10Gi', '10')]))['reason'] == 'allocatable'
    answer = explain(lab, claim('over', requests=[sharing('70Gi', '10')]))
    assert answer['verdict'] == 'never_fits' and '(the largest has 60Gi)' in answer['sentence'], answer['sentence']


def test_a_share_of_a_capacity_no_device_has_never_fits(lab):
    shared_lab(lab)
    asked = request()
    asked['exactly']['capacity'] = {'requests': {'bandwidth': '10G'}}
    answer = explain(lab, claim('odd', requests=[asked]))
    assert answer['verdict'] == 'never_fits'
    assert answer['sentence'].startswith('no GPU of class gpu.example.com has a capacity bandwidth, which the claim '
                                         'asks for.'), answer['sentence']


def test_devices_tainted_by_a_rule_are_not_allocated_unless_tolerated(lab):
    rule = {'metadata': {'name': 'maintenance-gpu-0'},
            'spec': {'deviceSelector': {'driver': DRIVER, 'device': 'gpu-0'},
                     'taint': {'key': 'dralab.workshop/maintenance', 'value': 'gpu-0', 'effect': 'NoSchedule'}}}
    wants = claim('wants-gpu-0', requests=[request(selectors=[INDEX % '== 0'])])
    answer = dra_explain.explain_claim(wants, device_taint_rules=[rule], now=NOW, claims=[wants], **dict(
        (key, lab[key]) for key in ('device_classes', 'slices', 'pods', 'nodes', 'namespaces')))
    assert answer['reason'] == 'all_matching_tainted'
    assert answer['sentence'] == (
        'the 3 GPUs matching the claim (gpu-0 on node1, gpu-0 on node2, gpu-0 on node3) are tainted '
        'dralab.workshop/maintenance=gpu-0:NoSchedule (DeviceTaintRule maintenance-gpu-0), which the claim does '
        'not tolerate. Ask the instructor when the taint is lifted, or whether the request may tolerate it.')
    assert (answer['verdict'], answer['action']) == ('blocked', 'instructor')
    tolerating = copy.deepcopy(wants)
    tolerating['spec']['devices']['requests'][0]['exactly']['tolerations'] = [
        {'key': 'dralab.workshop/maintenance', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    answer = dra_explain.explain_claim(tolerating, device_taint_rules=[rule], now=NOW, claims=[tolerating], **dict(
        (key, lab[key]) for key in ('device_classes', 'slices', 'pods', 'nodes', 'namespaces')))
    assert answer['reason'] == 'allocatable'
    # Without the rule, the same claim is allocatable.
    assert explain(lab, wants, claims=[])['reason'] == 'allocatable'


PARTITION = "device.driver == 'gpu.example.com' && has(device.attributes['gpu.example.com'].partition)"
FULL = "device.driver == 'gpu.example.com' && has(device.attributes['gpu.example.com'].full)"


def partitioned(lab, partitions=2):
    """The lab as the driver publishes it with kubeletPlugin.gpuPartitions: per node a slice of counter sets (one per
    card: memory 80Gi) and a slice of devices, each card as its partitions (80Gi / partitions each) and itself whole,
    all consuming its counter set; DeviceClasses for partitions and whole cards."""
    slices = []
    for rslice in lab['slices']:
        spec, devices, sets = rslice['spec'], [], []
        for card in spec['devices']:
            index = card['attributes']['index']['int']
            counter_set = 'gpu-%d-counters' % index
            sets.append({'name': counter_set, 'counters': {'memory': {'value': '80Gi'}}})
            size = '%dGi' % (80 // partitions)
            for number in range(partitions):
                part = copy.deepcopy(card)
                part['name'] = 'gpu-%d-partition-%d' % (index, number)
                part['attributes']['partition'] = {'int': number}
                part['capacity'] = {'memory': {'value': size}}
                part['consumesCounters'] = [{'counterSet': counter_set, 'counters': {'memory': {'value': size}}}]
                devices.append(part)
            whole = copy.deepcopy(card)
            whole['name'] = 'gpu-%d-full' % index
            whole['attributes']['full'] = {'bool': True}
            whole['consumesCounters'] = [{'counterSet': counter_set, 'counters': {'memory': {'value': '80Gi'}}}]
            devices.append(whole)
        pool = dict(spec['pool'], resourceSliceCount=2)
        slices.append(dict(rslice, spec=dict(spec, pool=pool, devices=devices)))
        counters = copy.deepcopy(rslice)
        counters['metadata']['name'] += '-counters'
        counters['spec'] = dict((k, v) for k, v in spec.items() if k != 'devices')
        counters['spec'].update(pool=pool, sharedCounters=sets)
        slices.append(counters)
    classes = [{'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass', 'metadata': {'name': name},
                'spec': {'selectors': [{'cel': {'expression': expression}}]}}
               for name, expression in (('partition', PARTITION), ('whole', FULL))]
    return dict(lab, slices=slices, device_classes=lab['device_classes'] + classes, claims=[])


def whole_cards_held(lab, nodes=('node1', 'node2', 'node3'), namespace='instructor'):
    """Every card of the given nodes allocated whole, one claim per card, outside the seats."""
    held = []
    for node in nodes:
        for index in range(8):
            target = claim('card-%s-%d' % (node, index), namespace=namespace,
                           requests=[request(device_class='whole')])
            held.append(allocate(target, [(node, 'gpu-%d-full' % index)]))
    return held


def test_a_partition_of_a_card_held_whole_waits_for_its_holder(lab):
    lab = partitioned(lab)
    held = whole_cards_held(lab)
    answer = explain(lab, claim('slice', requests=[request(device_class='partition')]), claims=held)
    assert answer['not_modeled'] == []
    assert (answer['reason'], answer['verdict']) == ('all_matching_in_use', 'waits'), answer
    assert answer['cause'].startswith('48 devices match; their cards are all in use: gpu-0-full on node1 in use '
                                      'outside the seats'), answer['cause']
    row = answer['requests'][0]
    assert (row['devices_matching'], row['devices_free']) == (48, 0)
    # The holders are the claims that hold the cards whole (one per card), not one per partition.
    assert len(row['holders']) == 24 and {h['device'] for h in row['holders']} == {'gpu-%d-full' % i for i in range(8)}


def test_a_partition_is_free_once_one_card_is_not_held_whole(lab):
    lab = partitioned(lab)
    held = [c for c in whole_cards_held(lab) if c['metadata']['name'] != 'card-node2-5']
    answer = explain(lab, claim('slice', requests=[request(device_class='partition')]), claims=held)
    assert answer['reason'] == 'allocatable', answer
    assert answer['requests'][0]['devices_free'] == 2


def test_a_card_whole_waits_while_one_of_its_partitions_is_held(lab):
    lab = partitioned(lab)
    held = [c for c in whole_cards_held(lab) if c['metadata']['name'] != 'card-node1-3']
    part = allocate(claim('part', namespace='user07', requests=[request(device_class='partition')]),
                    [('node1', 'gpu-3-partition-1')])
    answer = explain(lab, claim('whole', requests=[request(device_class='whole')]), claims=held + [part])
    assert (answer['reason'], answer['verdict']) == ('all_matching_in_use', 'waits'), answer
    assert answer['cause'].startswith('24 devices match; all are in use, themselves or through their card: ')
    holders = answer['requests'][0]['holders']
    assert len(holders) == 24
    assert [h['device'] for h in holders if h['claim'] == 'user07/part'] == ['gpu-3-partition-1']
    # The other partition of that card is still free: a partition fits now.
    assert explain(lab, claim('slice', requests=[request(device_class='partition')]),
                   claims=held + [part])['reason'] == 'allocatable'


def test_a_card_whole_and_one_of_its_partitions_in_one_claim_never_fit(lab):
    lab = partitioned(lab)
    uuid = {'matchAttribute': 'gpu.example.com/uuid'}
    both = claim('both', namespace='instructor', requests=[request('a', device_class='whole'),
                                                           request('b', device_class='partition')],
                 constraints=[uuid])
    answer = explain(lab, both)
    assert (answer['reason'], answer['verdict']) == ('constraint_unsatisfiable', 'never_fits'), answer
    # Two partitions of one card fit together (2 x 40Gi of 80Gi); three do not.
    two = claim('two', namespace='instructor', requests=[request('a', device_class='partition'),
                                                         request('b', device_class='partition')], constraints=[uuid])
    assert explain(lab, two)['reason'] == 'allocatable'
    three = claim('three', namespace='instructor', requests=[
        request(name, device_class='partition') for name in ('a', 'b', 'c')], constraints=[uuid])
    assert explain(lab, three)['verdict'] == 'never_fits'


def test_without_node_objects_every_publishing_node_counts(lab):
    answer = explain(lab, claim('any'), nodes=[])
    assert answer['allocatable'] is True
    assert answer['not_modeled'] == ['node readiness (no Node objects given)']


def test_pending_claims_that_ask_alike_share_one_answer_which_is_each_ones_own(lab):
    held = fill_lab(lab, keep_free=[('node1', 'gpu-0')])
    waiting = [claim('wait-%02d' % i, namespace='user%02d' % (30 + i)) for i in range(8)]
    waiting.append(claim('big', requests=[request(selectors=[INDEX % '>= 100'])]))
    lab['claims'] = held + waiting
    lab.pop('claim_templates')
    explainer = dra_explain.Explainer(now=NOW, **lab)
    shared = explainer.explain_pending()
    alone = [dra_explain.Explainer(now=NOW, **lab).explain(c) for c in sorted(
        (c for c in lab['claims'] if not c.get('status')),
        key=lambda c: (c['metadata']['namespace'], c['metadata']['name']))]
    assert shared == alone
    assert len(set(a['claim'] for a in shared)) == len(shared) == 9


def test_claims_whose_pods_ask_alike_share_one_search_and_each_answer_names_its_own_pod(lab, monkeypatch):
    """Pods for a scheduler that does not run, gated pods and plain ones, with the same placement: one search for
    them all (9,000 such claims cost one), and each answer is the one the claim gets alone, naming its own pod."""
    held = fill_lab(lab, keep_free=[('node1', 'gpu-0')])
    waiting, pods = [], []
    for i in range(9):
        ns, name = 'user%02d' % (40 + i), 'wait-%02d' % i
        waiting.append(claim(name, namespace=ns))
        spec = {'containers': [{'name': 'c', 'image': 'x'}], 'resourceClaims': [{'name': 'gpu', 'resourceClaimName': name}]}
        if i % 3 == 1:
            spec['schedulerName'] = 'my-scheduler'
        elif i % 3 == 2:
            spec['schedulingGates'] = [{'name': 'example.com/hold'}]
        pods.append({'apiVersion': 'v1', 'kind': 'Pod', 'status': {'phase': 'Pending'}, 'spec': spec,
                     'metadata': {'name': 'pod-%02d' % i, 'namespace': ns, 'uid': 'pod-uid-%02d' % i}})
    lab['claims'], lab['pods'] = held + waiting, lab['pods'] + pods
    lab.pop('claim_templates')
    runs = []
    real_run = explain_claim.ClaimExplanation.run
    monkeypatch.setattr(explain_claim.ClaimExplanation, 'run', lambda self: runs.append(self.ref) or real_run(self))
    shared = dra_explain.Explainer(now=NOW, **lab).explain_pending()
    assert len(runs) == 1
    alone = [dra_explain.Explainer(now=NOW, **lab).explain(c) for c in waiting]
    assert shared == alone
    verdicts = dict((a['claim'], a['verdict']) for a in shared)
    assert verdicts['user41/wait-01'] == 'other_scheduler' and verdicts['user42/wait-02'] == 'gated'
    assert verdicts['user40/wait-00'] != verdicts['user41/wait-01']
    for i, answer in enumerate(shared[:3]):
        if i:
            assert 'pod-%02d' % i in answer['sentence'], answer['sentence']
