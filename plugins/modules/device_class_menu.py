#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: device_class_menu
short_description: Validate a DeviceClass menu and plan what to apply and remove
version_added: 0.1.0
description:
  - Checks a DeviceClass "menu" (see O(menu)) and fails, naming the entry and the field, on any problem (missing or
    duplicate names, missing or empty selectors, malformed config, unknown keys). The API server still checks the
    CEL expressions when the classes are applied.
  - Compares the menu with the DeviceClasses of the cluster (O(existing)) and returns the objects to apply and the
    classes to remove, without talking to the cluster.
  - Classes to apply carry the label C(app.kubernetes.io/managed-by=dralab.workshop) and, when the entry has a
    description, the annotation C(dralab.workshop/description).
  - A menu class that already exists without that label (for example C(gpu.example.com), which the driver's Helm
    chart creates) is not taken over; it is reported in RV(foreign), with a warning when its selectors or config
    differ from the menu. List it in O(adopt) to take it over anyway.
  - With O(prune), classes that carry the label and are no longer in the menu are returned in RV(delete). Classes
    without the label are never removed.
author: dralab.workshop maintainers (@dralab)
options:
  menu:
    description:
      - "The DeviceClasses, each a mapping with C(name), C(selectors) (a non-empty list of CEL expressions, as strings
        or as C({cel: {expression: ...}})), and optionally C(description), C(config) (a list of
        C({opaque: {driver: ..., parameters: {...}}}), or the short C({driver: ..., parameters: {...}})),
        C(labels), C(annotations) and C(extended_resource_name) (needs the DRAExtendedResource feature gate)."
    type: list
    elements: raw
    required: true
  existing:
    description:
      - The DeviceClass objects of the cluster, for example the C(resources) of M(kubernetes.core.k8s_info).
    type: list
    elements: dict
    default: []
  adopt:
    description:
      - Names of existing classes without the managed-by label that the menu may take over.
    type: list
    elements: str
    default: []
  prune:
    description:
      - Return the classes of this collection that are no longer in the menu for removal.
    type: bool
    default: true
  variable_name:
    description:
      - Name of the variable holding the menu, used in messages.
    type: str
    default: menu
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - The module only computes a plan; it never changes anything.
  diff_mode:
    support: none
notes:
  - The module does not contact the API server; run it on the controller.
seealso:
  - module: kubernetes.core.k8s
  - name: DeviceClass
    description: Kubernetes API reference of DeviceClass (resource.k8s.io/v1).
    link: https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/device-class-v1/
"""

EXAMPLES = r"""
- name: Read the DeviceClasses
  kubernetes.core.k8s_info:
    api_version: resource.k8s.io/v1
    kind: DeviceClass
  register: classes

- name: Plan the menu
  dralab.workshop.device_class_menu:
    menu:
      - name: gpu-40gi.example.com
        description: An emulated GPU with at least 40Gi of memory.
        selectors:
          - >-
            device.driver == 'gpu.example.com' &&
            device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0
    existing: "{{ classes.resources }}"
  register: plan
"""

RETURN = r"""
apply:
  description: DeviceClass objects to apply.
  returned: success
  type: list
  elements: dict
delete:
  description: Minimal DeviceClass objects (apiVersion, kind, metadata.name) to delete.
  returned: success
  type: list
  elements: dict
names:
  description: Names of the classes in the menu, in order.
  returned: success
  type: list
  elements: str
foreign:
  description: Menu classes that exist without the managed-by label and are left alone.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Class name.
      type: str
    owner:
      description: Who manages it, from its managed-by label and Helm annotations.
      type: str
    matches:
      description: Whether its selectors and config equal the menu's.
      type: bool
  sample: [{name: gpu.example.com, owner: Helm (Helm release dra-example-driver), matches: true}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.dra import menu as device_class_menu


def argspec():
    return dict(
        menu=dict(type='list', elements='raw', required=True),
        existing=dict(type='list', elements='dict', default=[]),
        adopt=dict(type='list', elements='str', default=[]),
        prune=dict(type='bool', default=True),
        variable_name=dict(type='str', default='menu'),
    )


def run(module):
    params = module.params
    try:
        result = device_class_menu.plan(params['menu'], params['existing'], params['adopt'], params['prune'],
                                        params['variable_name'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    for warning in result.pop('warnings'):
        module.warn(warning)
    module.exit_json(changed=False, **result)


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
