# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The event window: times with their offset, the API server's longest token from the same settings (the filter,
kubeadm's configuration), and the preflight's refusals, each naming its field."""

from __future__ import annotations

import datetime

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.filter.max_token_expiration import max_token_expiration
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.validate import validate
from ansible_collections.dralab.workshop.plugins.module_utils.seat import event
from ansible_collections.dralab.workshop.plugins.module_utils.values import UTC, parse_event_time

GROUPS = {'all': ['cp1', 'login1'], 'control_plane': ['cp1'], 'login': ['login1']}
# The afternoon before a workshop that runs 09:00-17:00 in Berlin (UTC+2).
NOW = datetime.datetime(2026, 10, 27, 13, 0, tzinfo=UTC)
START = '2026-10-28T09:00:00+02:00'
END = '2026-10-28T17:00:00+02:00'


def check(now=NOW, **settings):
    config = {'groups': GROUPS, 'hosts': GROUPS['all']}
    config.update(('dralab_' + key, value) for key, value in settings.items())
    return validate(config, now=now)


def only_error(field, **settings):
    errors, dummy = check(**settings)
    assert len(errors) == 1 and errors[0].startswith(field + ': '), errors
    return errors[0]


# ---------------------------------------------------------------- times as an instructor writes them

@pytest.mark.parametrize('text, utc', [
    ('2026-10-28T09:00:00+02:00', '2026-10-28 07:00:00'),
    ('2026-10-28T09:00:00Z', '2026-10-28 09:00:00'),
    ('2026-10-28 09:00-05:30', '2026-10-28 14:30:00'),
    ('2026-10-28T09:00:00.250+0100', '2026-10-28 08:00:00'),
])
def test_event_times_with_their_offset(text, utc):
    assert parse_event_time(text).strftime('%Y-%m-%d %H:%M:%S') == utc


def test_an_aware_datetime_is_read_and_empty_is_no_time():
    assert parse_event_time(datetime.datetime(2026, 10, 28, 9, tzinfo=UTC)).hour == 9
    assert parse_event_time('') is None and parse_event_time(None) is None


@pytest.mark.parametrize('value, reason', [
    ('2026-10-28T09:00:00', 'has no UTC offset (add it, for example 2026-10-28T09:00:00+02:00, or Z for UTC)'),
    (datetime.datetime(2026, 10, 28, 9), 'has no UTC offset'),
    ('tomorrow 9am', 'is not an RFC 3339 time with a UTC offset'),
    ('2026-02-30T09:00:00Z', 'is not a valid time'),
    (1800000000, 'is not an RFC 3339 time'),
])
def test_unreadable_event_times_are_refused(value, reason):
    with pytest.raises(ValueError, match=reason.replace('(', r'\(').replace(')', r'\)').replace('+', r'\+')):
        parse_event_time(value)


# ---------------------------------------------------------------- tokens and the API server's longest token

def test_tokens_last_until_the_end_and_a_margin():
    end = parse_event_time(END)
    assert event.valid_until(end) == end + datetime.timedelta(minutes=15)
    # Issued the afternoon before: 13:00Z to 15:15Z the next day.
    assert event.token_seconds(end, NOW) == 26 * 3600 + 15 * 60
    assert event.token_seconds(end, NOW + datetime.timedelta(microseconds=1)) == 26 * 3600 + 15 * 60


def test_the_longest_token_covers_the_event_window_and_not_the_duration():
    # 2d lead + the 8h event + 15m, whatever dralab_event_duration says.
    assert event.token_lifetime_cap('1h', START, END, '2d') == 2 * 86400 + 8 * 3600 + 900
    assert event.token_lifetime_cap('8h', START, END, '0') == 8 * 3600 + 900
    # Without an end: today's rule, the duration.
    assert event.token_lifetime_cap('12h') == event.token_lifetime_cap('12h', START, '', '2d') == 12 * 3600


@pytest.mark.parametrize('start, end, reason', [
    ('', END, 'dralab_event_end is set without dralab_event_start'),
    (END, START, 'is not after dralab_event_start'),
    (START, 'soon', 'is not an RFC 3339 time'),
])
def test_the_longest_token_refuses_a_bad_window(start, end, reason):
    with pytest.raises(ValueError, match=reason):
        event.token_lifetime_cap('8h', start, end, '2d')


def test_filter_gives_the_api_server_flag_for_the_window():
    assert max_token_expiration('8h') == '28800s'
    assert max_token_expiration('8h', START, END, '2d') == '%ds' % (2 * 86400 + 8 * 3600 + 900)
    # kube-apiserver's floor still holds.
    assert max_token_expiration('8h', START, '2026-10-28T09:10:00+02:00', '0') == '3600s'
    with pytest.raises(AnsibleFilterError, match='without dralab_event_start'):
        max_token_expiration('8h', '', END, '2d')


def test_kubeadm_configuration_takes_the_window():
    from render import render_role_template
    import yaml

    host = {'inventory_hostname': 'cp1', 'ansible_host': '192.0.2.10',
            'ansible_facts': {'default_ipv4': {'address': '10.0.0.5'}, 'architecture': 'x86_64'}}
    text = render_role_template('control_plane', 'kubeadm-config.yaml.j2',
                                dict(host, dralab_event_start=START, dralab_event_end=END, dralab_event_lead='1d'))
    [cluster] = [doc for doc in yaml.safe_load_all(text) if doc and doc['kind'] == 'ClusterConfiguration']
    flags = dict((arg['name'], arg['value']) for arg in cluster['apiServer']['extraArgs'])
    assert flags['service-account-max-token-expiration'] == '%ds' % (86400 + 8 * 3600 + 900)


# ---------------------------------------------------------------- the preflight

def test_a_window_the_day_before_is_accepted_without_warnings():
    assert check(event_start=START, event_end=END) == ([], [])
    assert check() == ([], [])


@pytest.mark.parametrize('settings, field, reason', [
    ({'event_start': START, 'event_end': 'tomorrow'}, 'dralab_event_end', "'tomorrow' is not an RFC 3339 time"),
    ({'event_start': '2026-10-28T09:00', 'event_end': END}, 'dralab_event_start', 'has no UTC offset'),
    ({'event_end': END}, 'dralab_event_start', 'empty while dralab_event_end is set: set both'),
    ({'event_start': START}, 'dralab_event_end', 'empty while dralab_event_start is set'),
    ({'event_start': END, 'event_end': START}, 'dralab_event_end',
     "'2026-10-28T09:00:00+02:00' is not after dralab_event_start '2026-10-28T17:00:00+02:00'"),
    ({'event_start': '2026-10-20T09:00:00Z', 'event_end': '2026-10-20T17:00:00Z'}, 'dralab_event_end',
     "'2026-10-20T17:00:00Z' is in the past (now is 2026-10-27T13:00:00Z): set the next event's start and end"),
    ({'event_start': START, 'event_end': '2026-11-28T17:00:00+02:00'}, 'dralab_event_end',
     'the event would last 31d, more than 14d (a wrong date?)'),
    ({'event_start': START, 'event_end': END, 'event_lead': 'a day'}, 'dralab_event_lead', "'a day' is not a duration"),
])
def test_the_preflight_refuses_a_bad_window(settings, field, reason):
    assert reason in only_error(field, **settings)


def test_tokens_issued_too_early_are_a_warning_that_says_when_to_run_users_yml():
    errors, warnings = check(now=NOW - datetime.timedelta(days=3), event_start=START, event_end=END)
    assert errors == []
    assert warnings == [
        'dralab_event_lead: dralab_event_start is 3d18h away, more than dralab_event_lead \'2d\': the API server issues '
        'tokens of at most 2d8h, so seat tokens issued now end at 2026-10-26T21:15:00Z, before the event ends. Run '
        'playbooks/users.yml again after 2026-10-26T07:00:00Z, or raise dralab_event_lead before the cluster is built']
