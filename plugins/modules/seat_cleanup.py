#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_cleanup
short_description: Delete the workloads and ResourceClaims of workshop seats
version_added: 0.1.0
description:
  - Finds the seat namespaces by their labels (C(app.kubernetes.io/managed-by=dralab.workshop) and
    C(dralab.workshop/seat)); a namespace without them is never touched, whatever its name. Namespaces themselves
    are never deleted.
  - In each seat namespace, deletes every object of the kinds in O(kinds), controllers first, then Pods, then
    ResourceClaimTemplates and ResourceClaims, with one delete-collection call per namespace and kind, and only
    where there is something to delete. Objects already terminating are waited for, not deleted again.
  - With O(wait), waits until none of those objects is left (claims free their devices when no pod uses them),
    and fails after O(wait_timeout) seconds naming what is left and why.
  - With O(rotate_credentials), also deletes each seat's token Secret (C(dralab-seat-token)) and ServiceAccount,
    so that every token of the seat, including ones the seat minted itself, stops working. Re-apply the seat
    objects and issue new tokens afterwards (the lab_reset role does).
author: dralab.workshop maintainers (@dralab)
options:
  kinds:
    description:
      - Kinds to delete, by their plural resource names. They are always deleted in the order of the default list.
    type: list
    elements: str
    choices: [cronjobs, jobs, deployments, statefulsets, daemonsets, replicasets, replicationcontrollers, pods,
              resourceclaimtemplates, resourceclaims]
    default: [cronjobs, jobs, deployments, statefulsets, daemonsets, replicasets, replicationcontrollers, pods,
              resourceclaimtemplates, resourceclaims]
  namespaces:
    description:
      - Restrict the cleanup to these seat namespaces. Names that are not seat namespaces are ignored.
      - Empty for every seat namespace.
    type: list
    elements: str
    default: []
  wait:
    description:
      - Wait until the deleted objects are gone.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait with O(wait).
    type: int
    default: 300
  grace_period_seconds:
    description:
      - Grace period for the deletions, in seconds. Null keeps each pod's own grace period.
      - V(0) removes pods from the API at once, even while their containers still run.
    type: int
  rotate_credentials:
    description:
      - Also delete each seat's token Secret and ServiceAccount (only those carrying the managed-by label).
    type: bool
    default: false
extends_documentation_fragment:
  - dralab.workshop.k8s_auth
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Lists what would be deleted without deleting or waiting.
  diff_mode:
    support: full
    details:
      - The diff lists the objects deleted.
notes:
  - The user needs C(list) on the kinds cluster-wide, C(deletecollection) on them in the seat namespaces, and with
    O(rotate_credentials) C(get) and C(delete) on secrets and serviceaccounts.
seealso:
  - module: dralab.workshop.seat_objects
  - module: dralab.workshop.dra_health
"""

EXAMPLES = r"""
- name: Delete the seats' workloads and claims
  dralab.workshop.seat_cleanup:
    kubeconfig: ~/.dralab/admin.conf
  register: cleanup

- name: Only delete claims, and do not wait
  dralab.workshop.seat_cleanup:
    kinds: [resourceclaimtemplates, resourceclaims]
    wait: false
"""

RETURN = r"""
namespaces:
  description: The seat namespaces found.
  returned: always
  type: list
  elements: str
  sample: [user01, user02]
deleted:
  description: Per kind, the C(namespace/name) of each object deleted (or that would be, in check mode).
  returned: always
  type: dict
  sample: {pods: [user01/train-1], resourceclaims: [user01/gpu]}
deleted_count:
  description: Number of objects deleted.
  returned: always
  type: int
terminating:
  description: Per kind, objects that were already terminating when the module started.
  returned: always
  type: dict
credentials_deleted:
  description: The Secrets and ServiceAccounts deleted by O(rotate_credentials).
  returned: always
  type: list
  elements: str
  sample: [Secret user01/dralab-seat-token, ServiceAccount user01/user01]
remaining:
  description: Objects still present when waiting timed out (empty on success).
  returned: always
  type: list
  elements: str
"""


from ansible_collections.dralab.workshop.plugins.module_utils import seat_cleanup
from ansible_collections.dralab.workshop.plugins.module_utils.k8s_client import K8sError, auth_argspec, run_with_client


def argspec():
    spec = auth_argspec()
    spec.update(
        kinds=dict(type='list', elements='str', default=list(seat_cleanup.DEFAULT_KINDS),
                   choices=list(seat_cleanup.KIND_NAMES)),
        namespaces=dict(type='list', elements='str', default=[]),
        wait=dict(type='bool', default=True),
        wait_timeout=dict(type='int', default=300),
        grace_period_seconds=dict(type='int'),
        rotate_credentials=dict(type='bool', default=False),
    )
    return spec


def run(module, client, sleep=None, clock=None):
    params = module.params
    timing = {}
    if sleep is not None:
        timing['sleep'] = sleep
    if clock is not None:
        timing['clock'] = clock
    cleaner = seat_cleanup.SeatCleaner(client, **timing)
    try:
        result = cleaner.run(
            kinds=params['kinds'], only=params['namespaces'], check_mode=module.check_mode, wait=params['wait'],
            wait_timeout=params['wait_timeout'], grace_period_seconds=params['grace_period_seconds'],
            rotate_credentials=params['rotate_credentials'])
    except seat_cleanup.SeatCleanupTimeout as exc:
        module.fail_json(msg=str(exc), **exc.result)
    except (K8sError, ValueError) as exc:
        module.fail_json(msg='Cannot clean up the seats: %s' % exc)
    if module._diff and result['changed']:
        lines = ['%s %s' % (kind, name) for kind in result['deleted'] for name in result['deleted'][kind]]
        lines += result['credentials_deleted']
        result['diff'] = {'before': '\n'.join(lines) + '\n', 'after': '',
                          'before_header': 'seat objects', 'after_header': 'seat objects'}
    module.exit_json(**result)


def main():
    run_with_client(argspec(), run)


if __name__ == '__main__':
    main()
