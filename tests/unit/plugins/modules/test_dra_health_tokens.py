# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dra_health with seat_kubeconfig_dir (health.yml): the seat tokens' expiry, read from the seat kubeconfigs on
the controller, against the event's end; a warning in problems and report_lines, the lab still healthy."""

from __future__ import annotations

import datetime

from ansible_collections.dralab.workshop.plugins.module_utils.seat.tokens import render_kubeconfig
from ansible_collections.dralab.workshop.plugins.module_utils.values import UTC

from dra_fakes import FakeClient
from module_runner import run_module
from seat_fakes import make_token

NOW = '2026-10-28T10:00:00Z'
EPOCH = datetime.datetime(2026, 10, 28, 10, tzinfo=UTC).timestamp()
SEATS = ['user%02d' % n for n in range(1, 7)]  # the seat namespaces of the healthy fixture


def seat_kubeconfigs(folder, hours_left):
    """A kubeconfig per seat whose token expires hours_left (seat -> hours) after NOW."""
    folder.mkdir()
    for seat, hours in hours_left.items():
        token = make_token(seat, seat, iat=int(EPOCH - 3600), lifetime=int(3600 + hours * 3600))
        (folder / ('%s.kubeconfig' % seat)).write_text(render_kubeconfig(seat, seat, 'https://10.0.0.10:6443', token))
    return str(folder)


def test_tokens_that_end_before_the_event_are_a_warning_in_the_report(tmp_path):
    folder = seat_kubeconfigs(tmp_path / 'seats', dict((seat, 8) for seat in SEATS[:5]))  # no file for user06
    args = {'seat_kubeconfig_dir': folder, 'event_end': '2026-10-28T17:00:00+01:00', 'detail': False}
    code, result = run_module('dra_health', args, FakeClient('healthy'), now=NOW)
    assert code == 0 and result['healthy'] is True
    problems = [p for p in result['problems'] if p['type'] == 'seat_token_expiring']
    assert [p['seat'] for p in problems] == ['user06']
    assert problems[0]['reason'].startswith('seat user06 has no token to read (no kubeconfig file %s/user06.kubeconfig)'
                                            % folder)
    assert result['summary']['warnings'] == 1
    assert result['report_lines'][0] == 'DRA lab healthy: 0 error(s), 1 warning(s)'
    assert result['report_lines'][-1].startswith('  WARNING Seat user06: seat user06 has no token to read')

    args['event_end'] = '2026-10-28T19:01:00+01:00'  # a minute after the tokens end (18:00Z)
    code, result = run_module('dra_health', args, FakeClient('healthy'), now=NOW)
    problems = [p for p in result['problems'] if p['type'] == 'seat_token_expiring']
    # Without detail, the six warnings are one problem that counts them.
    assert len(problems) == 1 and problems[0]['count'] == 6 and problems[0]['objects'][0] == 'Seat user01'
    assert problems[0]['reason'].startswith('the token of seat user01 expires at 2026-10-28T18:00:00Z, 60s before the '
                                            'event ends (dralab_event_end 2026-10-28T18:01:00Z)')
    assert result['report_lines'][-1].startswith('  WARNING 6 x seat_token_expiring: Seat user01')


def test_without_an_end_tokens_ending_within_the_hour_are_a_warning(tmp_path):
    folder = seat_kubeconfigs(tmp_path / 'seats', dict((seat, 0.5 if seat == 'user03' else 8) for seat in SEATS))
    code, result = run_module('dra_health', {'seat_kubeconfig_dir': folder}, FakeClient('healthy'), now=NOW)
    assert code == 0 and [p['object'] for p in result['problems']] == ['Seat user03']
    assert 'expires at 2026-10-28T10:30:00Z, in 30m' in result['problems'][0]['reason']


def test_no_folder_no_token_check_and_a_bad_end_is_refused(tmp_path):
    code, result = run_module('dra_health', {}, FakeClient('healthy'), now=NOW)
    assert code == 0 and result['problems'] == []
    code, result = run_module('dra_health', {'seat_kubeconfig_dir': str(tmp_path), 'event_end': 'tonight'},
                              FakeClient('healthy'), now=NOW)
    assert code == 1 and result['msg'].startswith("Invalid event_end: 'tonight' is not an RFC 3339 time")


def test_etcd_near_its_quota_is_a_warning_then_an_error_and_writes_failing_an_error():
    # The recorded /metrics (dra_fakes: 17.9 MiB) against the default quota: nothing to say, the figures returned.
    code, result = run_module('dra_health', {}, FakeClient('healthy'), now=NOW)
    assert code == 0 and result['etcd'] == {'size_bytes': 18743296, 'quota_bytes': 4294967296, 'used_percent': 0.4,
                                            'lease_silence_seconds': None}
    assert not [p for p in result['problems'] if p['type'].startswith('etcd')]
    code, result = run_module('dra_health', {'etcd_quota_bytes': 22 * 2 ** 20}, FakeClient('healthy'), now=NOW)
    assert code == 0 and result['healthy'] is True
    assert result['report_lines'][-1].startswith("  WARNING etcd: etcd's database takes 17.9 MiB of its 22.0 MiB "
                                                 "quota (81%)")
    fresh = {'metadata': {'name': 'apiserver-a'}, 'spec': {'renewTime': '2026-10-28T09:59:55.000000Z'}}
    stale = {'metadata': {'name': 'apiserver-a'}, 'spec': {'renewTime': '2026-10-28T09:50:00.000000Z'}}
    code, result = run_module('dra_health', {'etcd_quota_bytes': 18 * 2 ** 20, 'fail_on_unhealthy': False},
                              FakeClient('healthy', leases=[fresh]), now=NOW)
    assert result['healthy'] is False and [p['type'] for p in result['problems']] == ['etcd_storage_full']
    code, result = run_module('dra_health', {'etcd_quota_bytes': 18 * 2 ** 20, 'fail_on_unhealthy': False},
                              FakeClient('healthy', leases=[stale]), now=NOW)
    assert [p['type'] for p in result['problems']] == ['etcd_storage_full', 'etcd_writes_failing']
    assert result['etcd']['lease_silence_seconds'] == 600


def test_etcd_unreadable_is_a_warning_and_zero_checks_nothing():
    from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError
    failing = FakeClient('healthy', fail={'/metrics': K8sError('forbidden: User "x" cannot get path "/metrics"',
                                                               status=403)})
    code, result = run_module('dra_health', {}, failing, now=NOW)
    assert code == 0 and 'etcd' not in result
    assert any(w.startswith('Cannot read the size of etcd: forbidden') for w in result['warnings'])
    code, result = run_module('dra_health', {'etcd_quota_bytes': 0}, failing, now=NOW)
    assert code == 0 and 'etcd' not in result and not result.get('warnings')
