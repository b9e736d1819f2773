# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dra_health end to end: run as Ansible runs it (module_runner.py), the real collect and analysis, a fake API client."""

from __future__ import annotations

import json

from ansible_collections.dralab.workshop.plugins.module_utils.dra import collect as dra_collect
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError
from ansible_collections.dralab.workshop.plugins.module_utils.dra import report as dra_report
from ansible_collections.dralab.workshop.plugins.modules import dra_health

from dra_fakes import FakeClient
from module_runner import run_module

NOW = '2026-10-28T10:00:00Z'


def run(args, client):
    """Run dra_health as Ansible runs it, with the fake client; return (exit code, result)."""
    return run_module('dra_health', args, client, now=NOW)


def test_healthy_lab_exits_ok():
    code, result = run({}, FakeClient('healthy'))
    assert code == 0
    assert result['changed'] is False
    assert result['healthy'] is True
    assert result['summary']['devices_published'] == 24
    assert result['summary']['devices_free'] == 19
    assert result['problems'] == []
    assert len(result['claims']) == 5
    assert not result.get('failed')
    assert result['summary']['nodes_complete'] == result['summary']['nodes_expected'] == 3
    assert result['report_lines'][:2] == ['DRA lab healthy: 0 error(s), 0 warning(s)',
                                          'Devices (gpu.example.com): 24/24 published on 3/3 nodes, 5 allocated, 19 free']
    assert result['report_lines'][-1] == 'Problems: none'
    assert '  node1: 8/8 devices, 1 slice(s), Ready' in result['report_lines']


def test_unhealthy_lab_fails_with_the_reasons():
    code, result = run({}, FakeClient('broken'))
    assert code == 1
    assert result['failed'] is True
    assert result['healthy'] is False
    assert result['msg'].startswith('The DRA lab is unhealthy: 10 error(s), 7 warning(s): ')
    assert ('ResourceClaim user07/gpu-claim: claim user07/gpu-claim is reserved for pod user07/train-1 which no '
            'longer exists') in result['msg']
    assert 'Node node3: node node3 publishes no ResourceSlice' in result['msg']
    assert 'claim_pending' not in result['msg'] and 'user16' not in result['msg']  # warnings are not listed
    # The report is returned with the failure.
    assert result['summary']['errors'] == 10
    assert len(result['problems']) == 17
    assert len(result['claims']) == 16
    lines = result['report_lines']
    assert lines[0] == 'DRA lab UNHEALTHY: 10 error(s), 7 warning(s)'
    assert lines[1] == 'Devices (gpu.example.com): %d/%d published on %d/%d nodes, %d allocated, %d free' % tuple(
        result['summary'][key] for key in ('devices_published', 'devices_expected', 'nodes_publishing',
                                           'nodes_expected', 'devices_allocated', 'devices_free'))
    assert lines[2].startswith('Claims: 16 total, 4 pending, 12 allocated (')
    nodes = lines[lines.index('Nodes:') + 1:lines.index('Problems:')]
    assert len(nodes) == len(result['nodes']) and all(line.startswith('  node') for line in nodes)
    problems = [line for line in lines[lines.index('Problems:') + 1:] if line.startswith('  ERROR ') or
                line.startswith('  WARNING ')]
    # Two pending claims' pods were turned down by the scheduler: its words follow each on a line of their own.
    assert len(lines) - lines.index('Problems:') - 1 == 17 + 2
    assert len(problems) == 17 and problems[0].startswith('  ERROR ')
    assert '  ERROR Node node3: node node3 publishes no ResourceSlice for driver gpu.example.com' in \
        [line[:len('  ERROR Node node3: node node3 publishes no ResourceSlice for driver gpu.example.com')]
         for line in problems]


def test_unhealthy_lab_only_warns_when_told():
    code, result = run({'fail_on_unhealthy': False}, FakeClient('broken'))
    assert code == 0
    assert not result.get('failed')
    assert result['healthy'] is False
    assert result['changed'] is False
    [warning] = [w for w in result['warnings'] if w.startswith('The DRA lab is unhealthy')]
    assert warning == (
        'The DRA lab is unhealthy: 10 error(s), 7 warning(s): Node node2, Node node3, ResourcePool gpu.example.com/node1, '
        'ResourceClaim user07/gpu-claim, ResourceClaim user08/gpu-claim, ResourceClaim user09/gpu-claim, '
        'ResourceClaim user15/gpu-claim, ResourceClaim user20/gpu-claim, ResourceClaim user22/gpu-claim, '
        'Device gpu.example.com/node2/gpu-2. The reasons and what to do are in the returned problems.')
    assert result['summary']['claims_pending'] == 4


def test_check_mode_runs_the_check():
    code, result = run({'_ansible_check_mode': True}, FakeClient('broken'))
    assert code == 1
    assert result['summary']['errors'] == 10


def test_options_reach_the_analysis():
    args = {'nodes': ['node1', 'node2'], 'expected_devices_per_node': 6, 'stale_claim_age': '2m',
            'fail_on_unhealthy': False}
    code, result = run(args, FakeClient('broken'))
    assert code == 0
    assert result['summary']['nodes_expected'] == 2
    assert result['summary']['devices_expected'] == 12
    types = [p['type'] for p in result['problems']]
    assert 'node_missing_slice' not in types and 'device_count_short' not in types
    stale = sorted(p['object'] for p in result['problems'] if p['type'] == 'claim_allocated_unused')
    assert stale == ['ResourceClaim user09/gpu-claim', 'ResourceClaim user10/gpu-claim']


def test_stale_claim_age_in_seconds():
    code, result = run({'stale_claim_age': 60, 'fail_on_unhealthy': False}, FakeClient('healthy'))
    assert code == 0
    assert [p['object'] for p in result['problems']] == ['ResourceClaim user04/gpu-claim']


def test_reads_every_list_and_pages_events():
    client = FakeClient('broken', page_size=1)
    code, result = run({'fail_on_unhealthy': False}, client)
    assert code == 0
    paths = [call[1] for call in client.calls if call[0] == 'list_items']
    # read in parallel: any order
    assert sorted(paths) == sorted([entry[1] for entry in dra_collect.LIST_PATHS] + [dra_collect.TAINT_RULES_PATH])
    event_calls = [query for kind, path, query in client.calls if path == '/api/v1/events']
    # The FailedResourceClaimCreation events are read apart (one page: none in the fixture).
    assert [q for q in event_calls if q['fieldSelector'] == 'reason=FailedResourceClaimCreation'] == [
        {'fieldSelector': 'reason=FailedResourceClaimCreation', 'limit': 500}]
    event_calls = [q for q in event_calls if q['fieldSelector'] != 'reason=FailedResourceClaimCreation']
    assert len(event_calls) == 2  # two FailedScheduling events, one per page
    assert all(q['fieldSelector'] == 'reason=FailedScheduling' and q['limit'] == 500 for q in event_calls)
    assert [q.get('continue') for q in event_calls] == [None, '1']
    # Both pages reached the analysis: the newest event (on page 2) explains user17's pending claim.
    generated = next(c for c in result['claims'] if c['namespace'] == 'user17')
    assert generated['pending_reason'].startswith('0/4 nodes are available: 1 node(s) had untolerated taint')


def test_events_can_be_skipped():
    client = FakeClient('broken')
    code, result = run({'include_events': False, 'fail_on_unhealthy': False}, client)
    assert code == 0
    assert not [c for c in client.calls if c[1] == '/api/v1/events']
    generated = next(c for c in result['claims'] if c['namespace'] == 'user17')
    assert generated['pending_reason'] == 'pod user17/train-1 is waiting for the scheduler'


def test_forbidden_events_only_warn():
    denied = K8sError('Kubernetes API GET /api/v1/events failed (HTTP 403): forbidden.', status=403)
    code, result = run({'fail_on_unhealthy': False}, FakeClient('broken', fail={'/api/v1/events': denied}))
    assert code == 0
    assert any('Could not read FailedScheduling events' in w and 'HTTP 403' in w for w in result['warnings'])
    assert result['summary']['claims_pending'] == 4


def test_api_error_fails_with_its_message():
    missing = K8sError('Kubernetes API GET /apis/resource.k8s.io/v1/resourceslices failed (HTTP 404): not found. '
                       'Is resource.k8s.io/v1 served (Kubernetes >= 1.34)?', status=404)
    client = FakeClient('healthy', fail={'/apis/resource.k8s.io/v1/resourceslices': missing})
    code, result = run({}, client)
    assert code == 1
    assert result['msg'] == str(missing)
    assert 'healthy' not in result


def test_invalid_stale_claim_age():
    code, result = run({'stale_claim_age': 'soon'}, FakeClient('healthy'))
    assert code == 1
    assert result['msg'].startswith("Invalid stale_claim_age: 'soon' is not a duration")


def test_negative_device_count():
    code, result = run({'expected_devices_per_node': -1}, FakeClient('healthy'))
    assert code == 1
    assert 'expected_devices_per_node must be 0 or more' in result['msg']


def test_argspec_has_auth_and_defaults():
    spec = dra_health.argspec()
    assert {'kubeconfig', 'context', 'host', 'api_key', 'validate_certs', 'ca_cert'} <= set(spec)
    assert spec['driver']['default'] == 'gpu.example.com'
    assert spec['expected_devices_per_node']['default'] == 8
    assert spec['stale_claim_age']['default'] == '1h'
    assert spec['fail_on_unhealthy']['default'] is True
    assert spec['include_events']['default'] is True


def test_message_lists_at_most_ten_errors():
    problems = [{'type': 'claim_device_unknown', 'severity': 'error', 'object': 'ResourceClaim u/c%d' % i,
                 'reason': 'reason %d' % i} for i in range(12)]
    report = {'problems': problems, 'summary': {'errors': 12, 'warnings': 0}}
    message = dra_report.unhealthy_message(report)
    assert 'ResourceClaim u/c9: reason 9' in message
    assert 'u/c10' not in message
    assert message.endswith('... and 2 more (see problems)')


def test_pending_claims_carry_the_explainer():
    _code, result = run({'fail_on_unhealthy': False}, FakeClient('broken'))
    pending = dict(((p['namespace'], p['name']), p) for p in result['problems'] if p['type'] == 'claim_pending')
    assert len(pending) == 4
    # Every pending problem says the explainer's diagnosis; the scheduler's text is kept apart (scheduler_said).
    huge = pending[('user19', 'huge-claim')]
    assert huge['explain_reason'] == 'no_such_class'
    assert huge['allocatable_now'] is False
    assert (huge['verdict'], huge['action']) == ('never_fits', 'change')
    assert huge['reason'] == ('claim user19/huge-claim is pending (pod user19/huge-1 waits for the scheduler) and '
                              'never fits as asked: ' + huge['explain_sentence'])
    assert 'gpu-huge.example.com, which does not exist' in huge['explain_sentence']
    assert huge['explain_sentence'].endswith('Change the request: name one of those classes.')
    for key, problem in pending.items():
        assert problem['explain_reason'] and problem['reason'].endswith(problem['explain_sentence']), key
        assert not problem['scheduler_said'] or problem['scheduler_said'] not in problem['reason'], key
    rows = dict(((c['namespace'], c['name']), c) for c in result['claims'])
    assert rows[('user19', 'huge-claim')]['explain_reason'] == 'no_such_class'
    assert all(row['explain_reason'] is None for row in rows.values() if row['state'] != 'pending')


def test_without_detail_only_the_holding_claims_are_returned():
    code, full = run({'fail_on_unhealthy': False}, FakeClient('broken'))
    code_small, small = run({'fail_on_unhealthy': False, 'detail': False}, FakeClient('broken'))
    assert code == code_small == 0
    assert small['claims'] == [c for c in full['claims'] if c['state'] != 'pending']
    assert small['summary'] == full['summary']
    assert set(p['type'] for p in small['problems']) == set(p['type'] for p in full['problems'])


def test_taint_rules_are_read_where_served_and_reported():
    rule = {'apiVersion': 'resource.k8s.io/v1alpha3', 'kind': 'DeviceTaintRule', 'metadata': {'name': 'maint'},
            'spec': {'deviceSelector': {'driver': 'gpu.example.com', 'pool': 'node1', 'device': 'gpu-0'},
                     'taint': {'key': 'dralab.workshop/maintenance', 'effect': 'NoSchedule'}}}
    client = FakeClient('healthy')
    client.lists[dra_collect.TAINT_RULES_PATH] = {'items': [rule]}
    code, result = run({}, client)
    assert code == 0 and result['healthy']
    assert result['tainted_devices'] == [{'driver': 'gpu.example.com', 'pool': 'node1', 'node': 'node1',
                                          'device': 'gpu-0', 'taints': [{'key': 'dralab.workshop/maintenance',
                                                                         'value': None, 'effect': 'NoSchedule',
                                                                         'rule': 'maint'}]}]
    assert result['summary']['devices_tainted'] == 1
    # Without the API (404) there are none, and no warning.
    code, result = run({}, FakeClient('healthy'))
    assert result['tainted_devices'] == [] and not result.get('warnings')


def run_at(args, client, now):
    return run_module('dra_health', args, client, now=now)


def test_snapshot_is_written_from_the_same_read_and_only_again_when_the_board_changes(tmp_path):
    dest = tmp_path / 'board-snapshot.html'
    client = FakeClient('healthy')
    code, result = run({'snapshot_dest': str(dest)}, client)
    assert code == 0 and result['changed'] is True and result['healthy'] is True
    assert oct(dest.stat().st_mode & 0o777) == '0o600'
    board = json.loads(dest.with_suffix('.json').read_text())
    assert board['generated'] == NOW and result['snapshot'] == {
        'dest': str(dest), 'summary': board['summary'], 'generated': NOW}
    assert board['summary']['devices'] == 24
    # One read of each kind for the report and the board together.
    paths = [call[1] for call in client.calls]
    # (events twice: FailedScheduling and FailedResourceClaimCreation, each read by its reason)
    assert '/api/v1/pods' in paths and paths.count('/api/v1/events') == 2 and len(paths) == len(set(paths)) + 1, paths
    before = dest.read_bytes()
    code, result = run_at({'snapshot_dest': str(dest)}, FakeClient('healthy'), '2026-10-28T10:05:00Z')
    assert code == 0 and result['changed'] is False and result['snapshot']['generated'] == NOW
    assert dest.read_bytes() == before


def test_snapshot_of_an_unhealthy_lab_is_written_before_the_module_fails(tmp_path):
    dest = tmp_path / 'board-snapshot.html'
    code, result = run({'snapshot_dest': str(dest), 'include_events': False}, FakeClient('broken'))
    assert code == 1 and result['failed'] is True and result['changed'] is True
    assert json.loads(dest.with_suffix('.json').read_text())['summary']['devices'] == 22


def test_snapshot_in_check_mode_writes_nothing(tmp_path):
    dest = tmp_path / 'board-snapshot.html'
    code, result = run({'snapshot_dest': str(dest), '_ansible_check_mode': True}, FakeClient('healthy'))
    assert code == 0 and result['changed'] is True and not dest.exists()


def test_snapshot_lease_max_is_checked_before_any_read(tmp_path):
    client = FakeClient('healthy')
    code, result = run({'snapshot_dest': str(tmp_path / 'b.html'), 'snapshot_lease_max': 'soon'}, client)
    assert code == 1 and 'snapshot_lease_max' in result['msg'] and not client.calls
    code, result = run({'snapshot_dest': str(tmp_path / 'b.html')}, client)
    assert code == 0 and client.calls, 'the fake client records the reads'


def test_snapshot_folder_is_made_when_missing(tmp_path):
    dest = tmp_path / 'artifacts' / 'board-snapshot.html'
    code, result = run({'snapshot_dest': str(dest)}, FakeClient('healthy'))
    assert code == 0 and dest.is_file() and oct(dest.parent.stat().st_mode & 0o777) == '0o700'


def test_snapshot_shows_the_modules_judgement_made_once(tmp_path):
    """With events read, the board is judged with the module's own options (here the expected node node9, which
    the board alone would not know), from the one analysis the report comes from."""
    dest = tmp_path / 'board-snapshot.html'
    args = {'snapshot_dest': str(dest), 'nodes': ['node1', 'node2', 'node3', 'node9'], 'fail_on_unhealthy': False}
    code, result = run(args, FakeClient('healthy'))
    assert code == 0 and result['healthy'] is False
    board = json.loads(dest.with_suffix('.json').read_text())
    assert [p['object'] for p in board['problems']] == [p['object'] for p in result['problems']] == ['Node node9']
    assert board['summary']['errors'] == result['summary']['errors'] == 1
    # Without events the board judges the objects itself, with its own options.
    dest.unlink()
    code, result = run(dict(args, include_events=False), FakeClient('healthy'))
    assert code == 0 and result['healthy'] is False
    assert json.loads(dest.with_suffix('.json').read_text())['problems'] == []
