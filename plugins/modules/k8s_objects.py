#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: k8s_objects
short_description: Apply this collection's Kubernetes objects, writing only the ones that differ
version_added: 0.1.0
description:
  - Reads each kind of the objects in O(definition) once, cluster-wide, by O(label_selector) (the objects carry
    that label), and writes by server-side apply (field manager C(dralab.workshop), forced) only the objects that
    are missing or differ, in parallel; admission policies first, then the other cluster-wide objects
    (Namespaces), then the namespaced ones.
  - An object differs when one of its fields is missing or has another value in the cluster (quantities compared
    by value), a list has another length, or the cluster keeps a label, annotation or quota key this field manager
    applied before and the object no longer has. A change is reported only when the API server stored one.
  - Kinds it applies are ValidatingAdmissionPolicy and its binding, Namespace, ClusterRole, ClusterRoleBinding,
    RoleBinding, ServiceAccount, Secret, ResourceQuota and LimitRange.
author: dralab.workshop maintainers (@dralab)
options:
  definition:
    description:
      - The objects, each with apiVersion, kind, metadata (name, namespace for namespaced kinds, labels).
    type: list
    elements: dict
    required: true
  label_selector:
    description:
      - The label selector every object of O(definition) matches, used to read the cluster.
    type: str
    default: app.kubernetes.io/managed-by=dralab.workshop
extends_documentation_fragment:
  - dralab.workshop.k8s_auth
  - dralab.workshop.attributes
  - dralab.workshop.attributes.apply_module
notes:
  - The user needs C(list) and C(patch) on the kinds of O(definition).
seealso:
  - module: dralab.workshop.seat_objects
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
- name: Apply a ServiceAccount and its RBAC
  dralab.workshop.k8s_objects:
    kubeconfig: ~/.dralab/admin.conf
    definition:
      - apiVersion: v1
        kind: ServiceAccount
        metadata:
          name: dralab-lease-reaper
          namespace: dralab-system
          labels: {app.kubernetes.io/managed-by: dralab.workshop}
"""

RETURN = r"""
created:
  description: The objects created (C(Kind namespace/name) or C(Kind name)); in check mode, those that would be.
  returned: success
  type: list
  elements: str
  sample: [ServiceAccount dralab-system/dralab-lease-reaper]
updated:
  description: The objects changed; in check mode, those that would be.
  returned: success
  type: list
  elements: str
unchanged:
  description: How many objects were already as wanted.
  returned: success
  type: int
requests:
  description: Requests sent (one read per kind, one write per object that differs).
  returned: success
  type: int
"""

from ansible_collections.dralab.workshop.plugins.module_utils.k8s import apply as k8s_apply
from ansible_collections.dralab.workshop.plugins.module_utils.seat import model as seat_model
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, auth_argspec, run_with_client


def argspec():
    return dict(auth_argspec(), definition=dict(type='list', elements='dict', required=True),
                label_selector=dict(type='str', default=seat_model.MANAGED_SELECTOR))


def run(module, client):
    try:
        result = k8s_apply.Applier(client).apply(module.params['definition'], module.params['label_selector'],
                                                 check_mode=module.check_mode)
    except (K8sError, ValueError) as exc:
        module.fail_json(msg='Cannot apply the objects: %s' % exc)
    module.exit_json(changed=bool(result['created'] or result['updated']), **result)


def main():
    run_with_client(argspec(), run)


if __name__ == '__main__':
    main()
