# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: dra_features
short_description: What a list of DRA features turns on (gates, API versions, driver values, classes, demos)
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Takes C(dralab_dra_features), a list of feature names such as V(consumable_capacity) or V(device_taints), and
    returns one part of what those features need, from the one table of plugins/module_utils/dra/features.py
    (the README's DRA feature table is generated from it).
  - Fails on an unknown or repeated feature name (the preflight reports those first).
options:
  _input:
    description: The feature names.
    type: list
    elements: str
    required: true
  what:
    description:
      - V(feature_gates), the gate names (list); V(api_versions), entries of kube-apiserver's C(--runtime-config)
        (list); V(helm_values), values of the dra-example-driver chart (dictionary); V(device_classes), the
        DeviceClasses to add to the menu (list of name, description, selectors); V(demos), the folder names under
        docs/demos (list); V(driver_releases), more releases of the driver chart (list of suffix, name, driver,
        values); V(companion_classes), the DeviceClasses of which a seat's claim may hold one device beside its
        GPU (list); V(device_tolerations), the device taints the demos' claims tolerate (list of key, effect).
    type: str
    required: true
    choices: [feature_gates, api_versions, helm_values, device_classes, demos, driver_releases, companion_classes,
              device_tolerations]
  menu:
    description: With O(what=device_classes), the menu; classes it already names are left out.
    type: list
    elements: dict
  release_name:
    description: With O(what=driver_releases), the name of the driver's own release; each added release is
      named after it, C(<release_name>-<suffix>).
    type: str
positional: what, menu
"""

EXAMPLES = r"""
- name: Show the gates of the lab's DRA features
  ansible.builtin.debug:
    msg: "{{ dralab_dra_features | dralab.workshop.dra_features('feature_gates') }}"

# ['device_taints'] | dralab.workshop.dra_features('feature_gates') => ['DRADeviceTaintRules', 'DRADeviceTaints']
# ['device_taints'] | dralab.workshop.dra_features('api_versions') => ['resource.k8s.io/v1alpha3=true']
# ['consumable_capacity'] | dralab.workshop.dra_features('helm_values') => {'gpuAllowMultipleAllocations': true}
# ['gpu_nic_numa'] | dralab.workshop.dra_features('driver_releases', release_name='dra-example-driver')
#   => [{'suffix': 'net', 'name': 'dra-example-driver-net', 'driver': 'net.example.com',
#        'values': {'deviceProfile': 'net'}}]
"""

RETURN = r"""
_value:
  description: The part asked for; empty (list or dictionary) when no feature needs anything of it.
  type: raw
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import part


def dra_features(features, what, menu=None, release_name=None):
    """One part of what the features turn on."""
    try:
        return part(features, what, menu, release_name)
    except ValueError as exc:
        raise AnsibleFilterError('dralab.workshop.dra_features: %s' % exc) from None


class FilterModule(object):
    def filters(self):
        return {'dra_features': dra_features}
