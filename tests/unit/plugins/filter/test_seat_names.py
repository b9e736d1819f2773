# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.filter.seat_names import FilterModule, seat_names


def test_defaults():
    assert seat_names(3) == ['user01', 'user02', 'user03']


def test_seventy_two_seats():
    names = seat_names(72)
    assert len(names) == 72
    assert names[0] == 'user01' and names[-1] == 'user72'


def test_width_is_a_minimum():
    assert seat_names(100)[-1] == 'user100'
    assert seat_names(1000)[-1] == 'user1000'
    assert seat_names(10)[8:] == ['user09', 'user10']


def test_prefix_and_width():
    assert seat_names(2, 'gpu', 3) == ['gpu001', 'gpu002']
    assert seat_names(2, prefix='s', width=1) == ['s1', 's2']


def test_zero_and_string_counts():
    assert seat_names(0) == []
    assert seat_names('2') == ['user01', 'user02']


@pytest.mark.parametrize('count, shown', [(-1, 'count -1 is negative'), ('x', "count 'x' is not an integer"),
                                          (2.5, 'count 2.5 is not an integer'), (None, 'count null is not an integer'),
                                          (True, 'count true is not an integer')])
def test_bad_count_names_the_value(count, shown):
    with pytest.raises(AnsibleFilterError) as info:
        seat_names(count)
    assert str(info.value) == 'dralab.workshop.seat_names: ' + shown


@pytest.mark.parametrize('prefix, width, shown', [
    ('user', -1, 'width -1 is negative'),
    ('user', 'w', "width 'w' is not an integer"),
    (3, 2, 'prefix 3 is not a string'),
])
def test_bad_prefix_or_width(prefix, width, shown):
    with pytest.raises(AnsibleFilterError, match=shown):
        seat_names(2, prefix, width)


def test_registered():
    assert FilterModule().filters() == {'seat_names': seat_names}
