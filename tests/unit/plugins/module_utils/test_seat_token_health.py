# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""health.yml's warning about seat tokens: which seats, the wording (what happens, what to run), the report."""

from __future__ import annotations

import datetime

from ansible_collections.dralab.workshop.plugins.module_utils.dra import report as dra_report
from ansible_collections.dralab.workshop.plugins.module_utils.seat import token_health
from ansible_collections.dralab.workshop.plugins.module_utils.values import UTC

NOW = datetime.datetime(2026, 10, 28, 6, 0, tzinfo=UTC)  # 08:00 in Berlin, an hour before the workshop
END = '2026-10-28T17:00:00+02:00'


def at(hours):
    return (NOW + datetime.timedelta(hours=hours)).timestamp()


def test_with_an_end_a_token_that_ends_before_it_is_a_warning_that_says_what_to_run():
    expiries = {'user01': (at(9.25), None), 'user02': (at(5), None), 'user03': (at(-1), None)}
    problems = token_health.token_problems(expiries, NOW, END)
    assert [p['seat'] for p in problems] == ['user02', 'user03']
    assert problems[0] == {
        'type': 'seat_token_expiring', 'severity': 'warning', 'object': 'Seat user02', 'seat': 'user02',
        'expires': '2026-10-28T11:00:00Z',
        'reason': 'the token of seat user02 expires at 2026-10-28T11:00:00Z, 4h before the event ends (dralab_event_end '
                  '2026-10-28T15:00:00Z): its kubectl stops working then. Run playbooks/users.yml: it issues new seat '
                  'tokens that last until the event ends (dralab_event_end 2026-10-28T15:00:00Z) and 15 minutes more, '
                  'and copies the kubeconfigs to the login hosts.'}
    assert problems[1]['reason'].startswith('the token of seat user03 expired at 2026-10-28T05:00:00Z, so its kubectl '
                                            'fails now. Run playbooks/users.yml')


def test_without_an_end_only_tokens_that_end_within_the_hour_are_a_warning():
    expiries = {'user01': (at(2), None), 'user02': (at(0.5), None)}
    [problem] = token_health.token_problems(expiries, NOW, '')
    assert problem['reason'] == (
        'the token of seat user02 expires at 2026-10-28T06:30:00Z, in 30m: its kubectl stops working then. Run '
        'playbooks/users.yml: it issues new seat tokens that last dralab_event_duration from then; set '
        'dralab_event_start and dralab_event_end so they last the whole event, and copies the kubeconfigs to the '
        'login hosts.')


def test_a_seat_without_a_readable_token_is_a_warning():
    [problem] = token_health.token_problems({'user04': (None, 'no kubeconfig file /a/user04.kubeconfig')}, NOW, END)
    assert problem['reason'].startswith('seat user04 has no token to read (no kubeconfig file /a/user04.kubeconfig), '
                                        'so its kubectl cannot work. Run playbooks/users.yml')
    assert problem['expires'] is None


def test_the_seats_are_the_seat_namespaces():
    ours = {'app.kubernetes.io/managed-by': 'dralab.workshop'}
    namespaces = [{'metadata': {'name': 'user02', 'labels': dict(ours, **{'dralab.workshop/seat': 'user02'})}},
                  {'metadata': {'name': 'user01', 'labels': dict(ours, **{'dralab.workshop/seat': 'user01'})}},
                  {'metadata': {'name': 'fake', 'labels': {'dralab.workshop/seat': 'fake'}}},
                  {'metadata': {'name': 'kube-system'}}]
    assert token_health.seats_of(namespaces) == ['user01', 'user02']


def test_the_warnings_join_the_report_and_its_lines():
    report = {'healthy': True, 'problems': [], 'nodes': [], 'claims': [], 'shared_devices': [],
              'summary': {'errors': 0, 'warnings': 0, 'driver': 'gpu.example.com', 'devices_published': 0,
                          'devices_expected': 0, 'nodes_publishing': 0, 'nodes_expected': 0, 'devices_allocated': 0,
                          'devices_free': 0, 'claims_total': 0, 'claims_pending': 0, 'claims_allocated': 0,
                          'claims_reserved': 0}}
    assert token_health.add_problems(report, []) is report
    expiries = dict(('user%02d' % n, (at(8), None)) for n in range(1, 8))
    report = token_health.add_problems(report, token_health.token_problems(expiries, NOW, END))
    assert report['healthy'] is True and report['summary']['warnings'] == 7
    lines = dra_report.report_lines(report, detail=False)
    assert lines[0] == 'DRA lab healthy: 0 error(s), 7 warning(s)'
    assert lines[-1].startswith('  WARNING 7 x seat_token_expiring: Seat user01, Seat user02, Seat user03, Seat user04, '
                                'Seat user05 and 2 more. The first: the token of seat user01 expires at 2026-10-28T14:00:00Z')
    assert lines[-1].endswith('Run playbooks/users.yml: it issues new seat tokens that last until the event ends '
                              '(dralab_event_end 2026-10-28T15:00:00Z) and 15 minutes more, and copies the kubeconfigs '
                              'to the login hosts.')
