# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dra_features filter and the role defaults that read it."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.filter.dra_features import FilterModule, dra_features

from render import evaluate, use_this_checkout


def test_filter_is_registered():
    assert FilterModule().filters() == {'dra_features': dra_features}


def test_filter_error_names_the_filter_and_the_item():
    with pytest.raises(AnsibleFilterError, match=r"dralab.workshop.dra_features: dralab_dra_features\[0\]"):
        dra_features(['consumable'], 'feature_gates')


@pytest.fixture(autouse=True)
def checkout():
    use_this_checkout()


def test_control_plane_gets_feature_gates_then_the_instructors():
    gates = evaluate('control_plane', 'control_plane_feature_gates',
                     {'dralab_dra_features': ['device_taints'], 'dralab_feature_gates': ['DRAAdminAccess=false']})
    assert gates == ['DRADeviceTaintRules', 'DRADeviceTaints', 'DRAAdminAccess=false']
    assert evaluate('control_plane', 'control_plane_feature_gates', {}) == []
    assert evaluate('control_plane', 'control_plane_apiserver_runtime_config',
                    {'dralab_dra_features': ['device_taints']}) == ['resource.k8s.io/v1alpha3=true']


def test_driver_values_classes_and_demos_follow_the_features():
    features = {'dralab_dra_features': ['consumable_capacity', 'prioritized_list']}
    assert evaluate('dra_driver', 'dra_driver_feature_values', features) == {'gpuAllowMultipleAllocations': True}
    classes = evaluate('device_classes', 'device_classes_feature_classes', features)
    assert [item['name'] for item in classes] == ['gpu-shared.example.com']
    assert evaluate('workshop_users', 'workshop_users_demos', features) == ['consumable-capacity', 'prioritized-list']
    assert evaluate('dra_driver', 'dra_driver_feature_values', {}) == {}
    assert evaluate('device_classes', 'device_classes_feature_classes', {}) == []
