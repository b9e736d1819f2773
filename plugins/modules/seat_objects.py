#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_objects
short_description: Build, and optionally apply, the Kubernetes objects of workshop seats
version_added: 0.1.0
description:
  - Builds the list of Kubernetes objects that make up the workshop seats. Without O(apply) it does not talk to the
    cluster and returns them (RV(objects)), ready to be applied in one M(kubernetes.core.k8s) task.
  - With O(apply), it reads the cluster's Namespaces (and, with O(cluster_device_classes), its DeviceClasses), runs
    the checks of O(existing_namespaces) on them, then reads each kind of seat object once (by the managed-by
    label) and writes, by server-side apply (field manager C(dralab.workshop)), only the objects that are missing
    or differ, in parallel; admission policies first, then Namespaces and the other cluster-wide objects, then the
    namespaced ones. It also removes the DRA admin access label from seat Namespaces. It reports a change only when
    the API server stored one.
  - Per seat C(NAME) (see O(seats)), a Namespace C(NAME), a ServiceAccount C(NAME) (once its credentials were
    rotated, the name M(dralab.workshop.seat_cleanup) picked at random and recorded in the Namespace's annotation
    C(dralab.workshop/credential-account)), a RoleBinding C(dralab-seat-edit)
    of that account to the ClusterRole O(edit_cluster_role), a ResourceQuota C(dralab-seat-quota), a LimitRange
    C(dralab-seat-limits) with container defaults, and an empty Opaque Secret C(dralab-seat-token) that the seat's
    tokens are bound to (see M(dralab.workshop.seat_tokens)).
  - Once for all seats, ValidatingAdmissionPolicies with their bindings (C(dralab-seat-services),
    C(dralab-seat-secrets), C(dralab-seat-claim-size), C(dralab-seat-claim-template-size),
    C(dralab-seat-claim-count), C(dralab-seat-pod-grace), C(dralab-seat-template-grace), C(dralab-seat-cronjob-grace),
    C(dralab-seat-events)) that select the seat namespaces by the Namespace's labels and refuse NodePort,
    LoadBalancer and externalIPs Services, legacy service-account-token Secrets, claims asking more than one device
    (beside one device of the O(companion_device_classes)) or all devices, and, with a message naming what the seat
    holds, a claim beyond the seat's O(gpus_per_seat); pods and pod templates that take longer than
    O(pod_grace_max) seconds to stop; and Events written by a seat (no quota can count them).
  - Once for all seats, their share of the API server (API Priority and Fairness), a PriorityLevelConfiguration
    C(dralab-seats) of O(api_concurrency_shares) that neither lends nor borrows, with fair queuing per user
    (O(api_queue_length)), and a FlowSchema C(dralab-seats) that sends every request of a seat namespace's
    ServiceAccounts there (one flow per ServiceAccount), so that no seat's flood starves the instructor, the
    cluster's components, the lease reaper, the board or the other seats.
  - Also C(dralab-seat-pod-placement), C(dralab-seat-template-placement), C(dralab-seat-cronjob-placement) (no
    C(spec.nodeName), no DaemonSet, tolerations only of O(pod_tolerations) and the two Kubernetes adds) and
    C(dralab-seat-claim-tolerations), C(dralab-seat-claim-template-tolerations) (device tolerations only of
    O(device_tolerations)).
  - Once for all seats, a ClusterRole O(reader_cluster_role) that reads DeviceClasses, ResourceSlices and Nodes, and
    a ClusterRoleBinding of the same name that lists every seat's ServiceAccount.
  - The policies come first in the list, then the Namespaces, so the API server accepts the namespaced objects that
    follow.
  - Every object carries the label C(app.kubernetes.io/managed-by=dralab.workshop); namespaced objects and the
    Namespace also carry C(dralab.workshop/seat=NAME). A seat Namespace never gets the DRA admin access label
    C(resource.kubernetes.io/admin-access).
  - The ResourceQuota caps, per DeviceClass in O(device_classes), the devices the seat's claims request
    (C(<class>.deviceclass.resource.k8s.io/devices)), the number of ResourceClaims
    (C(count/resourceclaims.resource.k8s.io), O(gpus_per_seat)), pods, CPU and memory, and, with O(quota_objects),
    the objects of every other kind the seat may create (C(count/<kind>)).
  - With O(apply) and O(quota_objects), the kinds counted are derived from the RBAC rules, every namespaced kind the
    API server serves (discovery) that a rule of the ClusterRole O(edit_cluster_role) (as the API server aggregated
    it) or of the reader ClusterRole lets the seat create. Without O(apply), only the kinds of
    O(quota_objects_by_kind) are counted.
  - When O(existing_namespaces) is given, the module fails if a seat's Namespace exists without the managed-by label
    (it never takes over a namespace it did not create), and reports seat Namespaces that carry the admin access
    label and seat Namespaces of seats no longer listed.
author: dralab.workshop maintainers (@dralab)
options:
  seats:
    description:
      - Names of the seats; each is a Linux user name, a Namespace and a ServiceAccount.
    type: list
    elements: str
    required: true
  device_classes:
    description:
      - DeviceClasses the ResourceQuota caps. A class missing here is not capped by the quota.
    type: list
    elements: str
    default: []
  devices_per_seat:
    description:
      - Devices a seat may request from each class of O(device_classes).
    type: int
    default: 1
  devices_per_class:
    description:
      - Per DeviceClass name, the devices a seat may request, overriding O(devices_per_seat).
    type: dict
    default: {}
  gpus_per_seat:
    description:
      - Devices a seat may hold in total, whatever the DeviceClasses. Every seat claim asks for one device at most
        (admission policy), and the quota caps the seat's ResourceClaims (claims made from templates count too) at
        this number. A claim may also hold one device of a class of O(companion_device_classes).
    type: int
    default: 1
  companion_device_classes:
    description:
      - DeviceClasses of which a seat's claim may hold one device beside its one GPU (the NIC class of the DRA
        feature V(gpu_nic_numa), since a GPU and a NIC on one PCIe root need one claim). Empty, a claim holds one device
        of any class. A companion class must select only non-GPU devices; the quota caps it per class like any
        other.
    type: list
    elements: str
    default: []
  pods_per_seat:
    description:
      - Pods a seat may have at a time (quota key C(pods)); empty for no cap.
    type: str
    default: ''
  cpu_per_seat:
    description:
      - CPU a seat's pods may request, and have as limits, in total (quota keys C(requests.cpu) and C(limits.cpu)),
        for example V(4) or V(2500m); empty for no cap.
    type: str
    default: ''
  memory_per_seat:
    description:
      - Memory a seat's pods may request, and have as limits, in total (C(requests.memory), C(limits.memory)), for
        example V(8Gi); empty for no cap.
    type: str
    default: ''
  ephemeral_storage_per_seat:
    description:
      - Ephemeral storage a seat's pods may request, and have as limits, in total (C(requests.ephemeral-storage),
        C(limits.ephemeral-storage)), for example V(10Gi); empty for no cap.
    type: str
    default: ''
  container_default_limits:
    description:
      - 'Limits given to a container of a seat that sets none (LimitRange C(default)), for example
        C({cpu: 500m, memory: 512Mi, ephemeral-storage: 1Gi}). Needed when O(cpu_per_seat), O(memory_per_seat) or
        O(ephemeral_storage_per_seat) is set.'
    type: dict
    default: {}
  container_default_requests:
    description:
      - Requests given to a container of a seat that sets none (LimitRange C(defaultRequest)).
    type: dict
    default: {}
  quota_objects:
    description:
      - Objects a seat may keep of each kind it may create (quota keys C(count/<kind>), see the description), its
        claims excepted (O(gpus_per_seat)); what the collection itself keeps in the namespace counts too (two
        ConfigMaps, a Secret, two ServiceAccounts).
      - Etcd stores no object above 1.5 MiB, so this times the number of kinds times 1.5 MiB is the most a seat can
        store (RV(object_bytes_max)).
      - Unset, no kind is counted but those of O(quota_objects_by_kind).
    type: int
  quota_objects_by_kind:
    description:
      - Per kind (its plural name, with the API group unless core, for example V(configmaps) or V(deployments.apps)),
        the objects a seat may keep, overriding O(quota_objects). A kind the seat cannot create, or the quota cannot
        count (Events), fails the module.
    type: dict
    default: {}
  pod_grace_max:
    description:
      - The longest C(terminationGracePeriodSeconds) of a seat pod or pod template (admission policies
        C(dralab-seat-pod-grace), C(dralab-seat-template-grace), C(dralab-seat-cronjob-grace)); at least 30, the value
        of a pod that names none.
    type: int
    default: 30
  api_concurrency_shares:
    description:
      - The seats' nominal concurrency shares (C(nominalConcurrencyShares)) of the API server, beside the 245 of
        kube-apiserver's built-in levels; the seats together execute at most ceil(600 x shares / (245 + shares))
        requests at once (with the API server's default limits of 400 + 200 requests in flight; 5 for the default 2).
        The others wait in their queues. From 1 to 1000.
    type: int
    default: 2
  api_queue_length:
    description:
      - Requests of one queue of the seats' level that may wait (C(queueLengthLimit)); 64 queues, each flow (one
        ServiceAccount) uses 6 of them, and a request that finds its queues full is refused with 429 at once. From 1
        to 1000.
    type: int
    default: 50
  pod_tolerations:
    description:
      - Node taints a seat's pods may tolerate beside C(node.kubernetes.io/not-ready) and
        C(node.kubernetes.io/unreachable) (C(NoExecute)), which Kubernetes adds to every pod; each entry a C(key) and
        optionally an C(effect). Admission policies C(dralab-seat-pod-placement), C(dralab-seat-template-placement)
        and C(dralab-seat-cronjob-placement) refuse any other toleration, C(spec.nodeName) and DaemonSets.
    type: list
    elements: dict
    default: []
  device_tolerations:
    description:
      - Device taints a seat's claims may tolerate (entries as in O(pod_tolerations)); admission policies
        C(dralab-seat-claim-tolerations) and C(dralab-seat-claim-template-tolerations) refuse any other.
    type: list
    elements: dict
    default: []
  quota_extra:
    description:
      - 'More ResourceQuota keys and quantities, for example C({pods: 10}).'
    type: dict
    default: {}
  pod_security:
    description:
      - Pod Security Admission level enforced on the seat namespaces; empty to set none.
    type: str
    default: baseline
    choices: ['', privileged, baseline, restricted]
  edit_cluster_role:
    description:
      - ClusterRole bound to each seat in its own namespace.
    type: str
    default: edit
  reader_cluster_role:
    description:
      - Name of the ClusterRole (and ClusterRoleBinding) that lets seats read DeviceClasses, ResourceSlices and Nodes.
    type: str
    default: dralab-seat-dra-reader
  reader_extra_rules:
    description:
      - More PolicyRules for that ClusterRole, for example read access to ResourceClaims in every namespace.
    type: list
    elements: dict
    default: []
  existing_namespaces:
    description:
      - The Namespace objects of the cluster (for example the C(resources) of M(kubernetes.core.k8s_info)).
      - When null, no check against the cluster is made, unless O(apply) is set (the module reads them then).
    type: list
    elements: dict
  apply:
    description:
      - Apply the objects to the cluster (see the description) instead of returning them.
    type: bool
    default: false
  cluster_device_classes:
    description:
      - With O(apply), the ResourceQuota also caps every DeviceClass the cluster has, besides O(device_classes).
    type: bool
    default: false
extends_documentation_fragment:
  - dralab.workshop.k8s_auth
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Without O(apply), the module only computes objects. With O(apply), the writes are server-side dry runs and
        report what would change.
  diff_mode:
    support: none
notes:
  - Run it on the controller. The authentication options are used with O(apply) only.
seealso:
  - module: dralab.workshop.seat_tokens
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
- name: Build the seat objects
  dralab.workshop.seat_objects:
    seats: "{{ 72 | dralab.workshop.seat_names }}"
    device_classes: [gpu.example.com, gpu-40gi.example.com]
    devices_per_seat: 1
    gpus_per_seat: 1
    pods_per_seat: "10"
    cpu_per_seat: "4"
    memory_per_seat: 8Gi
    container_default_limits: {cpu: 500m, memory: 512Mi}
    container_default_requests: {cpu: 100m, memory: 128Mi}
  register: seat_objects

- name: Apply them in one task
  kubernetes.core.k8s:
    kubeconfig: ~/.dralab/admin.conf
    apply: true
    definition: "{{ seat_objects.objects }}"

- name: Or build and apply them in one go, writing only what differs
  dralab.workshop.seat_objects:
    kubeconfig: ~/.dralab/admin.conf
    seats: "{{ 72 | dralab.workshop.seat_names }}"
    device_classes: [gpu.example.com]
    cluster_device_classes: true
    apply: true
"""

RETURN = r"""
objects:
  description: The objects to apply, admission policies and Namespaces first.
  returned: when O(apply=false)
  type: list
  elements: dict
created:
  description: The objects created (C(Kind namespace/name) or C(Kind name)); in check mode, those that would be.
  returned: when O(apply=true)
  type: list
  elements: str
  sample: [Namespace user01, ServiceAccount user01/user01]
updated:
  description: The objects changed; in check mode, those that would be.
  returned: when O(apply=true)
  type: list
  elements: str
unchanged:
  description: How many objects were already as wanted.
  returned: when O(apply=true)
  type: int
  sample: 362
requests:
  description: Read and write requests sent to apply the objects (one read per kind, one write per object that differs).
  returned: when O(apply=true)
  type: int
  sample: 11
counts:
  description: Number of objects per kind.
  returned: success
  type: dict
  sample: {Namespace: 72, ServiceAccount: 72, Secret: 72, RoleBinding: 72, ResourceQuota: 72, LimitRange: 72,
           ClusterRole: 1, ClusterRoleBinding: 1, ValidatingAdmissionPolicy: 5, ValidatingAdmissionPolicyBinding: 5,
           PriorityLevelConfiguration: 1, FlowSchema: 1}
object_bytes_max:
  description: The most bytes a seat's objects can take in etcd under that quota (every counted object at 1.5 MiB).
  returned: success
  type: int
  sample: 158334976
quota:
  description: The C(spec.hard) of every seat's ResourceQuota.
  returned: success
  type: dict
  sample: {gpu.example.com.deviceclass.resource.k8s.io/devices: "1", count/resourceclaims.resource.k8s.io: "1",
           pods: "10", requests.cpu: "4", limits.cpu: "4", requests.memory: 8Gi, limits.memory: 8Gi}
admin_access_namespaces:
  description: Seat namespaces that carry the label C(resource.kubernetes.io/admin-access) and must lose it.
  returned: success
  type: list
  elements: str
admin_access_patches:
  description: Merge patches (as objects) that remove that label, one per namespace in RV(admin_access_namespaces).
  returned: success
  type: list
  elements: dict
stale_namespaces:
  description: Seat namespaces created by this collection whose seat is no longer in O(seats) (left in place).
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.k8s import apply as k8s_apply
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.discovery import served_resources
from ansible_collections.dralab.workshop.plugins.module_utils.seat import bounds as seat_bounds
from ansible_collections.dralab.workshop.plugins.module_utils.seat import flow as seat_flow
from ansible_collections.dralab.workshop.plugins.module_utils.seat import model as seat_model
from ansible_collections.dralab.workshop.plugins.module_utils.seat import placement as seat_placement
from ansible_collections.dralab.workshop.plugins.module_utils.seat import policies as seat_policies
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, KubeClient, auth_argspec

DEVICE_CLASSES_PATH = '/apis/resource.k8s.io/v1/deviceclasses'
CLUSTER_ROLE_PATH = '/apis/rbac.authorization.k8s.io/v1/clusterroles/%s'


def argspec():
    spec = auth_argspec()
    spec.update(
        seats=dict(type='list', elements='str', required=True),
        device_classes=dict(type='list', elements='str', default=[]),
        devices_per_seat=dict(type='int', default=lab_settings.default('dralab_gpus_per_seat')),
        devices_per_class=dict(type='dict', default={}),
        gpus_per_seat=dict(type='int', default=lab_settings.default('dralab_gpus_per_seat')),
        companion_device_classes=dict(type='list', elements='str', default=[]),
        pods_per_seat=dict(type='str', default=''),
        cpu_per_seat=dict(type='str', default=''),
        memory_per_seat=dict(type='str', default=''),
        ephemeral_storage_per_seat=dict(type='str', default=''),
        container_default_limits=dict(type='dict', default={}),
        container_default_requests=dict(type='dict', default={}),
        quota_objects=dict(type='int'),
        quota_objects_by_kind=dict(type='dict', default={}),
        pod_grace_max=dict(type='int', default=seat_bounds.DEFAULT_POD_GRACE),
        api_concurrency_shares=dict(type='int', default=seat_flow.DEFAULT_SHARES),
        api_queue_length=dict(type='int', default=seat_flow.DEFAULT_QUEUE_LENGTH),
        pod_tolerations=dict(type='list', elements='dict', default=[]),
        device_tolerations=dict(type='list', elements='dict', default=[]),
        quota_extra=dict(type='dict', default={}),
        pod_security=dict(type='str', default='baseline', choices=['', 'privileged', 'baseline', 'restricted']),
        edit_cluster_role=dict(type='str', default=seat_model.DEFAULT_EDIT_CLUSTER_ROLE),
        reader_cluster_role=dict(type='str', default=seat_model.DEFAULT_READER_NAME),
        reader_extra_rules=dict(type='list', elements='dict', default=[]),
        existing_namespaces=dict(type='list', elements='dict'),
        apply=dict(type='bool', default=False),
        cluster_device_classes=dict(type='bool', default=False),
    )
    return spec


def seat_kinds(client, params):
    """The kinds the seats may create: the rules of their edit ClusterRole (aggregated) and reader ClusterRole,
    against what the API server serves (the seat's reader rules as this run applies them)."""
    role = client.get(CLUSTER_ROLE_PATH % params['edit_cluster_role'], missing_ok=True) or {}
    rules = list(role.get('rules') or []) + list(seat_model.reader_cluster_role(
        params['reader_cluster_role'], params['reader_extra_rules'])['rules'])
    served = [(r.group, r.name) for r in served_resources(client) if r.namespaced and 'create' in r.verbs]
    return seat_bounds.creatable_kinds(rules, served)


def object_counts(params, kinds):
    """{kind: count} of the seats' objects (seat_bounds.object_counts); without quota_objects only the kinds of
    quota_objects_by_kind."""
    by_kind = params['quota_objects_by_kind']
    if params['quota_objects'] is None:
        if kinds is None:
            return seat_bounds.object_counts(list(by_kind), 0, by_kind)
        return dict((name, count) for name, count in seat_bounds.object_counts(kinds, 0, by_kind).items()
                    if name in by_kind)
    return seat_bounds.object_counts(list(by_kind) if kinds is None else kinds, params['quota_objects'], by_kind)


def run(module, client=None):
    """Build the objects; with apply, read the cluster through client (a KubeClient) and apply them."""
    params = module.params
    device_classes = list(params['device_classes'])
    namespaces = params['existing_namespaces']
    kinds = None
    try:
        if params['apply']:
            if params['cluster_device_classes']:
                device_classes += [item['metadata']['name'] for item in client.list_items(DEVICE_CLASSES_PATH)]
            if namespaces is None:
                namespaces = client.list_items(k8s_apply.list_path('v1', 'Namespace'))
            if params['quota_objects'] is not None or params['quota_objects_by_kind']:
                kinds = seat_kinds(client, params)
    except K8sError as exc:
        module.fail_json(msg='Cannot read the cluster: %s' % exc)
    problem = seat_bounds.grace_problem(params['pod_grace_max'])
    if problem:
        module.fail_json(msg='pod_grace_max: %s.' % problem)
    try:
        limits = object_counts(params, kinds)
        objects = seat_policies.seat_policies(
            companion_classes=params['companion_device_classes'],
            pod_grace_max=params['pod_grace_max']) + seat_placement.placement_policies(
            params['pod_tolerations'], params['device_tolerations']) + seat_flow.flow_objects(
            params['seats'], params['api_concurrency_shares'], params['api_queue_length']) + seat_model.build_seat_objects(
            params['seats'], device_classes, devices_per_seat=params['devices_per_seat'],
            devices_per_class=params['devices_per_class'], gpus_per_seat=params['gpus_per_seat'],
            quota_extra=params['quota_extra'], pod_security=params['pod_security'],
            edit_cluster_role=params['edit_cluster_role'], reader_name=params['reader_cluster_role'],
            reader_extra_rules=params['reader_extra_rules'], pods_per_seat=params['pods_per_seat'],
            cpu_per_seat=params['cpu_per_seat'], memory_per_seat=params['memory_per_seat'],
            ephemeral_storage_per_seat=params['ephemeral_storage_per_seat'],
            container_default_limits=params['container_default_limits'],
            container_default_requests=params['container_default_requests'],
            generations=seat_model.credential_generations(namespaces),
            accounts=seat_model.credential_accounts(namespaces), counts=seat_bounds.count_hard(limits))
    except ValueError as exc:
        module.fail_json(msg='Cannot build the seat objects: %s.' % exc)
    findings = {'foreign': [], 'admin_access': [], 'stale': []}
    if namespaces is not None:
        findings = seat_model.namespace_findings(params['seats'], namespaces)
    if findings['foreign']:
        module.fail_json(
            msg='Namespace(s) %s exist but were not created by dralab.workshop (no label %s=%s): the seats would '
                'take them over. Choose other seat names (workshop_users_seat_prefix or workshop_users_seat_names) '
                'or delete those namespaces.' % (', '.join(findings['foreign']), seat_model.MANAGED_BY_LABEL,
                                                 seat_model.MANAGED_BY),
            foreign_namespaces=findings['foreign'])
    if findings['admin_access']:
        module.warn('Seat namespace(s) %s carry the label %s, which lets a seat see and take any device: the label '
                    'is removed.' % (', '.join(findings['admin_access']), seat_model.ADMIN_ACCESS_LABEL))
    if findings['stale']:
        module.warn('Seat namespace(s) %s belong to seats that are no longer configured; they are left in place '
                    '(their accounts lose the DRA read access).' % ', '.join(findings['stale']))
    counts = {}
    for obj in objects:
        counts[obj['kind']] = counts.get(obj['kind'], 0) + 1
    quota = {}
    for obj in objects:
        if obj['kind'] == 'ResourceQuota':
            quota = obj['spec']['hard']
            break
    patches = [{'apiVersion': 'v1', 'kind': 'Namespace',
                'metadata': {'name': name, 'labels': {seat_model.ADMIN_ACCESS_LABEL: None}}}
               for name in findings['admin_access']]
    result = dict(counts=counts, quota=quota, object_bytes_max=seat_bounds.byte_ceiling(quota),
                  admin_access_namespaces=findings['admin_access'], admin_access_patches=patches,
                  stale_namespaces=findings['stale'])
    if not params['apply']:
        module.exit_json(changed=False, objects=objects, **result)
    try:
        applier = k8s_apply.Applier(client)
        known = {('v1', 'Namespace'): dict((('', ns['metadata']['name']), ns) for ns in namespaces)}
        applied = applier.apply(objects, seat_model.MANAGED_SELECTOR, check_mode=module.check_mode, known=known)
        for patch in patches:
            if not module.check_mode:
                client.request('PATCH', k8s_apply.object_path(patch), body=patch,
                               content_type='application/merge-patch+json')
            applied['updated'].append(k8s_apply.describe(patch))
    except (K8sError, ValueError) as exc:
        module.fail_json(msg='Cannot apply the seat objects: %s' % exc, **result)
    applied['requests'] = applier.requests + len(patches) + (2 if params['cluster_device_classes'] else 1)
    module.exit_json(changed=bool(applied['created'] or applied['updated']), **dict(result, **applied))


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    client = None
    if module.params['apply']:
        try:
            client = KubeClient.from_params(module.params)
        except K8sError as exc:
            module.fail_json(msg=str(exc))
    run(module, client)


if __name__ == '__main__':
    main()
