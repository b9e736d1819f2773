#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dra_health
short_description: Check the health of Dynamic Resource Allocation (DRA) devices and claims
version_added: 0.1.0
description:
  - Reads DeviceClasses, ResourceSlices, ResourceClaims, Pods, Nodes, Namespaces and (optionally)
    C(FailedScheduling) Events from a Kubernetes cluster (C(resource.k8s.io/v1), Kubernetes 1.34 or later)
    and reports the DRA state of a workshop lab.
  - Per node, compares the devices published by the driver with the number expected.
  - Per pool, checks that all ResourceSlices agree on the generation and that none is missing (C(resourceSliceCount)).
  - Per claim, reports its state (pending, allocated, reserved), its devices, its holder pods, its seat
    (label C(dralab.workshop/seat) on the namespace) and its age.
  - Each problem comes with a reason that says what is wrong and what to do. Problem types are
    C(node_missing_slice), C(device_count_short), C(node_not_ready), C(pool_inconsistent),
    C(claim_reserved_for_missing_pod), C(claim_allocated_unused), C(claim_pending), C(pod_claim_missing) (a pod waits
    for a claim or template its namespace does not have), C(pod_claim_refused) (the API refused its claim from a
    template), C(pod_claim_unreachable) (its claim is on nodes it cannot go to), C(device_double_allocated),
    C(claim_device_unknown), C(waitlist_not_kept) (places in the GPU waitlist that its keeper, the lease reaper,
    would have dropped long ago), with O(seat_kubeconfig_dir) C(seat_token_expiring), with O(etcd_quota_bytes)
    C(etcd_storage_full), C(etcd_writes_failing).
  - The lab is unhealthy when at least one problem has severity C(error); warnings (pending claims,
    NotReady nodes, stale slices of an older generation) do not make it unhealthy.
  - A pending claim is explained from the published devices (module_utils dra/explain.py) and diagnosed
    (dra/diagnosis.py, the board's and can-has-gpu's words too) as one that never fits as asked (change the
    request, and how), that waits for devices in use (the seats' claims holding them, the first lease end),
    and so on. The scheduler's own message is kept apart, in C(scheduler_said), never in the sentence.
  - The module only reads from the API.
author: dralab.workshop maintainers (@dralab)
requirements:
  - cel-python >= 0.5.0, < 0.6 (evaluates the CEL selectors of DeviceClasses and claims)
options:
  driver:
    description:
      - Name of the DRA driver whose devices each node must publish.
    type: str
    default: gpu.example.com
  expected_devices_per_node:
    description:
      - Number of devices each expected node must publish for O(driver).
    type: int
    default: 8
  nodes:
    description:
      - Names of the nodes expected to publish devices.
      - When empty, every Node of the cluster is expected, filtered by O(node_selector).
    type: list
    elements: str
    default: []
  node_selector:
    description:
      - Labels a Node must carry to be expected to publish devices, when O(nodes) is empty.
      - A label with a null value only has to exist.
    type: dict
    default: {}
  stale_claim_age:
    description:
      - An allocated claim that no pod uses (empty C(reservedFor)) and that is older than this is a problem.
      - Seconds as an integer, or a number with a unit C(s), C(m), C(h), C(d) or C(w), for example V(30m),
        V(1h), V(2d) or V(1h30m).
    type: raw
    default: 1h
  fail_on_unhealthy:
    description:
      - When V(true), the module fails if the lab is unhealthy; the report (RV(report_lines) included) is still
        returned.
      - When V(false), it only emits a warning and returns the report.
    type: bool
    default: true
  include_events:
    description:
      - Read C(FailedScheduling) Events to explain pending claims whose pods carry no scheduling condition.
      - A failure to read Events only produces a warning.
    type: bool
    default: true
  detail:
    description:
      - Return every claim and every problem, and one report line per problem and per node.
      - When V(false), the result stays small at any scale. RV(claims) lists only the claims that hold devices
        (allocated or reserved). More than 5 problems of one kind (severity, type and explainer reason, for example
        9,000 pending claims that all wait for a free GPU) are returned as one problem with RV(problems[].count)
        and the first names in RV(problems[].objects), and RV(report_lines) gives them one line with the count
        and the first names (nodes in the same state likewise). RV(summary) counts everything either way.
    type: bool
    default: true
  check_plugins:
    description:
      - Check the driver's kubelet plugin pods (those labelled O(plugin_labels)) on every expected node.
      - A node without one, or with one that is not ready, is an error (its devices cannot be prepared for
        pods); a plugin that ended and was restarted in the last 10 minutes is a warning.
      - Leave it off when the plugin does not run as a pod.
    type: bool
    default: false
  plugin_labels:
    description:
      - The labels of the driver's kubelet plugin pods, used with O(check_plugins).
      - The default is what the dra-example-driver chart sets.
    type: dict
    default:
      app.kubernetes.io/name: dra-example-driver
      app.kubernetes.io/component: kubeletplugin
  snapshot_dest:
    description:
      - Also write the lab's GPU board to this file, as M(dralab.workshop.board_snapshot) does (0600, its state beside
        it ending in C(.json), both rewritten only when the state differs; a missing folder is made, 0700), from the
        objects this module has read, so one read of the cluster serves both.
      - With O(include_events), the board shows this module's judgement (its problems, with O(nodes),
        O(node_selector) and O(check_plugins)), made once for both; without it the board judges the objects itself,
        FailedScheduling events included.
      - The snapshot is written before the module fails on an unhealthy lab, so an unhealthy lab has one too.
    type: path
  snapshot_lease_max:
    description:
      - The lab's longest lease, for the lease left on the snapshot's tiles (see M(dralab.workshop.board_snapshot))
        and the lease end of the seats' claims a waiting claim is told about, with or without a snapshot.
    type: raw
    default: 8h
  snapshot_title:
    description:
      - Title of the snapshot's page.
    type: str
    default: DRA lab
  seat_kubeconfig_dir:
    description: Also warn (C(seat_token_expiring)) about every seat whose token in C(NAME.kubeconfig) here (its JWT
      expiry, read without calling the API) ends before O(event_end), or without it within the next hour.
    type: path
  event_end:
    description: When the event ends (C(dralab_event_end), RFC 3339 with a UTC offset); empty for none.
    type: str
    default: ''
extends_documentation_fragment:
  - dralab.workshop.k8s_auth
  - dralab.workshop.etcd_quota
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Only reads from the API. With O(snapshot_dest), reports whether the snapshot would change and writes nothing.
  diff_mode:
    support: none
notes:
  - Ages are measured from the claim's creation time; the API records no allocation time.
  - The user needs C(list) permission on deviceclasses, resourceslices, resourceclaims and resourceclaimtemplates
    (C(resource.k8s.io)), pods, nodes, namespaces and events.
seealso:
  - name: Dynamic Resource Allocation
    description: Kubernetes documentation of DRA.
    link: https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/
"""

EXAMPLES = r"""
- name: Check the DRA lab and fail when it is unhealthy
  dralab.workshop.dra_health:
    kubeconfig: ~/.dralab/admin.conf
  register: health

- name: Only warn, and consider claims unused for 30 minutes stale
  dralab.workshop.dra_health:
    kubeconfig: ~/.dralab/admin.conf
    stale_claim_age: 30m
    fail_on_unhealthy: false
  register: health

- name: Expect 4 GPUs on two named workers only
  dralab.workshop.dra_health:
    nodes: [worker1, worker2]
    expected_devices_per_node: 4

- name: List the seats that hold a GPU
  ansible.builtin.debug:
    msg: "{{ health.claims | selectattr('state', 'ne', 'pending') | map(attribute='seat') | list }}"
"""

RETURN = r"""
snapshot:
  description: The board snapshot written with O(snapshot_dest) (its page, counts and time); C(changed) says whether
    it was rewritten.
  returned: when O(snapshot_dest) is set
  type: dict
  sample: {dest: /home/instructor/.dralab/board-snapshot.html, generated: "2026-12-01T10:00:00Z",
           summary: {devices: 24, devices_free: 21, pending: 0, errors: 0, warnings: 0, seats: 72}}
etcd:
  description: etcd's database, with O(etcd_quota_bytes) (C(size_bytes) null until the API server measured it).
  returned: when O(etcd_quota_bytes) is not 0 and the metrics could be read
  type: dict
  sample: {size_bytes: 376832, quota_bytes: 4294967296, used_percent: 0.0, lease_silence_seconds: 4.2}
healthy:
  description: Whether no problem of severity C(error) was found.
  returned: always
  type: bool
  sample: false
summary:
  description: Totals for the cluster.
  returned: always
  type: dict
  contains:
    driver:
      description: The driver checked on the nodes.
      type: str
      sample: gpu.example.com
    nodes_expected:
      description: Nodes expected to publish devices.
      type: int
      sample: 3
    nodes_publishing:
      description: Nodes that publish at least one device of the driver.
      type: int
      sample: 3
    nodes_complete:
      description:
        - Expected nodes that publish exactly O(expected_devices_per_node) devices of the driver; equal to
          RV(summary.nodes_expected) when every expected node publishes its devices (role dra_driver waits for it).
      type: int
      sample: 3
    devices_expected:
      description: Devices expected over all expected nodes.
      type: int
      sample: 24
    devices_published:
      description: Devices of the driver published by nodes (newest pool generation).
      type: int
      sample: 24
    devices_allocated:
      description: Distinct devices of the driver allocated to claims.
      type: int
      sample: 24
    devices_free:
      description: Published devices of the driver not allocated to any claim.
      type: int
      sample: 0
    claims_total:
      description: ResourceClaims in all namespaces.
      type: int
      sample: 72
    claims_pending:
      description: Claims without an allocation.
      type: int
      sample: 48
    claims_allocated:
      description: Claims with an allocation, whether or not a pod uses them (includes the reserved ones).
      type: int
      sample: 24
    claims_reserved:
      description: Allocated claims reserved for at least one consumer.
      type: int
      sample: 24
    devices_shared:
      description: Shared devices (allowMultipleAllocations, consumable capacity) allocated to at least one claim.
      type: int
      sample: 1
    devices_tainted:
      description: Devices of the driver with a taint of their own or of a DeviceTaintRule.
      type: int
      sample: 3
    waiting:
      description: Seats in the GPU waitlist (RV(waitlist)).
      type: int
      sample: 6
    errors:
      description: Number of problems with severity C(error).
      type: int
      sample: 1
    warnings:
      description: Number of problems with severity C(warning).
      type: int
      sample: 48
nodes:
  description: Per node, the devices of the driver published versus expected. Expected nodes come first.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
      sample: worker1
    driver:
      description: The driver.
      type: str
      sample: gpu.example.com
    published:
      description: Devices published at the newest pool generation.
      type: int
      sample: 8
    expected:
      description: Devices expected (0 for a node that publishes but is not expected).
      type: int
      sample: 8
    slices:
      description: ResourceSlices of the driver on this node, all generations.
      type: int
      sample: 1
    ready:
      description: The node's Ready condition; null when the node does not exist.
      type: bool
      sample: true
pools:
  description: Every resource pool of every driver.
  returned: always
  type: list
  elements: dict
  contains:
    driver:
      description: Driver name.
      type: str
    pool:
      description: Pool name (the node name for the example driver).
      type: str
    node:
      description: Node of the pool's slices, null for pools not bound to a node.
      type: str
    generation:
      description: Newest generation seen.
      type: int
    generations:
      description: Every generation seen.
      type: list
      elements: int
    resource_slice_count:
      description: Slices the pool announces at its newest generation.
      type: int
    slices_seen:
      description: Slices present at the newest generation.
      type: int
    devices:
      description: Devices at the newest generation.
      type: int
    consistent:
      description: Whether there is one generation and every announced slice is present.
      type: bool
  sample:
    - {driver: gpu.example.com, pool: worker1, node: worker1, generation: 1, generations: [1],
       resource_slice_count: 1, slices_seen: 1, devices: 8, consistent: true}
claims:
  description: Every ResourceClaim, sorted by namespace and name; with O(detail=false), the ones holding devices only.
  returned: always
  type: list
  elements: dict
  contains:
    namespace:
      description: Namespace of the claim.
      type: str
    name:
      description: Name of the claim.
      type: str
    seat:
      description: Value of the label C(dralab.workshop/seat) on the namespace, or null.
      type: str
    state:
      description: V(pending) (no allocation), V(allocated) (allocation, no consumer) or V(reserved) (in use).
      type: str
    devices:
      description:
        - Allocated devices, each with C(driver), C(pool), C(device), C(request) and C(node), and for a share of a
          shared device C(consumed_capacity) (name to quantity) and C(share_id).
      type: list
      elements: dict
    device_status:
      description:
        - What the drivers wrote about the claim's devices (C(status.devices), DRAResourceClaimDeviceStatus), each
          with C(driver), C(pool), C(device), C(share_id), C(data) (for the example driver C(uuid), C(model),
          C(driverVersion)), C(conditions) and C(network_data); empty when no driver wrote any.
      type: list
      elements: dict
    reserved_for:
      description: Names of the pods the claim is reserved for (C(resource/name) for other consumers).
      type: list
      elements: str
    holder_pods_alive:
      description: Names of the consumer pods that exist and have not terminated.
      type: list
      elements: str
    owner_template:
      description: Whether the claim was generated from a ResourceClaimTemplate for a pod.
      type: bool
    created:
      description: Creation timestamp.
      type: str
    age_seconds:
      description: Age in seconds.
      type: int
    pending_reason:
      description: For a pending claim, the scheduler's reason, or V(no pod uses this claim yet); null otherwise.
      type: str
    explain_reason:
      description:
        - For a pending claim, the explainer's reason code (the published devices replayed against the claim),
          for example V(no_matching_device), V(all_matching_in_use), V(constraint_unsatisfiable),
          V(nodes_not_ready), V(no_such_class) or V(allocatable); null otherwise.
      type: str
    explain_sentence:
      description:
        - For a pending claim, the diagnosis in one sentence, its cause (for example C(no GPU has memory >= 100Gi
          (the largest has 80Gi).)) then what to do (C(Change the request, ...)); null otherwise.
      type: str
    verdict:
      description: For a pending claim, V(never_fits), V(waits), V(fits_now), V(blocked), V(over_quota) or V(undecided);
        C(headline) says it in words (C(never fits as asked), C(waits for a device in use), ...).
      type: str
    scheduler_said:
      description: What the scheduler said about the claim's pod (evidence, apart from the sentence), or null.
      type: str
  sample:
    - {namespace: user07, name: gpu-claim, seat: user07, state: reserved, reserved_for: [train-1],
       devices: [{driver: gpu.example.com, pool: worker1, device: gpu-3, request: gpu, node: worker1}],
       holder_pods_alive: [train-1], owner_template: false, created: "2026-10-28T09:12:00Z", age_seconds: 2880,
       pending_reason: null, explain_reason: null, verdict: null, scheduler_said: null}
problems:
  description:
    - Problems found, errors first.
    - Besides the keys below, each problem names what it concerns with some of C(namespace), C(name), C(node),
      C(driver), C(pool), C(device), C(pods), C(claims), C(published), C(expected), C(age_seconds), C(seat) and C(expires).
  returned: always
  type: list
  elements: dict
  contains:
    type:
      description: Problem type.
      type: str
    severity:
      description: V(error) or V(warning).
      type: str
    object:
      description: The object concerned, for example C(ResourceClaim user07/gpu-claim) or C(Node worker1).
      type: str
    reason:
      description:
        - What is wrong, why, and what to do.
        - For C(claim_pending), who waits, the verdict (C(claims[].headline)) and the diagnosis's sentence.
      type: str
    explain_reason:
      description: For C(claim_pending) only, the explainer's reason code (see C(claims[].explain_reason)).
      type: str
      returned: for claim_pending problems
    explain_sentence:
      description: For C(claim_pending) only, the diagnosis's sentence (see C(claims[].explain_sentence)).
      type: str
      returned: for claim_pending problems
    verdict:
      description: For C(claim_pending) (see C(claims[].verdict)) and C(pod_claim_*) problems; see docs/diagnosis.md.
      type: str
      returned: for claim_pending and pod_claim_* problems
    scheduler_said:
      description: For C(claim_pending), what the scheduler said about the pod, or null (printed apart by RV(report_lines)).
      type: str
      returned: for claim_pending problems
    count:
      description: With O(detail=false), how many problems of this kind this one stands for (more than 5).
      type: int
      returned: for aggregated problems
    objects:
      description: With O(detail=false), the first objects of the aggregated problems.
      type: list
      elements: str
      returned: for aggregated problems
    allocatable_now:
      description:
        - For C(claim_pending) only, whether the published devices would let the scheduler allocate the claim now
          (true usually means the scheduler has not retried yet).
      type: bool
      returned: for claim_pending problems
  sample:
    - {type: claim_pending, severity: warning, object: ResourceClaim user07/big, verdict: never_fits,
       reason: "claim user07/big is pending (pod user07/train cannot be scheduled) and never fits as asked: no GPU
         has memory >= 100Gi (the largest has 80Gi). Change the request: ask for no more than the devices offer.",
       scheduler_said: "0/3 nodes are available: 3 cannot allocate all claims. ..."}
device_classes:
  description: Names of the DeviceClasses in the cluster.
  returned: always
  type: list
  elements: str
  sample: [gpu.example.com]
shared_devices:
  description:
    - Per shared device (allowMultipleAllocations) allocated to claims, the claims sharing it and per capacity its
      C(total), C(used) (the sum of the claims' consumed capacity) and C(free). A sum above the total is a
      C(device_capacity_exceeded) error.
  returned: always
  type: list
  elements: dict
  sample:
    - {driver: gpu.example.com, pool: node1, device: gpu-0, node: node1,
       claims: [user01/small-1, user01/small-2, user01/small-3],
       capacity: {memory: {total: 80Gi, used: 30Gi, free: 50Gi}, compute: {total: "100", used: "30", free: "70"}}}
waitlist:
  description:
    - The GPU waitlist (C(can-has-gpu reserve) without a free GPU), per class first come first, each with C(seat),
      C(namespace), C(device_class), C(count), C(since), C(position) (0 when a GPU is free for it, null when the
      seat holds what its limit allows), and C(estimate), the lease end of C(estimate_seat) it waits for.
  returned: always
  type: list
  elements: dict
  sample: [{seat: user25, namespace: user25, device_class: gpu.example.com, count: 1, since: "2026-12-01T10:02:00Z",
            position: 1, estimate: "2026-12-01T10:14:00Z", estimate_seat: user07}]
tainted_devices:
  description:
    - Per tainted device, its taints (C(key), C(value), C(effect), and C(rule), the DeviceTaintRule that set it, or
      null for a taint the driver published). Each is also a C(device_tainted) warning.
  returned: always
  type: list
  elements: dict
  sample:
    - {driver: gpu.example.com, pool: node1, node: node1, device: gpu-0,
       taints: [{key: dralab.workshop/maintenance, value: gpu-0, effect: NoSchedule, rule: maintenance-gpu-0}]}
report_lines:
  description:
    - The report for a person, one line each, as role lab_health prints it. The verdict with the number of errors
      and warnings, the devices published and expected, allocated and free, the claims, the GPU waitlist per class
      (its seats in order, who gets the next GPU when), one line per node (devices, slices, readiness) and one per
      problem (severity, object, reason).
    - Returned with the failure of an unhealthy lab too.
  returned: always
  type: list
  elements: str
  sample:
    - "DRA lab UNHEALTHY: 1 error(s), 0 warning(s)"
    - "Devices (gpu.example.com): 16/24 published on 2/3 nodes, 0 allocated, 16 free"
    - "Claims: 0 total, 0 pending, 0 allocated (0 in use by pods)"
    - "Nodes:"
    - "  node1: 8/8 devices, 1 slice(s), Ready"
    - "  node2: 8/8 devices, 1 slice(s), Ready"
    - "  node3: 0/8 devices, 0 slice(s), Ready"
    - "Problems:"
    - "  ERROR Node node3: node node3 publishes no ResourceSlice for driver gpu.example.com, so ..."
"""


from ansible.module_utils.basic import missing_required_lib

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.board import lab_check
from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel_types
from ansible_collections.dralab.workshop.plugins.module_utils.dra import objects as dra_objects
from ansible_collections.dralab.workshop.plugins.module_utils.dra import report as dra_report
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import auth_argspec, run_with_client


def argspec():
    spec = auth_argspec()
    spec.update(
        driver=dict(type='str', default=dra_objects.DEFAULT_DRIVER),
        expected_devices_per_node=dict(type='int', default=lab_settings.default('dralab_devices_per_node')),
        nodes=dict(type='list', elements='str', default=[]),
        node_selector=dict(type='dict', default={}),
        stale_claim_age=dict(type='raw', default='1h'),
        fail_on_unhealthy=dict(type='bool', default=True),
        include_events=dict(type='bool', default=True),
        detail=dict(type='bool', default=True),
        check_plugins=dict(type='bool', default=False),
        plugin_labels=dict(type='dict', default=dict(dra_objects.EXAMPLE_DRIVER_PLUGIN_LABELS)),
        snapshot_dest=dict(type='path'),
        snapshot_lease_max=dict(type='raw', default=lab_settings.default('dralab_lease_max')),
        snapshot_title=dict(type='str', default='DRA lab'),
        seat_kubeconfig_dir=dict(type='path'),
        event_end=dict(type='str', default=lab_settings.default('dralab_event_end')),
        etcd_quota_bytes=dict(type='int', default=lab_settings.default('dralab_etcd_quota_bytes')),
    )
    return spec


def run(module, client, now=None):
    """Collect, analyse, then exit (or fail) the module. now: injectable time for tests."""
    params = module.params
    if not cel_types.HAS_CEL:
        module.fail_json(msg=missing_required_lib(cel_types.CEL_LIBRARY), exception=cel_types.CEL_IMPORT_ERROR)
    if dra_report.option_problem(params):
        module.fail_json(msg=dra_report.option_problem(params))
    try:
        checked = lab_check.check(client, params, now=now, check_mode=module.check_mode)
    except lab_check.CheckFailed as exc:
        module.fail_json(msg=str(exc))
    for warning in checked['warnings']:
        module.warn(warning)
    report, result = checked['report'], checked['result']
    if not report['healthy']:
        if params['fail_on_unhealthy']:
            module.fail_json(msg=dra_report.unhealthy_message(report), **dict(result, **report))
        module.warn(dra_report.unhealthy_message(report, reasons=False))
    module.exit_json(**dict(result, **report))


def main():
    run_with_client(argspec(), run)


if __name__ == '__main__':
    main()
