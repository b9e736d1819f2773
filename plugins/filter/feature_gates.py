# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: feature_gates
short_description: Kubernetes feature gates as a --feature-gates string
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Returns the gates as C(A=true,B=false), sorted by name, each gate once, for the C(feature-gates) extraArgs of
    kubeadm's ClusterConfiguration (apiServer, controllerManager, scheduler).
  - Gates are given as a list of V(Name) (meaning true) or V(Name=true|false) strings or mappings, as a mapping
    name to boolean, or as a comma-separated string. A later setting of a gate overrides an earlier one, and O(extra)
    overrides O(_input).
  - For the C(featureGates) map of a KubeletConfiguration or KubeProxyConfiguration use
    P(dralab.workshop.feature_gate_map#filter).
seealso:
  - plugin: dralab.workshop.feature_gate_map
    plugin_type: filter
positional: extra
extends_documentation_fragment:
  - dralab.workshop.feature_gates
"""

EXAMPLES = r"""
- name: Show the gates kubeadm passes to the control plane
  ansible.builtin.debug:
    msg: "{{ ['DRADeviceTaints', 'DRAConsumableCapacity'] | dralab.workshop.feature_gates(dralab_feature_gates) }}"

# ['DRADeviceTaints', 'DRAAdminAccess=false'] | dralab.workshop.feature_gates
#   => 'DRAAdminAccess=false,DRADeviceTaints=true'
# {'DRADeviceTaints': true} | dralab.workshop.feature_gates(['DRADeviceTaints=false'])
#   => 'DRADeviceTaints=false'
# [] | dralab.workshop.feature_gates => ''
"""

RETURN = r"""
_value:
  description: The gates as C(Name=true|false) joined by commas, sorted; empty when there are none.
  type: string
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.dra.feature_gates import feature_gate_string, merge_feature_gates


def feature_gates(gates, extra=None, strict=False):
    """Return "A=true,B=false" for the merged gates, sorted by name."""
    try:
        return feature_gate_string(merge_feature_gates(gates, extra, strict))
    except ValueError as exc:
        raise AnsibleFilterError('dralab.workshop.feature_gates: %s' % exc) from None


class FilterModule(object):
    def filters(self):
        return {'feature_gates': feature_gates}
