#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: lab_preflight
short_description: Check the lab-wide dralab_* settings and the inventory before anything changes
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Validates the inventory and the lab-wide settings of a DRA workshop lab in one pass and fails listing every
    problem, each naming its variable, before any play changes a host.
  - Checks that the inventory has a control_plane host, the Kubernetes version is a 1.35.x semantic version (unless
    O(allow_unsupported_kubernetes_version)), the feature gates exist in Kubernetes 1.35 and are not locked to another
    value, the number of devices per node is within 1..128, the seat names are unique valid Linux user names and
    DNS-1123 labels, the DeviceClass menu is well formed (names, CEL selectors, opaque config), the login hosts are
    inventory hosts, the event duration parses, and the mirrors are well formed.
  - Reports what is allowed but probably unintended (more than one control_plane host, no login hosts, a locked gate
    set to its default) as warnings.
  - Every option except O(groups) and O(hosts) takes the value of the lab-wide variable of the same name with the
    C(dralab_) prefix; an option that is not set (or null) means the default documented in docs/conventions.md.
    Values are taken as given (type V(raw)) so that every bad value is reported, not only the first.
attributes:
  check_mode:
    support: full
    description: The module only reads its options; it behaves the same in check mode.
  diff_mode:
    support: none
    description: The module changes nothing, so there is nothing to show.
options:
  groups:
    description: The inventory's groups, name to list of host names (pass C(groups)).
    type: dict
    required: true
  hosts:
    description:
      - Every host name in the inventory (pass C(groups['all'])).
      - Defaults to the union of the hosts in O(groups).
    type: list
    elements: str
  kubernetes_version:
    description: C(dralab_kubernetes_version), for example V(1.35.4), without a leading V(v).
    type: raw
  allow_unsupported_kubernetes_version:
    description: C(dralab_allow_unsupported_kubernetes_version); a version outside 1.35.x is then a warning.
    type: raw
  download_mirror:
    description: C(dralab_download_mirror), an C(http://) or C(https://) base URL, or empty.
    type: raw
  registry_mirror:
    description: C(dralab_registry_mirror), C(host[:port]) of the registry mirror, or empty.
    type: raw
  feature_gates:
    description: C(dralab_feature_gates), a list of V(Name) or V(Name=true|false) (or a mapping name to boolean).
    type: raw
  cgroup_v1:
    description: C(dralab_cgroup_v1), a boolean.
    type: raw
  devices_per_node:
    description: C(dralab_devices_per_node), an integer within 1..128.
    type: raw
  seats:
    description: C(dralab_seats), an integer within 0..10000.
    type: raw
  seat_prefix:
    description: C(dralab_seat_prefix).
    type: raw
  seat_width:
    description: C(dralab_seat_width), an integer within 1..10.
    type: raw
  seat_names:
    description: C(dralab_seat_names), an explicit list of seat names that overrides O(seats), O(seat_prefix) and O(seat_width).
    type: raw
  event_duration:
    description: C(dralab_event_duration), for example V(8h); at least 10 minutes.
    type: raw
  device_classes:
    description:
      - C(dralab_device_classes), the DeviceClass menu of the device_classes role, checked with the same rules as
        M(dralab.workshop.device_class_menu) (names, selectors with non-empty CEL expressions, opaque config, known
        keys).
      - Not set means the role's default menu, which is not checked here.
    type: raw
  login_hosts:
    description: C(dralab_login_hosts), a list of inventory hosts; not set means C(groups['login']).
    type: raw
notes:
  - The module runs on the controller and contacts no host.
"""

EXAMPLES = r"""
- name: Check the lab configuration
  dralab.workshop.lab_preflight:
    groups: "{{ groups }}"
    hosts: "{{ groups['all'] }}"
    kubernetes_version: "{{ dralab_kubernetes_version | default('1.35.4') }}"
    feature_gates: "{{ dralab_feature_gates | default([]) }}"
    devices_per_node: "{{ dralab_devices_per_node | default(8) }}"
    seats: "{{ dralab_seats | default(72) }}"
    login_hosts: "{{ dralab_login_hosts | default(groups['login'] | default([])) }}"
"""

RETURN = r"""
errors:
  description: Every problem found, each starting with the variable it is about. Empty when the module succeeds.
  returned: always
  type: list
  elements: str
  sample:
    - "dralab_devices_per_node: 200 is outside 1..128"
    - "dralab_feature_gates: unknown feature gate 'FooBar' for Kubernetes 1.35"
lab_warnings:
  description: What is allowed but probably unintended; also emitted as warnings.
  returned: always
  type: list
  elements: str
  sample:
    - "groups['control_plane']: 2 hosts (cp1, cp2); only the first, cp1, is initialised (no HA control plane)"
seat_names:
  description: The seat names the lab will create.
  returned: success
  type: list
  elements: str
  sample: [user01, user02]
feature_gates:
  description: The lab-wide feature gates, name to boolean.
  returned: success
  type: dict
  sample: {DRADeviceTaints: true}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.lab_config import effective_settings, validate

# Options that carry a lab-wide dralab_<option> variable.
LAB_OPTIONS = (
    'kubernetes_version', 'allow_unsupported_kubernetes_version', 'download_mirror', 'registry_mirror',
    'feature_gates', 'cgroup_v1', 'devices_per_node', 'seats', 'seat_prefix', 'seat_width', 'seat_names',
    'event_duration', 'device_classes', 'login_hosts',
)


def argspec():
    spec = dict(
        groups=dict(type='dict', required=True),
        hosts=dict(type='list', elements='str'),
    )
    for name in LAB_OPTIONS:
        spec[name] = dict(type='raw')
    return spec


def lab_config(params):
    """The validate() input for the module parameters."""
    config = dict(('dralab_' + name, params.get(name)) for name in LAB_OPTIONS)
    config['groups'] = params['groups']
    config['hosts'] = params.get('hosts')
    return config


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    config = lab_config(module.params)
    errors, warnings = validate(config)
    for warning in warnings:
        module.warn(warning)
    if errors:
        module.fail_json(
            msg='Preflight found %d problem(s): %s' % (len(errors), '; '.join(errors)),
            errors=errors,
            lab_warnings=warnings,
        )
    module.exit_json(changed=False, errors=[], lab_warnings=warnings, **effective_settings(config))


if __name__ == '__main__':
    main()
