# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""values.py: how one plain value is read (durations, quantities), which every layer imports from values."""

from __future__ import annotations

from fractions import Fraction

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils import values


@pytest.mark.parametrize('value, seconds', [
    (3600, 3600), ('3600', 3600), ('90s', 90), ('30m', 1800), ('1h', 3600), ('2d', 172800), ('1w', 604800),
    ('1h30m', 5400), (' 2H ', 7200), (0, 0),
])
def test_parse_duration(value, seconds):
    assert values.parse_duration(value) == seconds


@pytest.mark.parametrize('value', ['', 'soon', '1x', '1h 30', '-5', True, '30mm'])
def test_parse_duration_rejects(value):
    with pytest.raises(ValueError, match='duration'):
        values.parse_duration(value)


def test_parse_duration_units_and_refusals():
    parse = values.parse_duration
    assert parse('8h') == 28800
    assert parse('90m') == 5400
    assert parse('2d') == 172800
    assert parse('1h30m') == 5400
    assert parse('3600s') == 3600
    assert parse('1w2d3h4m5s') == 7 * 86400 + 2 * 86400 + 3 * 3600 + 4 * 60 + 5
    assert parse(' 8H ') == 28800
    assert parse(0) == 0
    assert parse('42') == 42
    for bad in ('8x', '1.5h', '-1h', None, 1.5, '1h1h', ''):
        with pytest.raises(ValueError, match='is not a duration'):
            parse(bad)


@pytest.mark.parametrize('text,value', [
    ('80Gi', 80 * 2 ** 30), ('500m', Fraction(1, 2)), ('1.5k', 1500), ('1e3', 1000), ('-2Ki', -2048),
    ('100', 100), ('.5', Fraction(1, 2)), ('2E', 2 * 10 ** 18),
])
def test_parse_quantity(text, value):
    assert values.parse_quantity(text) == value


@pytest.mark.parametrize('text', ['', 'Gi', '1 Gi', '1GiB', 'one', '1.2.3'])
def test_parse_quantity_rejects(text):
    with pytest.raises(ValueError):
        values.parse_quantity(text)


def test_format_quantity():
    assert values.format_quantity(Fraction(80 * 2 ** 30)) == '80Gi'
    assert values.format_quantity(Fraction(1000)) == '1000'
    assert values.format_quantity(Fraction(1, 2)) == '0.5'


def test_format_quantity_in_decimal_units_as_nics_publish_bandwidth():
    assert values.format_quantity(Fraction(2 * 10 ** 9), decimal=True) == '2G'
    assert values.format_quantity(Fraction(98 * 10 ** 9), decimal=True) == '98G'
    assert values.format_quantity(Fraction(100), decimal=True) == '100'
    assert [values.is_decimal_quantity(t) for t in ('100G', '5k', '80Gi', '100', '1e3', None)] == [
        True, True, False, False, False, False]


def test_format_time_takes_a_datetime_or_seconds_since_the_epoch():
    import datetime
    from ansible_collections.dralab.workshop.plugins.module_utils.values import format_time
    moment = datetime.datetime(2026, 12, 4, 9, 30, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert format_time(moment) == '2026-12-04T07:30:05Z'
    assert format_time(moment.timestamp()) == '2026-12-04T07:30:05Z'
    assert format_time(int(moment.timestamp())) == '2026-12-04T07:30:05Z'
    assert format_time(None) is None
