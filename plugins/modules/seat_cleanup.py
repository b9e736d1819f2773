#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_cleanup
short_description: Delete everything workshop seats made in their namespaces
version_added: 0.1.0
description:
  - Finds the seat namespaces by the Namespace's own labels (C(app.kubernetes.io/managed-by=dralab.workshop) and
    C(dralab.workshop/seat)), which a seat cannot change; a namespace without them is never touched, whatever its
    name. Namespaces themselves are never deleted.
  - In each seat namespace, deletes every object of every namespaced kind the API server serves (found through API
    discovery; Events excepted), or of the kinds in O(kinds), controllers first, then Pods, then
    ResourceClaimTemplates and ResourceClaims, then the rest. One delete-collection call per namespace and kind, only
    where there is something to delete. Objects already terminating are waited for, not deleted again.
  - The instructor's baseline objects are kept, known by kind and name, never by labels a seat could change,
    RoleBindings C(dralab-seat-edit) and C(dralab-lease-reaper), ResourceQuota C(dralab-seat-quota), LimitRange
    C(dralab-seat-limits), ConfigMaps C(kube-root-ca.crt) and C(dralab-gpu-occupancy) (the lease reaper's), and
    (unless O(rotate_credentials)) the seat's ServiceAccount (the one the Namespace records in its annotation
    C(dralab.workshop/credential-account), else C(NAME)) and C(default) and the Secret C(dralab-seat-token).
  - With O(rotate_credentials), every ServiceAccount and Secret of the namespace goes too, whoever made it, so every
    token of the seat, including ones it minted itself for any account, stops working. Before anything is deleted,
    the RoleBinding C(dralab-seat-edit) is pointed at a new account, C(NAME-gN-<random>), whose name nobody could
    know before, and only then is that name recorded on the Namespace (annotations
    C(dralab.workshop/credential-account) and C(dralab.workshop/credential-generation), which a seat cannot change).
    No identity the seat had or prepared (a ServiceAccount named like the next generation, a token for it) has a
    right in the namespace from that moment; kube-apiserver keeps accepting a token it accepted in the last
    10 seconds after its Secret or account is gone, and such a token then finds no binding, so it can neither
    write into the namespace being cleared nor outlive the reset. Re-apply the seat objects and issue new tokens
    afterwards (the lab_reset role does).
  - With O(wait), it works in two phases. First the controllers and pods (with O(rotate_credentials) also the
    ServiceAccounts and Secrets); pods are deleted with
    O(grace_period_seconds), which cuts a pod's own longer grace period, and waited for until no pod is left in the
    namespace; a pod still there 10 seconds after its grace period ended is deleted again with grace 0
    (RV(forced)). Only then the rest, claims included, so a claim is never released while a pod that may use its
    device still exists; a namespace whose pods outlive O(wait_timeout) keeps its claims. Objects still terminating
    O(finalizer_grace) seconds into their phase lose their finalizers, so a finalizer a seat set cannot hold the
    reset, except a claim reserved for a pod that still exists. What is still left after O(wait_timeout) seconds is
    returned in RV(remaining), its seats in RV(failed_seats); the module then fails unless
    O(fail_on_remaining=false).
  - Without O(wait), everything is deleted in one pass (Kubernetes keeps a claim a pod uses until the pod is gone,
    and no finalizer is removed).
  - The two phases can run as two tasks (O(stage)), so that new credentials are issued while the seats' pods stop.
    V(start) rotates and deletes the first phase's objects (controllers, pods and, with O(rotate_credentials), the
    ServiceAccounts and Secrets) and returns at once; V(finish), given the same O(namespaces), O(kinds) and
    O(rotate_credentials), waits for what is still terminating, then deletes the rest and waits. It rotates nothing
    and deletes no ServiceAccount or Secret (those there without a deletion mark are the new credentials).
author: dralab.workshop maintainers (@dralab)
options:
  kinds:
    description:
      - Only delete these kinds, by their plural resource names (for example V(pods), V(resourceclaims)). They are
        always deleted in the order described above.
      - Empty for every namespaced kind the API server serves.
    type: list
    elements: str
    default: []
  namespaces:
    description:
      - Restrict the cleanup to these seats. The module fails, before deleting anything, when one of them has no
        seat namespace.
      - Empty for every seat namespace.
    type: list
    elements: str
    default: []
    aliases: [seats]
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
  finalizer_grace:
    description:
      - Seconds after which objects still terminating lose their finalizers (with O(wait)).
    type: int
    default: 15
  fail_on_remaining:
    description:
      - Fail when objects are left after O(wait_timeout). With V(false), the module returns them and the caller
        decides (lab_reset re-issues the credentials of every seat first).
    type: bool
    default: true
  grace_period_seconds:
    description:
      - Grace period for the deletions, in seconds; a pod's own longer C(terminationGracePeriodSeconds) is cut to it,
        and with O(wait) a pod still there 10 seconds after it is deleted with grace 0.
      - Null keeps each pod's own grace period, and nothing is deleted with grace 0.
      - V(0) removes pods from the API at once, even while their containers still run.
    type: int
  rotate_credentials:
    description:
      - Also delete every ServiceAccount and Secret of the seat namespaces (labels or not).
    type: bool
    default: false
  stage:
    description:
      - V(all) deletes and, with O(wait), waits, in both phases.
      - V(start) rotates the credentials (with O(rotate_credentials)) and deletes the first phase's objects, without
        waiting (O(wait) is not read).
      - V(finish), after a V(start), waits for the first phase, then deletes the rest and waits (O(wait) is not
        read). Run it as an async task to do other work meanwhile (the lab_reset role issues the new credentials).
    type: str
    choices: [all, start, finish]
    default: all
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
  - The user needs C(list) on the kinds cluster-wide, C(deletecollection) on them in the seat namespaces, and
    C(update) on objects whose finalizers are removed.
seealso:
  - module: dralab.workshop.seat_objects
  - module: dralab.workshop.dra_health
"""

EXAMPLES = r"""
- name: Delete the seats' workloads and claims
  dralab.workshop.seat_cleanup:
    kubeconfig: ~/.dralab/admin.conf
  register: cleanup

- name: Reset two seats only, with new credentials
  dralab.workshop.seat_cleanup:
    seats: [user07, user12]
    rotate_credentials: true

- name: Lock the seats out and stop their pods
  dralab.workshop.seat_cleanup:
    rotate_credentials: true
    stage: start

- name: Meanwhile, wait until the pods are gone, then delete the rest
  dralab.workshop.seat_cleanup:
    rotate_credentials: true
    stage: finish
  async: 360
  poll: 0
  register: cleanup_job

- name: Only delete claims, and do not wait
  dralab.workshop.seat_cleanup:
    kinds: [resourceclaimtemplates, resourceclaims]
    wait: false
"""

RETURN = r"""
namespaces:
  description: The seat namespaces cleared (or that would be, in check mode); with O(namespaces), those of them found.
  returned: always
  type: list
  elements: str
  sample: [user01, user02]
seat_namespaces:
  description: Every seat namespace of the cluster, also those O(namespaces) leaves alone.
  returned: always
  type: list
  elements: str
  sample: [user01, user02, user03]
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
credential_generations:
  description: With O(rotate_credentials), the new credential generation of each seat namespace (in check mode the
    one it would get).
  returned: with O(rotate_credentials), unless O(stage=finish)
  type: dict
  sample: {user01: 1, user02: 1}
credentials_deleted:
  description: The instructor's Secrets and ServiceAccounts deleted by O(rotate_credentials) (other ones are in
    RV(deleted)).
  returned: always
  type: list
  elements: str
  sample: [secrets user01/dralab-seat-token, serviceaccounts user01/default, serviceaccounts user01/user01]
forced:
  description: Pods still there 10 seconds after O(grace_period_seconds), deleted again with grace 0.
  returned: always
  type: list
  elements: str
  sample: [pods user07/stubborn]
finalizers_removed:
  description: Objects whose finalizers were removed after O(finalizer_grace), with the finalizers.
  returned: always
  type: list
  elements: str
  sample: ["pods user07/web: example.com/keep-me"]
remaining:
  description: Objects still present when waiting timed out (empty on success).
  returned: always
  type: list
  elements: str
failed_seats:
  description: Seats whose namespace still holds objects after waiting (empty on success).
  returned: always
  type: list
  elements: str
remaining_message:
  description: What is left and in which seats, as one message (empty on success).
  returned: always
  type: str
"""


from ansible_collections.dralab.workshop.plugins.module_utils.seat import cleanup as seat_cleanup
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, auth_argspec, run_with_client


def argspec():
    spec = auth_argspec()
    spec.update(
        kinds=dict(type='list', elements='str', default=[]),
        namespaces=dict(type='list', elements='str', default=[], aliases=['seats']),
        wait=dict(type='bool', default=True),
        wait_timeout=dict(type='int', default=300),
        finalizer_grace=dict(type='int', default=15),
        fail_on_remaining=dict(type='bool', default=True),
        grace_period_seconds=dict(type='int'),
        rotate_credentials=dict(type='bool', default=False),
        stage=dict(type='str', default='all', choices=list(seat_cleanup.STAGES)),
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
            rotate_credentials=params['rotate_credentials'], finalizer_grace=params['finalizer_grace'],
            stage=params['stage'])
    except (K8sError, ValueError) as exc:
        module.fail_json(msg='Cannot clean up the seats: %s' % exc)
    if result['remaining'] and params['fail_on_remaining']:
        module.fail_json(msg=result['remaining_message'], **result)
    if module._diff and result['changed']:
        lines = ['%s %s' % (kind, name) for kind in result['deleted'] for name in result['deleted'][kind]]
        lines += result['credentials_deleted'] + ['finalizers removed: %s' % line for line in result['finalizers_removed']]
        lines += ['deleted with grace 0: %s' % line for line in result['forced']]
        result['diff'] = {'before': '\n'.join(lines) + '\n', 'after': '',
                          'before_header': 'seat objects', 'after_header': 'seat objects'}
    module.exit_json(**result)


def main():
    run_with_client(argspec(), run)


if __name__ == '__main__':
    main()
