# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seat/login_hosts.py: each seat's one login host, balanced, stable when seats are appended, set per seat."""

from __future__ import annotations

import collections

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.seat.login_hosts import (assign_login_hosts,
                                                                                       override_problems)
from ansible_collections.dralab.workshop.plugins.module_utils.seat.names import generate_seat_names

SEATS = generate_seat_names(72)


@pytest.mark.parametrize('count, hosts', [(72, 2), (72, 3), (73, 2), (5, 3), (2, 3), (1, 1), (300, 7)])
def test_balanced(count, hosts):
    logins = ['login%d' % number for number in range(1, hosts + 1)]
    assigned = assign_login_hosts(generate_seat_names(count), logins)
    assert list(assigned) == generate_seat_names(count), 'every seat, in seat order'
    counts = collections.Counter(assigned.values())
    assert set(counts) <= set(logins)
    per_host = [counts.get(host, 0) for host in logins]
    assert max(per_host) - min(per_host) <= 1, per_host
    assert sum(per_host) == count


def test_round_robin_over_the_sorted_hosts():
    assigned = assign_login_hosts(SEATS[:5], ['login2', 'login1'])
    assert assigned == {'user01': 'login1', 'user02': 'login2', 'user03': 'login1', 'user04': 'login2',
                        'user05': 'login1'}
    # The inventory's order and repeats do not matter: the same settings give the same hosts on every run.
    assert assign_login_hosts(SEATS[:5], ['login1', 'login2', 'login1']) == assigned


def test_appending_seats_moves_no_seat():
    hosts = ['login1', 'login2', 'login3']
    before = assign_login_hosts(SEATS, hosts, {'user05': 'login1'})
    after = assign_login_hosts(generate_seat_names(80), hosts, {'user05': 'login1'})
    assert dict((seat, after[seat]) for seat in SEATS) == before


def test_adding_a_login_host_moves_seats():
    # What the stability does not cover (the module's docstring and docs/runbook.md say so).
    before = assign_login_hosts(SEATS, ['login1', 'login2'])
    after = assign_login_hosts(SEATS, ['login1', 'login2', 'login3'])
    assert before != after
    assert [seat for seat in SEATS if before[seat] != after[seat]]


def test_an_override_moves_only_its_seat():
    plain = assign_login_hosts(SEATS, ['login1', 'login2'])
    moved = assign_login_hosts(SEATS, ['login1', 'login2'], {'user01': 'login2', 'user72': 'login2'})
    assert moved['user01'] == 'login2' and moved['user72'] == 'login2'
    assert [seat for seat in SEATS if moved[seat] != plain[seat]] == ['user01']


def test_no_login_hosts_no_host():
    assert assign_login_hosts(SEATS, []) == {}
    assert assign_login_hosts([], ['login1']) == {}


def test_explicit_seat_names_rotate_by_position():
    assert assign_login_hosts(['ana', 'bo', 'cy'], ['b', 'a']) == {'ana': 'a', 'bo': 'b', 'cy': 'a'}


def test_bad_overrides_are_refused():
    with pytest.raises(ValueError) as refused:
        assign_login_hosts(SEATS, ['login1'], {'user99': 'login1', 'user01': 'login7'})
    assert str(refused.value) == ("'login7' of seat user01 is not a login host (login hosts: login1); "
                                  "'user99' is not a seat of this lab (seats: user01, user02, user03, ..., user71, "
                                  "user72)")


def test_override_problems():
    assert override_problems(SEATS, ['login1'], None) == []
    assert override_problems(SEATS, ['login1'], {}) == []
    assert override_problems(SEATS, ['login1'], ['user01']) == [
        '["user01"] is not a mapping of seat names to login hosts']
    assert override_problems(['ana'], [], {'ana': 'login1'}) == [
        "'login1' of seat ana is not a login host (login hosts: none)"]
    assert override_problems(['ana', 'bo'], ['x'], {'cy': 'x'}) == ["'cy' is not a seat of this lab (seats: ana, bo)"]
