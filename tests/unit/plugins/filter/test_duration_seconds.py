# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.filter.duration_seconds import FilterModule, duration_seconds


@pytest.mark.parametrize('value, seconds', [
    ('8h', 28800),
    ('90m', 5400),
    ('2d', 172800),
    ('1h30m', 5400),
    ('3600s', 3600),
    ('1w', 604800),
    ('1d12h', 129600),
    ('2h0m30s', 7230),
    ('8H', 28800),
    (' 1h 30m ', 5400),
    ('3600', 3600),
    (3600, 3600),
    (0, 0),
])
def test_durations(value, seconds):
    assert duration_seconds(value) == seconds


@pytest.mark.parametrize('value, shown', [
    ('8x', "'8x'"),
    ('', "''"),
    ('h', "'h'"),
    ('1.5h', "'1.5h'"),
    ('30m1h', "'30m1h'"),
    ('1h1h', "'1h1h'"),
    (None, 'null'),
    (True, 'true'),
    (1.5, '1.5'),
    ([1], '[1]'),
])
def test_bad_duration_names_the_value(value, shown):
    with pytest.raises(AnsibleFilterError) as info:
        duration_seconds(value)
    assert str(info.value).startswith('dralab.workshop.duration_seconds: %s is not a duration' % shown)


def test_negative_seconds():
    with pytest.raises(AnsibleFilterError, match='-5 is a negative duration'):
        duration_seconds(-5)


def test_registered():
    assert FilterModule().filters() == {'duration_seconds': duration_seconds}
