# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dra_health.analyze() on recorded-style resource.k8s.io/v1 objects."""

from __future__ import annotations

import copy
import datetime
import json
import pathlib
import time

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.dra import collect as dra_collect
from ansible_collections.dralab.workshop.plugins.module_utils.dra import health as dra_health
from ansible_collections.dralab.workshop.plugins.module_utils.dra import objects as dra_objects
from ansible_collections.dralab.workshop.plugins.module_utils.dra import report as dra_report
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age, parse_time

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / 'fixtures' / 'dra'
NOW = '2026-10-28T10:00:00Z'
# The fixtures are recorded API lists by path, as dra_collect reads them.
KEYS = dra_collect.LIST_PATHS + (('events', dra_collect.EVENTS_PATH),)
UNSCHED3 = ('0/3 nodes are available: 3 cannot allocate all claims. preemption: 0/3 nodes are available: '
            '3 Preemption is not helpful for scheduling.')


def load(name):
    raw = json.loads((FIXTURES / ('%s.json' % name)).read_text())
    return dict((key, raw[path]['items']) for key, path in KEYS)


def analyze(data, **options):
    options.setdefault('now', NOW)
    return dra_health.analyze(**dict(data, **options))


def by_type(report, kind):
    return [p for p in report['problems'] if p['type'] == kind]


def claim_row(report, namespace, name):
    return next(c for c in report['claims'] if (c['namespace'], c['name']) == (namespace, name))


def find(items, namespace, name):
    return next(i for i in items if (i['metadata'].get('namespace'), i['metadata']['name']) == (namespace, name))


@pytest.fixture(name='healthy')
def healthy_fixture():
    return load('healthy')


@pytest.fixture(name='broken')
def broken_fixture():
    return load('broken')


# --------------------------------------------------------------------------- helpers

def test_parse_time_forms():
    utc = datetime.timezone.utc
    assert parse_time('2026-10-28T09:58:12Z') == datetime.datetime(2026, 10, 28, 9, 58, 12, tzinfo=utc)
    assert parse_time('2026-10-28T09:58:12.123456Z') == datetime.datetime(2026, 10, 28, 9, 58, 12, tzinfo=utc)
    assert parse_time('2026-10-28T11:58:12+02:00') == datetime.datetime(2026, 10, 28, 9, 58, 12, tzinfo=utc)
    assert parse_time(None) is None
    assert parse_time('yesterday') is None


@pytest.mark.parametrize('seconds, text', [(45, '45s'), (600, '10m'), (3600, '1h'), (5400, '1h30m'),
                                           (1047600, '12d'), (3 * 86400 + 7200, '3d2h')])
def test_format_age(seconds, text):
    assert format_age(seconds) == text


# --------------------------------------------------------------------------- healthy lab

def test_healthy_lab_has_no_problems(healthy):
    report = analyze(healthy)
    assert report['healthy'] is True
    assert report['problems'] == []
    assert report['summary'] == {
        'driver': 'gpu.example.com', 'nodes_expected': 3, 'nodes_publishing': 3, 'nodes_complete': 3,
        'devices_expected': 24, 'devices_published': 24, 'devices_allocated': 5, 'devices_free': 19, 'claims_total': 5, 'claims_pending': 0,
        'claims_allocated': 5, 'claims_reserved': 4, 'devices_shared': 0, 'devices_tainted': 0, 'errors': 0,
        'warnings': 0,
    }
    assert report['nodes'] == [
        {'name': n, 'driver': 'gpu.example.com', 'published': 8, 'expected': 8, 'devices': 8, 'slices': 1,
         'ready': True}
        for n in ('node1', 'node2', 'node3')]
    assert [(p['pool'], p['node'], p['generation'], p['resource_slice_count'], p['slices_seen'], p['consistent'])
            for p in report['pools']] == [('node1', 'node1', 1, 1, 1, True), ('node2', 'node2', 1, 1, 1, True),
                                          ('node3', 'node3', 1, 1, 1, True)]
    assert report['device_classes'] == ['gpu-80gi.dralab.workshop', 'gpu.example.com']


def test_healthy_claim_rows(healthy):
    report = analyze(healthy)
    shared = claim_row(report, 'user03', 'shared-gpu')
    assert shared['state'] == 'reserved'
    assert shared['seat'] == 'user03'
    assert shared['reserved_for'] == ['shared-1', 'shared-2']
    assert shared['holder_pods_alive'] == ['shared-1', 'shared-2']
    assert shared['devices'] == [{'driver': 'gpu.example.com', 'pool': 'node3', 'device': 'gpu-2', 'request': 'gpu',
                                  'node': 'node3', 'consumed_capacity': {}, 'share_id': None}]
    assert shared['device_status'] == []
    assert shared['owner_template'] is False
    assert shared['age_seconds'] == 1800
    assert shared['pending_reason'] is None

    generated = next(c for c in report['claims'] if c['namespace'] == 'user02')
    assert generated['name'].startswith('train-1-gpu-')
    assert generated['owner_template'] is True

    demo = next(c for c in report['claims'] if c['namespace'] == 'dra-demo')
    assert demo['seat'] is None  # the instructor's namespace is no seat
    assert demo['owner_template'] is True

    unused = claim_row(report, 'user04', 'gpu-claim')
    assert unused['state'] == 'allocated'
    assert unused['reserved_for'] == []
    assert unused['age_seconds'] == 600


def test_stale_claim_age_threshold(healthy):
    # user04/gpu-claim is allocated and unused for 10 minutes: fine at 1h, a problem at 5m.
    assert by_type(analyze(healthy, stale_claim_age='1h'), 'claim_allocated_unused') == []
    problems = by_type(analyze(healthy, stale_claim_age='5m'), 'claim_allocated_unused')
    assert [p['object'] for p in problems] == ['ResourceClaim user04/gpu-claim']
    assert problems[0]['severity'] == 'error'
    assert problems[0]['age_seconds'] == 600
    assert 'created 10m ago' in problems[0]['reason']
    assert 'kubectl -n user04 delete resourceclaim gpu-claim' in problems[0]['reason']
    assert by_type(analyze(healthy, stale_claim_age=601), 'claim_allocated_unused') == []


# --------------------------------------------------------------------------- broken lab: one test per problem type

def test_broken_summary_and_counts(broken):
    report = analyze(broken)
    assert report['healthy'] is False
    assert report['summary'] == {
        'driver': 'gpu.example.com', 'nodes_expected': 4, 'nodes_publishing': 3, 'nodes_complete': 2,
        'devices_expected': 32, 'devices_published': 22, 'devices_allocated': 10, 'devices_free': 14, 'claims_total': 16, 'claims_pending': 4,
        'claims_allocated': 12, 'claims_reserved': 10, 'devices_shared': 3, 'devices_tainted': 0, 'errors': 10,
        'warnings': 7,
    }
    counts = {}
    for problem in report['problems']:
        counts[(problem['type'], problem['severity'])] = counts.get((problem['type'], problem['severity']), 0) + 1
    assert counts == {
        ('device_count_short', 'error'): 1,
        ('node_missing_slice', 'error'): 1,
        ('pool_inconsistent', 'error'): 1,
        ('claim_reserved_for_missing_pod', 'error'): 3,
        ('claim_reserved_for_missing_pod', 'warning'): 1,
        ('claim_allocated_unused', 'error'): 1,
        ('claim_device_unknown', 'error'): 2,
        ('device_double_allocated', 'error'): 1,
        ('node_not_ready', 'warning'): 1,
        ('claim_pending', 'warning'): 4,
        ('pod_claim_unreachable', 'warning'): 1,
    }
    severities = [p['severity'] for p in report['problems']]
    assert severities == sorted(severities)  # errors first
    # The kubelet plugin checks need plugin_labels (test_driver_plugin_* below); the problems of the DRA features
    # have their tests in test_dra_model_features.py, pods waiting for a missing or refused claim in test_pod_claims.py; every
    # other type occurs here.
    assert set(p['type'] for p in report['problems']) == set(dra_health.PROBLEM_TYPES) - set(PLUGIN_TYPES) - {
        'device_capacity_exceeded', 'device_tainted', 'pod_claim_missing', 'pod_claim_refused'}


def test_node_rows(broken):
    report = analyze(broken)
    assert [(n['name'], n['published'], n['expected'], n['slices'], n['ready']) for n in report['nodes']] == [
        ('node1', 8, 8, 2, True), ('node2', 6, 8, 1, True), ('node3', 0, 8, 0, True), ('node4', 8, 8, 1, False)]


def test_node_missing_slice(broken):
    [problem] = by_type(analyze(broken), 'node_missing_slice')
    assert problem['object'] == 'Node node3'
    assert problem['severity'] == 'error'
    assert problem['published'] == 0 and problem['expected'] == 8
    assert problem['reason'].startswith('node node3 publishes no ResourceSlice for driver gpu.example.com, '
                                        'so none of its 8 devices can be allocated')
    assert '--field-selector spec.nodeName=node3' in problem['reason']


def test_node_missing_slice_mentions_not_ready(broken):
    broken['slices'] = [s for s in broken['slices'] if s['spec']['nodeName'] != 'node4']
    problem = next(p for p in by_type(analyze(broken), 'node_missing_slice') if p['node'] == 'node4')
    assert 'The node is NotReady, which is the likely cause.' in problem['reason']


def test_device_count_short(broken):
    [problem] = by_type(analyze(broken), 'device_count_short')
    assert problem['object'] == 'Node node2'
    assert (problem['published'], problem['expected']) == (6, 8)
    assert problem['reason'].startswith('node node2 publishes 6 of 8 gpu.example.com devices (2 short)')


def test_expected_devices_per_node_option(broken):
    report = analyze(broken, expected_devices_per_node=6)
    assert by_type(report, 'device_count_short') == []
    assert report['summary']['devices_expected'] == 24


def test_node_not_ready_is_a_warning(broken):
    [problem] = by_type(analyze(broken), 'node_not_ready')
    assert problem['object'] == 'Node node4'
    assert problem['severity'] == 'warning'
    assert 'node node4 is NotReady (Kubelet stopped posting node status)' in problem['reason']


def test_pool_inconsistent_incomplete_newest_generation(broken):
    [problem] = by_type(analyze(broken), 'pool_inconsistent')
    assert problem['object'] == 'ResourcePool gpu.example.com/node1'
    assert problem['severity'] == 'error'
    assert 'at its newest generation 2 it announces 2 slices (resourceSliceCount 2) but 1 slice is present' in problem['reason']
    assert 'slices of older generation 1 are still present next to generation 2' in problem['reason']
    pool = next(p for p in analyze(broken)['pools'] if p['pool'] == 'node1')
    assert pool == {'driver': 'gpu.example.com', 'pool': 'node1', 'node': 'node1', 'generation': 2, 'generations': [1, 2],
                    'resource_slice_count': 2, 'slices_seen': 1, 'consistent': False, 'devices': 8}


def test_pool_inconsistent_only_stale_generation_is_a_warning(broken):
    newest = next(s for s in broken['slices'] if s['spec']['pool'] == {'generation': 2, 'name': 'node1', 'resourceSliceCount': 2})
    newest['spec']['pool']['resourceSliceCount'] = 1
    [problem] = by_type(analyze(broken), 'pool_inconsistent')
    assert problem['severity'] == 'warning'
    assert 'announces' not in problem['reason']
    assert 'older generation 1' in problem['reason']


def test_pool_inconsistent_generation_disagreement_only(healthy):
    extra = copy.deepcopy(next(s for s in healthy['slices'] if s['spec']['nodeName'] == 'node2'))
    extra['metadata']['name'] += 'x'
    extra['spec']['pool']['generation'] = 3
    healthy['slices'].append(extra)
    report = analyze(healthy)
    [problem] = by_type(report, 'pool_inconsistent')
    assert problem['object'] == 'ResourcePool gpu.example.com/node2'
    # Same devices at generation 3: counted once.
    assert next(n for n in report['nodes'] if n['name'] == 'node2')['published'] == 8


def test_claim_reserved_for_missing_pod(broken):
    problems = dict((p['object'], p) for p in by_type(analyze(broken), 'claim_reserved_for_missing_pod'))
    gone = problems['ResourceClaim user07/gpu-claim']
    assert gone['severity'] == 'error'
    assert gone['reason'] == (
        'claim user07/gpu-claim is reserved for pod user07/train-1 which no longer exists; the GPU gpu-3 on node '
        'node1 stays held until the claim is deleted (kubectl -n user07 delete resourceclaim gpu-claim).')
    done = problems['ResourceClaim user08/gpu-claim']
    assert 'pod user08/train-1 which has terminated (Succeeded)' in done['reason']
    assert 'kubectl -n user08 delete pod train-1' in done['reason']
    recreated = problems['ResourceClaim user22/gpu-claim']
    assert 'a new pod with the same name has a different uid' in recreated['reason']
    assert recreated['severity'] == 'error'
    partial = problems['ResourceClaim user21/shared-gpu']
    assert partial['severity'] == 'warning'
    assert partial['pods'] == ['shared-2']
    assert 'next to live pod shared-1' in partial['reason']
    report = analyze(broken)
    assert claim_row(report, 'user21', 'shared-gpu')['holder_pods_alive'] == ['shared-1']
    assert claim_row(report, 'user07', 'gpu-claim')['holder_pods_alive'] == []


def test_claim_reserved_for_failed_pod(broken):
    pod = find(broken['pods'], 'user08', 'train-1')
    pod['status']['phase'] = 'Failed'
    problem = next(p for p in by_type(analyze(broken), 'claim_reserved_for_missing_pod')
                   if p['object'] == 'ResourceClaim user08/gpu-claim')
    assert 'has terminated (Failed)' in problem['reason']


def test_claim_reserved_for_a_pod_stuck_terminating_on_a_node_that_is_not_ready(broken):
    pod = find(broken['pods'], 'user21', 'shared-1')
    pod['metadata']['deletionTimestamp'] = '2026-10-28T09:55:00Z'
    node = next(n for n in broken['nodes'] if n['metadata']['name'] == pod['spec']['nodeName'])
    node['status']['conditions'] = [{'type': 'Ready', 'status': 'Unknown'}]
    problem = next(p for p in by_type(analyze(broken), 'claim_reserved_for_missing_pod')
                   if p['object'] == 'ResourceClaim user21/shared-gpu')
    assert problem['severity'] == 'error' and sorted(problem['pods']) == ['shared-1', 'shared-2'], problem
    assert 'pod user21/shared-1 which is being deleted on %s, which is NotReady' % node['metadata']['name'] in problem['reason']
    # shared-2 is gone, shared-1 stuck: deleting the claim frees nothing, only the pods' forced deletion.
    assert 'until the claim is deleted' in problem['reason']
    claim = find(broken['claims'], 'user21', 'shared-gpu')
    claim['status']['reservedFor'] = [r for r in claim['status']['reservedFor'] if r['name'] == 'shared-1']
    alone = next(p for p in by_type(analyze(broken), 'claim_reserved_for_missing_pod')
                 if p['object'] == 'ResourceClaim user21/shared-gpu')
    assert alone['reason'].endswith('stays held until the pod is gone (kubectl -n user21 delete pod shared-1 --force '
                                    '--grace-period=0).'), alone['reason']
    # The node Ready again: the pod is being deleted as usual, a live holder.
    node['status']['conditions'] = [{'type': 'Ready', 'status': 'True'}]
    assert not [p for p in by_type(analyze(broken), 'claim_reserved_for_missing_pod')
                if p['object'] == 'ResourceClaim user21/shared-gpu']


def test_claim_allocated_unused_twelve_days(broken):
    [problem] = by_type(analyze(broken), 'claim_allocated_unused')
    assert problem['object'] == 'ResourceClaim user09/gpu-claim'
    assert problem['severity'] == 'error'
    assert problem['age_seconds'] == 12 * 86400 + 3 * 3600
    assert problem['reason'] == (
        'claim user09/gpu-claim was created 12d ago and holds the GPU gpu-1 on node node2, but no pod uses it '
        '(empty reservedFor), so nobody else can get that device; if seat user09 no longer needs it, delete it '
        '(kubectl -n user09 delete resourceclaim gpu-claim).')
    # user10's claim is allocated and unused too, but only 5 minutes old.
    assert claim_row(analyze(broken), 'user10', 'gpu-claim')['state'] == 'allocated'


def test_claim_pending_reasons(broken):
    report = analyze(broken)
    problems = dict((p['object'], p) for p in by_type(report, 'claim_pending'))
    assert all(p['severity'] == 'warning' for p in problems.values())
    user16 = problems['ResourceClaim user16/gpu-claim']
    # The scheduler's words are evidence apart, never glued into the sentence (nor a guess from them).
    assert user16['reason'] == ('claim user16/gpu-claim is pending (pod user16/train-1 cannot be scheduled): the '
                                'devices were not explained; see what the scheduler said.')
    assert user16['scheduler_said'].startswith('0/4 nodes are available: 1 node(s) had untolerated taint')
    assert '0/4 nodes' not in user16['reason'] and 'GPU is freed' not in user16['reason']
    # The template claim's pod has no condition: the newest of its two FailedScheduling events is used.
    generated = next(c for c in report['claims'] if c['namespace'] == 'user17')
    assert generated['pending_reason'].startswith('0/4 nodes are available: 1 node(s) had untolerated taint')
    assert generated['owner_template'] is True
    assert claim_row(report, 'user18', 'unused-claim')['pending_reason'] == 'no pod uses this claim yet'
    assert problems['ResourceClaim user18/unused-claim']['reason'] == (
        'claim user18/unused-claim is pending (no pod uses it): the scheduler has not tried to allocate a device.')
    assert claim_row(report, 'user19', 'huge-claim')['pending_reason'] == 'DeviceClass gpu-huge.example.com does not exist'
    assert ('It requests DeviceClass gpu-huge.example.com, which does not exist'
            in problems['ResourceClaim user19/huge-claim']['reason'])
    assert problems['ResourceClaim user19/huge-claim']['scheduler_said'] is None


def test_claim_pending_without_events(broken):
    report = analyze(broken, events=[])
    generated = next(c for c in report['claims'] if c['namespace'] == 'user17')
    assert generated['pending_reason'] == 'pod user17/train-1 is waiting for the scheduler'


def test_claim_pending_condition_wins_over_event(broken):
    pod = find(broken['pods'], 'user16', 'train-1')
    broken['events'].append({
        'apiVersion': 'v1', 'kind': 'Event', 'metadata': {'name': 'train-1.1', 'namespace': 'user16'},
        'involvedObject': {'kind': 'Pod', 'namespace': 'user16', 'name': 'train-1', 'uid': pod['metadata']['uid']},
        'reason': 'FailedScheduling', 'message': 'an older message', 'eventTime': '2026-10-28T09:59:59.000000Z'})
    assert claim_row(analyze(broken), 'user16', 'gpu-claim')['pending_reason'].startswith('0/4 nodes are available')


def test_device_double_allocated(broken):
    [problem] = by_type(analyze(broken), 'device_double_allocated')
    assert problem['object'] == 'Device gpu.example.com/node2/gpu-2'
    assert problem['claims'] == ['user11/gpu-claim', 'user12/gpu-claim']
    assert problem['reason'].startswith('device gpu-2 on node node2 (driver gpu.example.com) is allocated to 2 claims '
                                        '(user11/gpu-claim and user12/gpu-claim) but does not allow multiple allocations')


def test_shared_device_with_allow_multiple_allocations_is_fine(broken):
    # user13/share-a and user14/share-b both hold node1/gpu-7, published with allowMultipleAllocations.
    report = analyze(broken)
    assert [c['devices'][0]['device'] for c in report['claims'] if c['namespace'] in ('user13', 'user14')] == ['gpu-7', 'gpu-7']
    assert all('gpu-7' not in p['object'] for p in by_type(report, 'device_double_allocated'))
    for rslice in broken['slices']:
        for device in rslice['spec']['devices']:
            device.pop('allowMultipleAllocations', None)
    objects = [p['object'] for p in by_type(analyze(broken), 'device_double_allocated')]
    assert objects == ['Device gpu.example.com/node1/gpu-7', 'Device gpu.example.com/node2/gpu-2']


def test_admin_access_allocation_is_not_a_double_allocation(broken):
    claim = find(broken['claims'], 'user12', 'gpu-claim')
    claim['status']['allocation']['devices']['results'][0]['adminAccess'] = True
    assert by_type(analyze(broken), 'device_double_allocated') == []


def test_claim_device_unknown(broken):
    problems = dict((p['object'], p) for p in by_type(analyze(broken), 'claim_device_unknown'))
    assert sorted(problems) == ['ResourceClaim user15/gpu-claim', 'ResourceClaim user20/gpu-claim']
    assert 'pool node2 publishes no device gpu-7 any more' in problems['ResourceClaim user15/gpu-claim']['reason']
    assert 'no ResourceSlice publishes pool node3 any more' in problems['ResourceClaim user20/gpu-claim']['reason']
    assert all(p['severity'] == 'error' for p in problems.values())


def test_nodes_option_and_unknown_node(broken):
    report = analyze(broken, expected_nodes=['node1', 'node2', 'node9'])
    assert [(n['name'], n['expected'], n['ready']) for n in report['nodes']] == [
        ('node1', 8, True), ('node2', 8, True), ('node9', 8, None), ('node4', 0, False)]
    assert report['summary']['nodes_expected'] == 3
    missing = by_type(report, 'node_missing_slice')
    assert [p['object'] for p in missing] == ['Node node9']
    assert 'no Node named node9 exists in the cluster' in missing[0]['reason']


def test_node_selector(broken):
    report = analyze(broken, node_selector={'node-role.kubernetes.io/control-plane': None})
    assert [(n['name'], n['expected']) for n in report['nodes']] == [('node1', 8), ('node2', 0), ('node4', 0)]
    assert report['summary']['nodes_expected'] == 1
    assert by_type(report, 'node_missing_slice') == [] and by_type(report, 'device_count_short') == []
    report = analyze(broken, node_selector={'kubernetes.io/hostname': 'node3'})
    assert [p['object'] for p in by_type(report, 'node_missing_slice')] == ['Node node3']


def test_other_driver_publishes_nothing(healthy):
    report = analyze(healthy, driver='net.example.com')
    assert report['healthy'] is False
    assert len(by_type(report, 'node_missing_slice')) == 3
    assert report['summary']['devices_published'] == 0
    assert len(report['pools']) == 3  # pools of every driver are still checked


def test_empty_cluster():
    report = dra_health.analyze(now=NOW)
    assert report['healthy'] is True
    assert report['summary']['nodes_expected'] == 0
    assert report['claims'] == [] and report['problems'] == []


def test_report_lines_name_every_node_state_and_problem(broken):
    report = analyze(broken, expected_nodes=['node1', 'node2', 'node9'])
    lines = dra_report.report_lines(report)
    summary = report['summary']
    assert lines[0] == 'DRA lab UNHEALTHY: %d error(s), %d warning(s)' % (summary['errors'], summary['warnings'])
    assert lines[1].startswith('Devices (gpu.example.com): %d/24 published on %d/3 nodes, '
                               % (summary['devices_published'], summary['nodes_publishing']))
    nodes = lines[lines.index('Nodes:') + 1:lines.index('Problems:')]
    assert nodes[2] == '  node9: 0/8 devices, 0 slice(s), not in the cluster'
    assert nodes[3].startswith('  node4: ') and nodes[3].endswith(', NotReady')
    problems = lines[lines.index('Problems:') + 1:]
    assert problems == [line for p in report['problems'] for line in
                        ['  %s %s: %s' % (p['severity'].upper(), p['object'], p['reason'])]
                        + (['      scheduler said: ' + p['scheduler_said']] if p.get('scheduler_said') else [])]
    assert sum(1 for line in problems if line.startswith('      scheduler said: 0/4 nodes are available')) == 2


def test_report_lines_of_an_empty_cluster():
    lines = dra_report.report_lines(dra_health.analyze(now=NOW))
    assert lines == ['DRA lab healthy: 0 error(s), 0 warning(s)',
                     'Devices (gpu.example.com): 0/0 published on 0/0 nodes, 0 allocated, 0 free',
                     'Claims: 0 total, 0 pending, 0 allocated (0 in use by pods)', 'Nodes: none', 'Problems: none']


def test_nodes_complete_counts_expected_nodes_with_exactly_their_devices(broken, healthy):
    assert analyze(healthy)['summary']['nodes_complete'] == 3
    assert analyze(healthy, expected_devices_per_node=7)['summary']['nodes_complete'] == 0
    report = analyze(broken, expected_nodes=['node1', 'node2', 'node9'])
    complete = [n['name'] for n in report['nodes'] if n['expected'] and n['published'] == n['expected']]
    assert report['summary']['nodes_complete'] == len(complete) < 3


def test_inputs_are_not_modified(broken):
    before = copy.deepcopy(broken)
    analyze(broken)
    assert broken == before


# --------------------------------------------------------------------------- the 72-seat rush

def _rush(healthy, seats=72, nodes=('node1', 'node2', 'node3'), per_node=8):
    """Every seat runs one pod with a template claim; the first len(nodes)*per_node get a GPU."""
    data = copy.deepcopy(healthy)
    slices = [s for s in data['slices'] if s['spec']['nodeName'] in nodes]
    template_slice = slices[0]
    data['slices'] = []
    for number, node in enumerate(nodes):
        rslice = copy.deepcopy(template_slice)
        rslice['metadata']['name'] = '%s-gpu.example.com-%05d' % (node, number)
        rslice['spec']['nodeName'] = node
        rslice['spec']['pool']['name'] = node
        rslice['spec']['devices'] = [dict(copy.deepcopy(template_slice['spec']['devices'][0]), name='gpu-%d' % i)
                                     for i in range(per_node)]
        data['slices'].append(rslice)
    data['nodes'] = [copy.deepcopy(data['nodes'][0]) for dummy in nodes]
    for node, obj in zip(nodes, data['nodes']):
        obj['metadata']['name'] = node
    data['namespaces'] = [{'metadata': {'name': 'user%02d' % i, 'labels': {'dralab.workshop/seat': 'user%02d' % i}}}
                          for i in range(1, seats + 1)]
    data['claims'], data['pods'], data['events'] = [], [], []
    capacity = len(nodes) * per_node
    for i in range(seats):
        ns = 'user%02d' % (i + 1)
        pod_uid = 'pod-uid-%d' % i
        claim_name = 'train-1-gpu-%05d' % i
        claim = {
            'metadata': {'name': claim_name, 'namespace': ns, 'uid': 'claim-uid-%d' % i,
                         'creationTimestamp': '2026-10-28T09:55:00Z',
                         'annotations': {'resource.kubernetes.io/pod-claim-name': 'gpu'},
                         'ownerReferences': [{'apiVersion': 'v1', 'kind': 'Pod', 'name': 'train-1', 'uid': pod_uid,
                                              'controller': True}]},
            'spec': {'devices': {'requests': [{'name': 'gpu', 'exactly': {'deviceClassName': 'gpu.example.com'}}]}},
            'status': {},
        }
        pod = {
            'metadata': {'name': 'train-1', 'namespace': ns, 'uid': pod_uid, 'creationTimestamp': '2026-10-28T09:55:00Z'},
            'spec': {'resourceClaims': [{'name': 'gpu', 'resourceClaimTemplateName': 'single-gpu'}]},
            'status': {'phase': 'Pending', 'resourceClaimStatuses': [{'name': 'gpu', 'resourceClaimName': claim_name}]},
        }
        if i < capacity:
            node = nodes[i // per_node]
            claim['status'] = {
                'allocation': {'devices': {'results': [{'request': 'gpu', 'driver': 'gpu.example.com', 'pool': node,
                                                        'device': 'gpu-%d' % (i % per_node)}]}},
                'reservedFor': [{'resource': 'pods', 'name': 'train-1', 'uid': pod_uid}],
            }
            pod['spec']['nodeName'] = node
            pod['status']['phase'] = 'Running'
            pod['status']['conditions'] = [{'type': 'PodScheduled', 'status': 'True'}]
        else:
            pod['status']['conditions'] = [{'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable',
                                            'message': UNSCHED3}]
        data['claims'].append(claim)
        data['pods'].append(pod)
    return data


def test_seventy_two_seat_rush(healthy):
    report = analyze(_rush(healthy))
    assert report['healthy'] is True  # contention is not breakage
    assert report['summary'] == {
        'driver': 'gpu.example.com', 'nodes_expected': 3, 'nodes_publishing': 3, 'nodes_complete': 3,
        'devices_expected': 24, 'devices_published': 24, 'devices_allocated': 24, 'devices_free': 0, 'claims_total': 72, 'claims_pending': 48,
        'claims_allocated': 24, 'claims_reserved': 24, 'devices_shared': 0, 'devices_tainted': 0, 'errors': 0,
        'warnings': 48,
    }
    pending = by_type(report, 'claim_pending')
    assert len(pending) == 48
    assert [p['object'] for p in pending][:2] == ['ResourceClaim user25/train-1-gpu-00024',
                                                  'ResourceClaim user26/train-1-gpu-00025']
    assert all(p['scheduler_said'] == UNSCHED3 and UNSCHED3 not in p['reason'] for p in pending)
    states = [c['state'] for c in report['claims']]
    assert states == ['reserved'] * 24 + ['pending'] * 48
    assert [c['seat'] for c in report['claims']] == ['user%02d' % i for i in range(1, 73)]
    assert all(c['owner_template'] for c in report['claims'])
    assert report['claims'][23]['devices'][0]['node'] == 'node3'
    assert report['claims'][23]['holder_pods_alive'] == ['train-1']
    assert report['claims'][50]['pending_reason'] == UNSCHED3


def test_rush_after_the_session_leaves_stale_claims(healthy):
    data = _rush(healthy)
    # The first 24 pods are gone; 3 of their claims were created by hand and stay allocated.
    running = set(p['metadata']['uid'] for p in data['pods'] if p['status']['phase'] == 'Running')
    data['pods'] = [p for p in data['pods'] if p['metadata']['uid'] not in running]
    for claim in data['claims'][:3]:
        claim['status'].pop('reservedFor')
        claim['metadata'].pop('ownerReferences')
        claim['metadata'].pop('annotations')
    report = analyze(data, stale_claim_age='1m')
    assert report['summary']['errors'] == 24
    assert len(by_type(report, 'claim_allocated_unused')) == 3
    assert len(by_type(report, 'claim_reserved_for_missing_pod')) == 21
    assert len(by_type(report, 'claim_pending')) == 48


def test_analysis_scales_linearly(healthy):
    """720 seats on 30 nodes: index-based analysis stays well under a second on a busy 2-core machine."""
    nodes = tuple('node%d' % i for i in range(1, 31))
    data = _rush(healthy, seats=720, nodes=nodes)
    started = time.monotonic()
    report = analyze(data)
    elapsed = time.monotonic() - started
    assert report['summary']['claims_total'] == 720
    assert report['summary']['devices_allocated'] == 240
    assert report['summary']['claims_pending'] == 480
    assert elapsed < 5, elapsed


def _many_pending_report(count=12):
    problems = [{'type': 'device_double_allocated', 'severity': 'error', 'object': 'Device node-1/gpu-0',
                 'reason': 'gpu-0 is allocated twice'}]
    problems += [{'type': 'claim_pending', 'severity': 'warning', 'object': 'ResourceClaim load/claim-%02d' % i,
                  'reason': 'claim load/claim-%02d is pending: no free GPU' % i, 'explain_reason': 'all_matching_in_use'}
                 for i in range(count)]
    nodes = [{'name': 'node-%d' % i, 'published': 8, 'expected': 8, 'slices': 1, 'ready': True} for i in range(9)]
    nodes.append({'name': 'node-9', 'published': 0, 'expected': 8, 'slices': 0, 'ready': True})
    claims = [{'namespace': 'load', 'name': 'claim-%02d' % i, 'state': 'pending'} for i in range(count)]
    claims.append({'namespace': 'user01', 'name': 'gpu', 'state': 'reserved'})
    summary = {'errors': 1, 'warnings': count, 'driver': 'gpu.example.com', 'devices_published': 72,
               'devices_expected': 80, 'nodes_publishing': 9, 'nodes_expected': 10, 'devices_allocated': 1,
               'devices_free': 71, 'claims_total': count + 1, 'claims_pending': count, 'claims_allocated': 1,
               'claims_reserved': 1}
    return {'healthy': False, 'summary': summary, 'nodes': nodes, 'problems': problems, 'claims': claims}


def test_report_lines_with_detail_give_one_line_per_problem_and_node():
    lines = dra_report.report_lines(_many_pending_report())
    assert sum(1 for line in lines if 'claim_pending' in line or 'is pending' in line) == 12
    assert '  node-3: 8/8 devices, 1 slice(s), Ready' in lines


def test_report_lines_without_detail_count_repeated_problems_in_one_line():
    lines = dra_report.report_lines(_many_pending_report(), detail=False)
    pending = [line for line in lines if 'claim_pending' in line]
    assert len(pending) == 1
    assert pending[0].startswith('  WARNING 12 x claim_pending (all_matching_in_use): ResourceClaim load/claim-00, ')
    assert 'and 7 more' in pending[0] and 'The first: claim load/claim-00 is pending' in pending[0]
    # The lone error keeps its own line; the odd node too, the 9 alike share one.
    assert '  ERROR Device node-1/gpu-0: gpu-0 is allocated twice' in lines
    assert '  node-9: 0/8 devices, 0 slice(s), Ready' in lines
    assert any(line.startswith('  9 nodes: 8/8 devices, 1 slice(s), Ready (node-0, ') for line in lines)


def test_summarize_keeps_the_holding_claims_and_one_problem_per_repeated_kind():
    report = _many_pending_report()
    small = dra_report.summarize(report)
    assert [c['name'] for c in small['claims']] == ['gpu']
    assert len(small['problems']) == 2
    grouped = small['problems'][1]
    assert grouped['count'] == 12 and grouped['objects'][0] == 'ResourceClaim load/claim-00'
    assert len(grouped['objects']) == dra_report.SHOWN_NAMES
    assert small['summary'] == report['summary']
    # The summarized report words the same lines.
    assert dra_report.report_lines(small, detail=False) == dra_report.report_lines(report, detail=False)


def test_few_problems_of_a_kind_keep_their_own_lines_without_detail():
    lines = dra_report.report_lines(_many_pending_report(count=3), detail=False)
    assert sum(1 for line in lines if 'is pending' in line) == 3


@pytest.mark.parametrize('text', ['2026-10-28T09:12:00Z', '2026-10-28T09:12:00+02:00', '2026-10-28T09:12:00.123456Z',
                                  '2026-10-28T09:12:00.5Z', '2026-10-28T09:12:00+0200'])
def test_parse_time_reads_every_rfc3339_form(text):
    parsed = parse_time(text)
    assert parsed.tzinfo is not None
    assert parsed.replace(microsecond=0) == parse_time(text[:19] + text[19:].lstrip('.0123456789')).replace(
        microsecond=0)


# --------------------------------------------------------------------------- the driver's kubelet plugin pods

PLUGIN_TYPES = ('driver_plugin_missing', 'driver_plugin_not_ready', 'driver_plugin_restarted')
LABELS = dra_objects.EXAMPLE_DRIVER_PLUGIN_LABELS


def plugin_of(data, node):
    """The recorded kubelet plugin pod on node (the fixtures have one per node, labelled as the chart does)."""
    return next(p for p in data['pods'] if p['spec'].get('nodeName') == node and
                'kubeletplugin' in p['metadata']['name'])


def crash(pod, restarts, ended, waiting=None):
    pod['status']['containerStatuses'] = [{
        'name': 'plugin', 'restartCount': restarts,
        'state': {'waiting': {'reason': waiting}} if waiting else {'running': {'startedAt': ended}},
        'lastState': {'terminated': {'exitCode': 137, 'reason': 'Error', 'finishedAt': ended}}}]
    if waiting:
        next(c for c in pod['status']['conditions'] if c['type'] == 'Ready')['status'] = 'False'


def test_driver_plugins_ready_everywhere_is_healthy(healthy):
    report = analyze(healthy, plugin_labels=LABELS)
    assert report['healthy'] and not [p for p in report['problems'] if p['type'] in PLUGIN_TYPES]


def test_driver_plugin_missing_on_a_node(healthy):
    healthy['pods'].remove(plugin_of(healthy, 'node2'))
    [problem] = by_type(analyze(healthy, plugin_labels=LABELS), 'driver_plugin_missing')
    assert (problem['object'], problem['severity']) == ('Node node2', 'error')
    assert 'no kubelet plugin pod of driver gpu.example.com runs on node node2' in problem['reason']
    assert 'playbooks/driver.yml' in problem['reason']
    # Without plugin_labels nothing is checked (the integration harness runs the plugins as processes).
    assert not [p for p in analyze(healthy)['problems'] if p['type'] in PLUGIN_TYPES]


def test_driver_plugin_crashing_is_an_error_with_what_to_do(healthy):
    pod = plugin_of(healthy, 'node2')
    crash(pod, 3, '2026-10-28T09:59:30Z', waiting='CrashLoopBackOff')
    report = analyze(healthy, plugin_labels=LABELS)
    [problem] = by_type(report, 'driver_plugin_not_ready')
    assert not report['healthy'] and problem['object'] == 'Node node2' and problem['restarts'] == 3
    assert 'not ready (plugin CrashLoopBackOff; 3 restarts)' in problem['reason']
    assert 'kubectl -n %s logs %s --previous' % (pod['metadata']['namespace'], pod['metadata']['name']) \
        in problem['reason']
    assert 'playbooks/heal.yml' in problem['reason']


def test_driver_plugin_restarted_recently_warns_then_is_forgotten(healthy):
    crash(plugin_of(healthy, 'node2'), 1, '2026-10-28T09:58:00Z')
    report = analyze(healthy, plugin_labels=LABELS)
    [problem] = by_type(report, 'driver_plugin_restarted')
    assert report['healthy'] and problem['severity'] == 'warning'
    assert 'ended 2m ago (exit code 137, Error) and was restarted (1 restart in all)' in problem['reason']
    later = analyze(healthy, plugin_labels=LABELS, now='2026-10-28T10:10:01Z')
    assert not by_type(later, 'driver_plugin_restarted')


def test_a_node_without_its_slice_names_the_plugin_pod_to_restart(healthy):
    healthy['slices'] = [s for s in healthy['slices'] if s['spec'].get('nodeName') != 'node2']
    pod = plugin_of(healthy, 'node2')
    [problem] = by_type(analyze(healthy, plugin_labels=LABELS), 'node_missing_slice')
    assert problem['pod'] == '%s/%s' % (pod['metadata']['namespace'], pod['metadata']['name'])
    [problem] = by_type(analyze(healthy), 'node_missing_slice')
    assert 'pod' not in problem


def test_driver_plugins_are_judged_alike_on_the_pods_dra_collect_slims(healthy):
    """dra_collect drops most of a Pod as it reads it; the plugin check reads what it keeps."""
    pod = plugin_of(healthy, 'node2')
    crash(pod, 3, '2026-10-28T09:59:30Z', waiting='CrashLoopBackOff')
    crash(plugin_of(healthy, 'node1'), 1, '2026-10-28T09:58:00Z')
    slimmed = dict(healthy, pods=[dra_collect.slim_pod(p) for p in healthy['pods']])
    assert not any('image' in c for p in slimmed['pods'] for c in p['spec'].get('containers') or ())
    full, slim = analyze(healthy, plugin_labels=LABELS), analyze(slimmed, plugin_labels=LABELS)
    assert [p for p in slim['problems'] if p['type'] in PLUGIN_TYPES] == \
        [p for p in full['problems'] if p['type'] in PLUGIN_TYPES]
    assert set(p['type'] for p in slim['problems']) >= {'driver_plugin_not_ready', 'driver_plugin_restarted'}
