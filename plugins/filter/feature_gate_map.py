# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: feature_gate_map
short_description: Kubernetes feature gates as a name to boolean mapping
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Returns the gates as a mapping name to boolean, sorted by name, for the C(featureGates) field of a
    KubeletConfiguration or KubeProxyConfiguration.
  - Takes the same input as P(dralab.workshop.feature_gates#filter) - a list of V(Name) or V(Name=true|false)
    strings or mappings, a mapping, or a comma-separated string; later settings override earlier ones and O(extra)
    overrides O(_input).
seealso:
  - plugin: dralab.workshop.feature_gates
    plugin_type: filter
positional: extra
extends_documentation_fragment:
  - dralab.workshop.feature_gates
"""

EXAMPLES = r"""
- name: Render the kubelet featureGates
  ansible.builtin.copy:
    content: "{{ {'featureGates': ['DRADeviceTaints'] | dralab.workshop.feature_gate_map(dralab_feature_gates)} | to_nice_yaml }}"
    dest: /var/lib/kubelet/feature-gates.yaml
    owner: root
    group: root
    mode: "0644"

# ['DRADeviceTaints', 'DRAAdminAccess=false'] | dralab.workshop.feature_gate_map
#   => {'DRAAdminAccess': false, 'DRADeviceTaints': true}
"""

RETURN = r"""
_value:
  description: The gates, name to boolean, sorted by name; empty when there are none.
  type: dictionary
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.dra.feature_gates import merge_feature_gates


def feature_gate_map(gates, extra=None, strict=False):
    """Return {name: bool} for the merged gates, sorted by name."""
    try:
        return merge_feature_gates(gates, extra, strict)
    except ValueError as exc:
        raise AnsibleFilterError('dralab.workshop.feature_gate_map: %s' % exc) from None


class FilterModule(object):
    def filters(self):
        return {'feature_gate_map': feature_gate_map}
