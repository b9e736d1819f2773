# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The feature_gates (string) and feature_gate_map (mapping) filters."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.filter import feature_gate_map as map_plugin
from ansible_collections.dralab.workshop.plugins.filter import feature_gates as string_plugin

feature_gates = string_plugin.feature_gates
feature_gate_map = map_plugin.feature_gate_map


def test_list_of_names_is_sorted_and_deduplicated():
    assert feature_gates(['DRADeviceTaints', 'DRAConsumableCapacity', 'DRADeviceTaints']) == \
        'DRAConsumableCapacity=true,DRADeviceTaints=true'


def test_explicit_values_and_mixed_forms():
    gates = ['DRAAdminAccess=false', 'DRADeviceTaints=True', {'DRAExtendedResource': True}, ' DRAPartitionableDevices ']
    assert feature_gates(gates) == \
        'DRAAdminAccess=false,DRADeviceTaints=true,DRAExtendedResource=true,DRAPartitionableDevices=true'


def test_mapping_input():
    assert feature_gates({'B': False, 'A': True}) == 'A=true,B=false'
    assert feature_gate_map({'B': 'false', 'A': 'true'}) == {'A': True, 'B': False}


def test_comma_separated_string_input():
    assert feature_gates('B=false, A') == 'A=true,B=false'


def test_later_setting_wins_and_extra_overrides():
    assert feature_gates(['A', 'A=false']) == 'A=false'
    assert feature_gates(['A', 'B'], ['A=false']) == 'A=false,B=true'
    assert feature_gate_map({'DRADeviceTaints': True}, {'DRADeviceTaints': False}) == {'DRADeviceTaints': False}


@pytest.mark.parametrize('empty', [[], {}, '', None])
def test_empty(empty):
    assert feature_gates(empty) == ''
    assert feature_gate_map(empty) == {}
    assert feature_gates(['A'], empty) == 'A=true'


def test_map_is_sorted():
    result = feature_gate_map(['Zeta', 'Alpha=false', 'Mid'])
    assert list(result) == ['Alpha', 'Mid', 'Zeta']
    assert result == {'Alpha': False, 'Mid': True, 'Zeta': True}


@pytest.mark.parametrize('gates, part', [
    (['A=maybe'], "input: item 0: A must be true or false, not 'maybe'"),
    (['=true'], "input: item 0: '' is not a feature gate name"),
    (['two words'], "input: item 0: 'two words' is not a feature gate name"),
    ([3], 'input: item 0: 3 is not "Name", "Name=true|false" or a mapping'),
    (5, 'input: 5 is not a list, a mapping or a comma-separated string'),
])
def test_bad_input_names_the_value(gates, part):
    for function, name in ((feature_gates, 'feature_gates'), (feature_gate_map, 'feature_gate_map')):
        with pytest.raises(AnsibleFilterError) as info:
            function(gates)
        assert str(info.value) == 'dralab.workshop.%s: %s' % (name, part)


def test_bad_extra_is_labelled():
    with pytest.raises(AnsibleFilterError, match='extra: item 1: B must be true or false'):
        feature_gates(['A'], ['C', 'B=2'])


def test_names_are_not_checked_unless_strict():
    assert feature_gates(['FooBar']) == 'FooBar=true'
    with pytest.raises(AnsibleFilterError, match="unknown feature gate 'FooBar' for Kubernetes 1.35"):
        feature_gates(['FooBar'], strict=True)
    with pytest.raises(AnsibleFilterError, match=r'did you mean DRADeviceTaints\?'):
        feature_gate_map(['DRADeviceTaint'], strict=True)


def test_strict_refuses_a_locked_gate_against_its_default():
    with pytest.raises(AnsibleFilterError, match='DynamicResourceAllocation is GA and locked to true'):
        feature_gates(['DynamicResourceAllocation=false'], strict=True)
    assert feature_gates(['DynamicResourceAllocation', 'DRAConsumableCapacity'], strict=True) == \
        'DRAConsumableCapacity=true,DynamicResourceAllocation=true'


def test_registered():
    assert string_plugin.FilterModule().filters() == {'feature_gates': feature_gates}
    assert map_plugin.FilterModule().filters() == {'feature_gate_map': feature_gate_map}
