# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Seat tokens for an event window: issued the day before, they last until the event's end; a rerun keeps a token
that does (changed=0); rotation issues to the same rule; a token the API server cut short is reported."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.seat import tokens as st
from ansible_collections.dralab.workshop.plugins.module_utils.seat.event import END_MARGIN
from ansible_collections.dralab.workshop.plugins.module_utils.values import UTC

from seat_fakes import HOUR, NOW, CappedTokenApi, FakeTokenApi, make_token

# The event ends 30 hours after NOW (the afternoon before a day-long workshop).
END = datetime.datetime.fromtimestamp(NOW + 30 * HOUR, UTC)
SEATS = ['user01', 'user02']


def manage(api, tmp_path, now=NOW, **kwargs):
    return st.manage_tokens(api, SEATS, str(tmp_path / 'seats'), 'https://10.0.0.10:6443', now=now, event_end=END,
                            **kwargs)


def test_tokens_issued_the_day_before_last_until_the_end_and_its_margin(tmp_path):
    api = FakeTokenApi(SEATS)
    result = manage(api, tmp_path)
    assert result['issued'] == SEATS and result['short'] == []
    # Asked for the time until the end + 15m, not dralab_event_duration's 8h.
    assert {request[2]['spec']['expirationSeconds'] for request in api.requests} == {30 * HOUR + END_MARGIN}
    assert result['seats'][0]['expires'] == '2027-01-16T14:15:00Z'
    assert st.decode_jwt_payload(result['tokens']['user01'])['exp'] == END.timestamp() + END_MARGIN


def test_a_rerun_next_morning_keeps_tokens_that_cover_the_end(tmp_path):
    api = FakeTokenApi(SEATS)
    first = manage(api, tmp_path)
    # 08:00 next morning, and 20 minutes before the end: still no new token (no renewal margin with an end).
    for later in (18 * HOUR, 30 * HOUR - 1200):
        again = manage(api, tmp_path, now=NOW + later)
        assert again['changed'] is False and again['issued'] == [] and again['tokens'] == first['tokens']
        assert again['seats'][0]['reason'] == 'the stored token is valid until 2027-01-16T14:15:00Z, after the event ends'
    assert len(api.requests) == 2


def test_check_mode_on_converged_seats_changes_nothing(tmp_path):
    api = FakeTokenApi(SEATS)
    manage(api, tmp_path)
    assert manage(api, tmp_path, now=NOW + HOUR, check_mode=True)['changed'] is False


def test_tokens_of_the_duration_are_replaced_once_an_end_is_set(tmp_path):
    api = FakeTokenApi(SEATS)
    st.manage_tokens(api, SEATS, str(tmp_path / 'seats'), 'https://10.0.0.10:6443', now=NOW)  # 8h tokens
    result = manage(api, tmp_path, now=NOW + 60)
    assert result['issued'] == SEATS
    assert result['seats'][0]['reason'] == ('the stored token expires at 2027-01-15T16:00:00Z, before the event ends '
                                            'at 2027-01-16T14:00:00Z')


def test_rotation_issues_new_tokens_to_the_same_rule(tmp_path):
    """reset.yml's rotation recreates the seat's Secret: its new token lasts until the end as well."""
    api = FakeTokenApi(SEATS)
    manage(api, tmp_path)
    api.objects['/api/v1/namespaces/user02/secrets/dralab-seat-token']['metadata']['uid'] = 'secret-user02-2'
    api.issued_at = NOW + 20 * HOUR
    rotated = manage(api, tmp_path, now=NOW + 20 * HOUR)
    assert rotated['issued'] == ['user02']
    assert api.requests[-1][2]['spec']['expirationSeconds'] == 10 * HOUR + END_MARGIN
    assert rotated['seats'][1]['expires'] == '2027-01-16T14:15:00Z'


def test_a_token_the_api_server_cut_short_is_reported(tmp_path):
    api = CappedTokenApi(SEATS, max_seconds=8 * HOUR)
    result = manage(api, tmp_path)
    assert result['short'] == SEATS and result['issued'] == SEATS
    assert result['seats'][0]['expires'] == '2027-01-15T16:00:00Z'


def test_an_end_in_the_past_is_refused(tmp_path):
    with pytest.raises(ValueError, match='event_end 2027-01-16T14:00:00Z is not in the future'):
        manage(FakeTokenApi(SEATS), tmp_path, now=NOW + 30 * HOUR)


def test_a_token_issued_a_minute_before_the_end_still_lasts_its_margin(tmp_path):
    api = FakeTokenApi(SEATS, issued_at=NOW + 30 * HOUR - 60)
    manage(api, tmp_path, now=NOW + 30 * HOUR - 60)
    assert {request[2]['spec']['expirationSeconds'] for request in api.requests} == {60 + END_MARGIN}


def test_the_decision_with_an_end():
    cover = NOW + 8 * HOUR
    decide = st.token_decision
    assert decide(make_token(), NOW, 'user01', 'user01', 'sa-uid-1', 'dralab-seat-token', 'secret-uid-1', HOUR,
                  cover)[0] is True
    reuse, reason, dummy = decide(make_token(), NOW, 'user01', 'user01', 'sa-uid-1', 'dralab-seat-token',
                                  'secret-uid-1', HOUR, cover + 1)
    assert reuse is False and 'before the event ends' in reason


def test_stored_expiries_are_read_from_the_kubeconfig_files(tmp_path):
    manage(FakeTokenApi(SEATS), tmp_path)
    folder = tmp_path / 'seats'
    (folder / 'user02.kubeconfig').write_text('users: [{name: u, user: {token: garbage}}]\n')
    expiries = st.stored_expiries(str(folder), SEATS + ['user03'])
    assert expiries['user01'] == (END.timestamp() + END_MARGIN, None)
    assert expiries['user02'][0] is None and 'is unreadable: the token is not a JWT' in expiries['user02'][1]
    assert expiries['user03'] == (None, 'no kubeconfig file %s' % (folder / 'user03.kubeconfig'))
