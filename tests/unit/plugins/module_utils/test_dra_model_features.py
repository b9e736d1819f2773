# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health analysis (dra/health.py) on the DRA features (dralab_dra_features): shared devices and their capacity, partitions counted
per card, taints of the slice and of DeviceTaintRules, device status data, on the recorded healthy lab changed
the way the driver publishes and the scheduler allocates with each feature on (dra-example-driver v0.4.0,
Kubernetes 1.35 allocator)."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.board import build as board_build
from ansible_collections.dralab.workshop.plugins.module_utils.dra import objects as dra_objects
from ansible_collections.dralab.workshop.plugins.module_utils.dra import report as dra_report

from test_dra_model import NOW, analyze, by_type, claim_row, find, load  # noqa: F401 (same fixtures)

DRIVER = 'gpu.example.com'


def shareable(data):
    """Every GPU as the driver publishes it with gpuAllowMultipleAllocations=true."""
    for rslice in data['slices']:
        for device in rslice['spec'].get('devices') or []:
            device['allowMultipleAllocations'] = True
    return data


def share(data, namespace, name, device, memory, compute, pool='node1'):
    """A claim allocated a share of pool/device, as the scheduler records it."""
    claim = copy.deepcopy(find(data['claims'], 'user01', 'gpu-claim'))
    claim['metadata'].update(namespace=namespace, name=name, uid='uid-%s-%s' % (namespace, name))
    claim['status']['allocation']['devices']['results'] = [{
        'request': 'gpu', 'driver': DRIVER, 'pool': pool, 'device': device, 'shareID': 'share-%s' % name,
        'consumedCapacity': {'memory': memory, 'compute': compute}}]
    claim['status']['reservedFor'] = []
    data['claims'].append(claim)
    return claim


@pytest.fixture(name='shared')
def shared_fixture():
    data = shareable(load('healthy'))
    for index in (1, 2, 3):
        share(data, 'user05', 'small-%d' % index, 'gpu-7', '10Gi', '10')
    return data


def test_three_shares_of_one_card_are_healthy_with_50gi_left(shared):
    report = analyze(shared, stale_claim_age='100d')
    assert report['healthy'], report['problems']
    assert by_type(report, 'device_double_allocated') == []
    row = next(r for r in report['shared_devices'] if r['device'] == 'gpu-7')
    assert row == {'driver': DRIVER, 'pool': 'node1', 'device': 'gpu-7', 'node': 'node1',
                   'claims': ['user05/small-1', 'user05/small-2', 'user05/small-3'],
                   'capacity': {'memory': {'total': '80Gi', 'used': '30Gi', 'free': '50Gi'},
                                'compute': {'total': '100', 'used': '30', 'free': '70'}}}
    assert report['summary']['devices_shared'] == len(report['shared_devices'])
    assert ('  device gpu-7 on node node1 (driver gpu.example.com): 3 claims; compute 30 used, 70 free of 100, '
            'memory 30Gi used, 50Gi free of 80Gi') in dra_report.report_lines(report)
    assert claim_row(report, 'user05', 'small-2')['devices'][0]['consumed_capacity'] == {
        'memory': '10Gi', 'compute': '10'}


def test_shares_that_do_not_fit_are_an_error(shared):
    share(shared, 'user06', 'greedy', 'gpu-7', '60Gi', '10')
    [problem] = by_type(analyze(shared), 'device_capacity_exceeded')
    assert problem['severity'] == 'error' and problem['object'] == 'Device gpu.example.com/node1/gpu-7'
    assert problem['claims'] == ['user05/small-1', 'user05/small-2', 'user05/small-3', 'user06/greedy']
    assert '(memory 90Gi of 80Gi)' in problem['reason']
    assert 'kubectl -n user06 delete resourceclaim greedy' in problem['reason']


def test_a_device_that_is_not_shareable_is_still_allocated_twice():
    data = load('healthy')
    share(data, 'user05', 'small-1', 'gpu-0', '10Gi', '10')
    [problem] = by_type(analyze(data), 'device_double_allocated')
    assert problem['claims'] == ['user01/gpu-claim', 'user05/small-1']
    assert by_type(analyze(data), 'device_capacity_exceeded') == []


def partitioned(data, partitions=4):
    """node1's cards as the driver publishes them with kubeletPlugin.gpuPartitions: a counter set per card, its
    partitions and the whole card consuming it, in a second slice of the pool."""
    [rslice] = [s for s in data['slices'] if s['spec']['nodeName'] == 'node1']
    devices, counters = [], []
    for card in rslice['spec']['devices']:
        index = card['attributes']['index']['int']
        counter_set = 'gpu-%d-counters' % index
        counters.append({'name': counter_set, 'counters': {'memory': {'value': '80Gi'}, 'compute': {'value': '100'}}})
        for part in range(partitions):
            device = copy.deepcopy(card)
            device['name'] = 'gpu-%d-partition-%d' % (index, part)
            device['attributes']['partition'] = {'int': part}
            device['consumesCounters'] = [{'counterSet': counter_set, 'counters': {'memory': {'value': '20Gi'}}}]
            devices.append(device)
        whole = copy.deepcopy(card)
        whole['name'] = 'gpu-%d-full' % index
        whole['consumesCounters'] = [{'counterSet': counter_set, 'counters': {'memory': {'value': '80Gi'}}}]
        devices.append(whole)
    rslice['spec']['devices'] = devices
    rslice['spec']['pool']['resourceSliceCount'] = 2
    counters_slice = copy.deepcopy(rslice)
    counters_slice['metadata']['name'] += '-counters'
    counters_slice['spec'].pop('devices')
    counters_slice['spec']['sharedCounters'] = counters
    data['slices'].append(counters_slice)
    for claim in data['claims']:
        for result in claim['status'].get('allocation', {}).get('devices', {}).get('results', []):
            if result['pool'] == 'node1':
                result['device'] = result['device'] + '-partition-0'
    return data


def test_partitions_are_counted_per_physical_card():
    report = analyze(partitioned(load('healthy')))
    node1 = next(row for row in report['nodes'] if row['name'] == 'node1')
    assert (node1['published'], node1['expected'], node1['devices'], node1['slices']) == (8, 8, 40, 2)
    assert by_type(report, 'device_count_short') == []
    assert report['summary']['nodes_complete'] == 3
    assert all(pool['consistent'] for pool in report['pools'])
    assert dra_objects.physical_cards(dra_objects.build_pools(partitioned(load('healthy'))['slices'])[(DRIVER, 'node1')])[
        ('counters', 'gpu-0-counters')] == ['gpu-0-partition-0', 'gpu-0-partition-1', 'gpu-0-partition-2',
                                            'gpu-0-partition-3', 'gpu-0-full']


def taint_rule(name, taint, **selector):
    return {'apiVersion': 'resource.k8s.io/v1alpha3', 'kind': 'DeviceTaintRule', 'metadata': {'name': name},
            'spec': {'deviceSelector': selector, 'taint': taint}}


def test_devices_tainted_by_a_rule_or_by_the_driver_are_reported():
    data = load('healthy')
    device = next(d for d in find(data['slices'], None, next(
        s['metadata']['name'] for s in data['slices'] if s['spec']['nodeName'] == 'node2'))['spec']['devices']
        if d['name'] == 'gpu-6')
    device['taints'] = [{'key': 'example.com/ecc', 'value': 'uncorrectable', 'effect': 'NoExecute'}]
    rule = taint_rule('maintenance-gpu-0', {'key': 'dralab.workshop/maintenance', 'value': 'gpu-0',
                                            'effect': 'NoSchedule'}, driver=DRIVER, device='gpu-0')
    report = analyze(data, device_taint_rules=[rule])
    tainted = [(row['node'], row['device'], [t['rule'] for t in row['taints']]) for row in report['tainted_devices']]
    assert tainted == [('node1', 'gpu-0', ['maintenance-gpu-0']), ('node2', 'gpu-0', ['maintenance-gpu-0']),
                       ('node2', 'gpu-6', [None]), ('node3', 'gpu-0', ['maintenance-gpu-0'])]
    assert report['summary']['devices_tainted'] == 4
    problems = by_type(report, 'device_tainted')
    assert [p['severity'] for p in problems] == ['warning'] * 4
    assert problems[0]['reason'] == ('device gpu-0 on node node1 (driver gpu.example.com) is tainted '
                                     'dralab.workshop/maintenance=gpu-0:NoSchedule (DeviceTaintRule '
                                     'maintenance-gpu-0): claims that do not tolerate it do not get it.')
    assert 'NoExecute also evicts' in problems[2]['reason']
    # A rule for another pool or driver taints nothing here.
    other = taint_rule('other', {'key': 'k', 'effect': 'NoSchedule'}, driver=DRIVER, pool='node9')
    assert analyze(load('healthy'), device_taint_rules=[other])['tainted_devices'] == []
    # The board shows a rule's taint on the tile.
    board = board_build.build(dict(load('healthy'), device_taint_rules=[rule]), now=NOW, board={})['board']
    tile = next(t for n in board['nodes'] for t in n['devices'] if (t['node'], t['device']) == ('node3', 'gpu-0'))
    assert tile['state'] == 'tainted' and tile['taints'] == ['dralab.workshop/maintenance=gpu-0:NoSchedule']


def test_device_status_data_is_in_the_claims_record():
    data = load('healthy')
    claim = find(data['claims'], 'user01', 'gpu-claim')
    claim['status']['devices'] = [{
        'driver': DRIVER, 'pool': 'node1', 'device': 'gpu-0',
        'data': {'uuid': {'string': 'gpu-d7f53db6-bd96-5155-aab4-b2e719ac0bca'},
                 'model': {'string': 'LATEST-GPU-MODEL'}, 'driverVersion': {'version': '1.0.0'}},
        'conditions': [{'type': 'Ready', 'status': 'True', 'reason': 'Prepared', 'message': '',
                        'lastTransitionTime': '2026-01-01T00:00:00Z'}]}]
    row = claim_row(analyze(data), 'user01', 'gpu-claim')
    assert row['device_status'] == [{
        'driver': DRIVER, 'pool': 'node1', 'device': 'gpu-0', 'share_id': None,
        'data': {'uuid': {'string': 'gpu-d7f53db6-bd96-5155-aab4-b2e719ac0bca'},
                 'model': {'string': 'LATEST-GPU-MODEL'}, 'driverVersion': {'version': '1.0.0'}},
        'conditions': [{'type': 'Ready', 'status': 'True', 'reason': 'Prepared', 'message': ''}],
        'network_data': None}]
