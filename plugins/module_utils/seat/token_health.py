# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seat tokens judged for health.yml: a warning for every seat whose token ends before the event does.

With an event end (dralab_event_end), a seat token that expires before it is a problem; without one, a token
that expires within SOON (users.yml renews those too). The expiries are what the seat kubeconfig files on the
controller hold (seat/tokens.py stored_expiries reads them): no token is sent to the API. Each problem says
what to run: playbooks/users.yml issues the tokens again and copies the kubeconfigs to the login hosts.
"""

from __future__ import annotations

import datetime

from ansible_collections.dralab.workshop.plugins.module_utils.dra.health import ERROR, WARNING
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import seat_of
from ansible_collections.dralab.workshop.plugins.module_utils.values import (
    UTC,
    format_age,
    format_time,
    parse_event_time,
    parse_time,
)

PROBLEM_TYPE = 'seat_token_expiring'
# Without an event end, a token that expires within this is a problem (users.yml renews it, renew_before).
SOON = 3600


def seats_of(namespaces):
    """The seats of the lab: the names of our seat namespaces, sorted."""
    return sorted(set(seat for seat in (seat_of(ns) for ns in namespaces or []) if seat))


def _what_to_run(event_end):
    lasting = ('last until the event ends (dralab_event_end %s) and 15 minutes more' % format_time(event_end)
               if event_end else 'last dralab_event_duration from then; set dralab_event_start and dralab_event_end '
                                 'so they last the whole event')
    return 'Run playbooks/users.yml: it issues new seat tokens that %s, and copies the kubeconfigs to the login ' \
           'hosts.' % lasting


def _reason(seat, expires, why, now, event_end):
    if expires is None:
        return 'seat %s has no token to read (%s), so its kubectl cannot work.' % (seat, why)
    if expires <= now:
        return 'the token of seat %s expired at %s, so its kubectl fails now.' % (seat, format_time(expires))
    if event_end is not None:
        if expires >= event_end:
            return None
        return ('the token of seat %s expires at %s, %s before the event ends (dralab_event_end %s): its kubectl '
                'stops working then.' % (seat, format_time(expires), format_age((event_end - expires).total_seconds()),
                                         format_time(event_end)))
    if (expires - now).total_seconds() > SOON:
        return None
    return 'the token of seat %s expires at %s, in %s: its kubectl stops working then.' % (
        seat, format_time(expires), format_age((expires - now).total_seconds()))


def token_problems(expiries, now=None, event_end=''):
    """The seat_token_expiring warnings for expiries (seat -> (epoch or None, why not), stored_expiries' answer).

    now: aware datetime or RFC 3339 (default: the current time); event_end: dralab_event_end (RFC 3339 with an
    offset, or empty). Raises ValueError on an unreadable event_end.
    """
    now = parse_time(now) if now is not None else datetime.datetime.now(UTC)
    end = parse_event_time(event_end)
    problems = []
    for seat in sorted(expiries):
        epoch, why = expiries[seat]
        expires = datetime.datetime.fromtimestamp(epoch, UTC) if epoch is not None else None
        reason = _reason(seat, expires, why, now, end)
        if reason:
            problems.append({'type': PROBLEM_TYPE, 'severity': WARNING, 'object': 'Seat %s' % seat,
                             'reason': '%s %s' % (reason, _what_to_run(end)), 'seat': seat,
                             'expires': format_time(expires)})
    return problems


def add_problems(report, problems):
    """The health report with more problems (these warnings, etcd's: k8s/etcd.py): listed after its own, counted in
    its summary; an error makes the lab unhealthy."""
    if not problems:
        return report
    errors = sum(1 for problem in problems if problem['severity'] == ERROR)
    summary = dict(report['summary'], warnings=report['summary']['warnings'] + len(problems) - errors,
                   errors=report['summary']['errors'] + errors)
    return dict(report, problems=report['problems'] + problems, summary=summary,
                healthy=report['healthy'] and not errors)
