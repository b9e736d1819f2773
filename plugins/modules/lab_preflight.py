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
    value, the integer settings are within their bounds, the seat names are unique valid Linux user names and
    DNS-1123 labels, the DeviceClass menu is well formed (names, CEL selectors, opaque config), the login hosts are
    inventory hosts, the durations parse and are long enough, the event window (C(dralab_event_start),
    C(dralab_event_end)) has UTC offsets, both ends, an end after the start and in the future and a plausible length,
    and the mirrors are well formed.
  - The bounds and defaults of every setting are defined once, in plugins/module_utils/lab_settings.py, and listed in
    the settings table of the collection's README.md; this documentation does not repeat them.
  - Compiles every CEL selector of the DeviceClass menu in the DRA CEL environment (plugins/module_utils/dra/cel.py,
    the same code the pending-claim explainer uses), so a selector with a syntax error, an unknown variable or an
    unknown function stops the run before the cluster is built.
  - Fails on more than one control_plane host (the lab builds no HA control plane), pod and Service networks that
    are not CIDRs or overlap each other or a node address, and chart or image versions of the dra_driver role that
    are not semantic versions.
  - Fails, naming the host and the field, on the topology and address mistakes that would otherwise reach hosts
    before any change. Workers without a control_plane host; a host in none of the groups the playbooks
    use (C(control_plane), C(workers), C(login), C(mirror)) when it is ungrouped or in a group whose name is close
    to one of them (a host in another group is a warning); a O(login_hosts) entry outside the C(login) group; a
    node whose address is IPv6, loopback, unspecified, link-local or multicast (the lab is IPv4 only, and the
    address becomes the node's IP); two hosts with the same address; IPv6 pod or Service networks; a pod network
    outside /8../24 or without a /24 for every node; a Service network smaller than /28 (kubeadm gives DNS its
    10th address); a registry or download mirror inside the pod or Service network.
  - With O(host_settings), resolves every lab-wide setting once from what each host of the lab sees, fails when a
    setting differs between hosts (set on a group other than C(all)), and fails on C(dralab_*) variables that
    are not lab settings, naming the closest known one (a misspelt setting would otherwise be ignored).
  - Reports what is allowed but probably unintended (no login hosts, a locked gate set to its default, a control
    plane host also listed in C(workers), a host in a group the playbooks do not use) as warnings.
  - Every option from O(kubernetes_version) to O(login_hosts) takes the value of the lab-wide variable of the same
    name with the C(dralab_) prefix and overrides O(host_settings); a setting set nowhere means its default
    (plugins/module_utils/lab_settings.py, the one definition of every setting).
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
  host_settings:
    description:
      - The C(dralab_*) variables each host of the lab sees, host name to a mapping of variable name to value
        (localhost included).
    type: dict
  node_addresses:
    description: The address (C(ansible_host)) of each host of C(control_plane), C(workers) and C(login), host name to
      address; names that are not IP addresses are only compared with each other.
    type: dict
  internal_addresses:
    description: The C(internal_address) of those hosts that set one (the address the cluster uses between its hosts,
      README.md, Addresses), host name to address.
    type: dict
  access_addresses:
    description: The C(access_address) of those hosts that set one (the address the controller and people reach,
      README.md, Addresses), host name to address.
    type: dict
  role_versions:
    description: The chart and image versions of the dra_driver role the inventory sets (C(dra_driver_chart_version),
      C(dra_driver_helm_version), C(dra_driver_image_tag)), variable name to value.
    type: dict
  role_bounds:
    description:
      - The role variables that bound one seat which the inventory sets on the controller (the names of
        C(ROLE_BOUNDS) in plugins/module_utils/lab_settings.py, for example C(workshop_users_quota_objects),
        C(workshop_users_pod_grace_max), C(lab_reset_grace_period_seconds)), variable name to value.
      - A count below what the lab keeps in every seat namespace and what can-has-gpu and the demos of the lab's DRA
        features need, a grace period below 30 seconds, or a reset grace period that leaves the reset's wait no time
        fails, naming the variable.
    type: dict
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
    description: C(dralab_devices_per_node), an integer within the bounds of the settings table.
    type: raw
  seats:
    description: C(dralab_seats), an integer within the bounds of the settings table.
    type: raw
  seat_prefix:
    description: C(dralab_seat_prefix).
    type: raw
  seat_width:
    description: C(dralab_seat_width), an integer within the bounds of the settings table.
    type: raw
  seat_names:
    description: C(dralab_seat_names), an explicit list of seat names that overrides O(seats), O(seat_prefix) and O(seat_width).
    type: raw
  event_duration:
    description: C(dralab_event_duration), a duration such as V(8h), no shorter than the settings table says.
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
  check_api:
    description:
      - Once the settings are valid, also ask the API server for its version and who the lab's admin kubeconfig
        (C(dralab_kubeconfig) as resolved from O(host_settings), else C(~/.dralab/admin.conf)) is, as
        M(dralab.workshop.k8s_api_check) does, and fail with its sentence when the API does not answer or refuses
        the kubeconfig.
      - The playbooks that work on a running cluster set it, so their preflight checks settings and API in one run.
    type: bool
    default: false
  controller_ansible_version:
    description:
      - The controller's ansible-core version (pass C(ansible_version.full)). When set, the module first checks it and
        the Python it runs on (the preflight runs it on C(ansible_playbook_python), the controller's) against what
        the collection supports (ansible-core 2.21 or newer on Python 3.12 or newer) and fails with one sentence,
        before any other check, on an older one.
    type: str
requirements:
  - cel-python (Python library C(celpy)) on the controller
  - the Python C(kubernetes) client on the controller, for O(check_api)
notes:
  - The module runs on the controller and contacts no host; with O(check_api) it contacts the API server only.
"""

EXAMPLES = r"""
# playbooks/preflight.yml passes every host's dralab_* variables as host_settings.
# Options not given (and settings set nowhere) mean the registry's defaults.
- name: Check the inventory with 3 seats and one more feature gate
  dralab.workshop.lab_preflight:
    groups: "{{ groups }}"
    hosts: "{{ groups['all'] }}"
    seats: 3
    feature_gates: [DRADeviceTaints]
"""

RETURN = r"""
errors:
  description: Every problem found, each starting with the variable it is about. Empty when the module succeeds.
  returned: always
  type: list
  elements: str
  sample:
    - "dralab_seat is not a lab setting; did you mean dralab_seats? (set for localhost)"
    - "dralab_feature_gates: unknown feature gate 'FooBar' for Kubernetes 1.35"
lab_warnings:
  description: What is allowed but probably unintended; also emitted as warnings.
  returned: always
  type: list
  elements: str
  sample:
    - "dralab_login_hosts: no login hosts; seats get a kubeconfig but no Linux account"
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
settings:
  description: The lab settings set somewhere in the inventory or on the command line, resolved once; the same on
    every host of the lab.
  returned: success
  type: dict
  sample: {dralab_seats: 3}
api:
  description: With O(check_api), the API server that answered and who the admin kubeconfig is there.
  returned: success with O(check_api)
  type: dict
  contains:
    host:
      description: URL of the API server.
      type: str
    version:
      description: The API server's version (C(gitVersion)).
      type: str
    user:
      description: The user name the API server sees for the kubeconfig.
      type: str
    groups:
      description: The groups the API server sees for the kubeconfig.
      type: list
      elements: str
  sample: {host: "https://10.89.42.11:6443", version: v1.35.4, user: kubernetes-admin, groups: [kubeadm:cluster-admins]}
"""

import sys

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel as dra_cel
from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel_types
from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import feature_gates, feature_problems
from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import admin_kubeconfig

from ansible_collections.dralab.workshop.plugins.module_utils.dra.feature_gates import parse_feature_gates
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.controller import controller_problem
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.resolve import resolve_hosts
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.validate import effective_settings, validate

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
        host_settings=dict(type='dict'),
        node_addresses=dict(type='dict'),
        internal_addresses=dict(type='dict'),
        access_addresses=dict(type='dict'),
        role_versions=dict(type='dict'),
        role_bounds=dict(type='dict'),
        check_api=dict(type='bool', default=False),
        controller_ansible_version=dict(type='str'),
    )
    for name in LAB_OPTIONS:
        spec[name] = dict(type='raw')
    return spec


def lab_config(params, resolved=None):
    """The validate() input for the module parameters (explicit options over the resolved settings)."""
    config = dict(resolved or {})
    for name in LAB_OPTIONS:
        if params.get(name) is not None:
            config['dralab_' + name] = params[name]
    config['groups'] = params['groups']
    config['hosts'] = params.get('hosts')
    config['node_addresses'] = params.get('node_addresses')
    config['internal_addresses'] = params.get('internal_addresses')
    config['access_addresses'] = params.get('access_addresses')
    config['role_versions'] = params.get('role_versions')
    config['role_bounds'] = params.get('role_bounds')
    return config


def cel_checker(config):
    """compile_problem for the menu's selectors, in the CEL environment of the lab's feature gates."""
    gates, dummy = parse_feature_gates(config.get('dralab_feature_gates'))
    features = config.get('dralab_dra_features')
    wanted = feature_gates(features) if not feature_problems(features) else []
    consumable = bool(gates.get('DRAConsumableCapacity', 'DRAConsumableCapacity' in wanted))
    return lambda expression: dra_cel.compile_problem(expression, consumable_capacity=consumable)


def api_identity(resolved):
    """Who the lab's admin kubeconfig is to its API server; K8sError when the API does not answer or refuses it."""
    # Only this check needs the Kubernetes client: the settings check stays free of it.
    from ansible_collections.dralab.workshop.plugins.module_utils.k8s import client as k8s_client

    kubeconfig = resolved.get('dralab_kubeconfig') or admin_kubeconfig()
    return k8s_client.api_identity(k8s_client.KubeClient.from_params({'kubeconfig': kubeconfig}))


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    if module.params['controller_ansible_version']:
        problem = controller_problem(module.params['controller_ansible_version'], sys.version_info)
        if problem:
            module.fail_json(msg=problem, errors=[problem], lab_warnings=[])
    if not cel_types.HAS_CEL:
        module.fail_json(msg=missing_required_lib(cel_types.CEL_LIBRARY), exception=cel_types.CEL_IMPORT_ERROR)
    resolved, errors = resolve_hosts(module.params.get('host_settings') or {})
    config = lab_config(module.params, resolved)
    more_errors, warnings = validate(config, compile_problem=cel_checker(config))
    errors += more_errors
    for warning in warnings:
        module.warn(warning)
    if errors:
        module.fail_json(
            msg='Preflight found %d problem(s): %s' % (len(errors), '; '.join(errors)),
            errors=errors,
            lab_warnings=warnings,
        )
    result = dict(changed=False, errors=[], lab_warnings=warnings, settings=resolved, **effective_settings(config))
    if module.params['check_api']:
        from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError

        try:
            result['api'] = api_identity(resolved)
        except K8sError as exc:
            module.fail_json(msg=str(exc), errors=[], lab_warnings=warnings)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
