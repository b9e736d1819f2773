"""The rows of the diagnosis table (docs/diagnosis.md) where the lab, not the request, keeps a claim waiting, on the
real 1.35 control plane: each situation built for real, read back through dra_health, the board's state (dra_health's
snapshot) and can-has-gpu run as the seat (its own kubeconfig), compared with each other and with what the scheduler
does once the cause is gone. What each tool said is written to diagnosis-table-lab.json and .md (workshop.dir).

Seats (one claim and one pod each):
- user55: a pod whose schedulerName names a scheduler that does not run (other_scheduler: never tried; recreated
  without it, the lab's scheduler allocates its claim);
- user56: every node cordoned (blocked, nodes_not_ready; uncordoned, the scheduler allocates);
- user57: no device published at all, every kubelet plugin stopped and its ResourceSlice deleted (blocked,
  no_matching_device, "is the DRA driver running?"; the plugins publish again, the scheduler allocates).
"""

from __future__ import annotations

import pytest
from kubernetes import client

from diagnosis_seen import Seen, create_as, record_fixture, seat_tools
from k8s_helpers import (DRIVER, allocated, claim_body, pod_body,
                         pod_scheduled_condition, published_devices, resource_api, wait_for, wait_pod_unschedulable)
from playbook import DEVICES_PER_NODE

SCHEDULER, CORDONED, NO_DEVICE = "user55", "user56", "user57"
SEATS = [SCHEDULER, CORDONED, NO_DEVICE]
OTHER = "my-scheduler"


def claim_of(admin, seat, name="gpu"):
    return resource_api(admin).read_namespaced_resource_claim(name, seat)


def wait_allocated(admin, seat, what, timeout=60):
    return wait_for(what, lambda: c if allocated(c := claim_of(admin, seat)) else None, timeout=timeout)


def cordon(core, nodes, on):
    for node in nodes:
        core.patch_node(node, {"spec": {"unschedulable": True if on else None}})


def unpublish(cluster, admin, nodes):
    for node in nodes:
        cluster.stop_plugin(node)
        resource_api(admin).delete_collection_resource_slice(field_selector=f"spec.nodeName={node}")
    wait_for("every ResourceSlice gone", lambda: not published_devices(admin), timeout=30)


def republish(cluster, admin, nodes):
    for node in nodes:
        if published_devices(admin).get(node) != DEVICES_PER_NODE:
            cluster.stop_plugin(node)
            cluster.start_plugin(node, num_devices=DEVICES_PER_NODE)
    wait_for(f"every node publishing its {DEVICES_PER_NODE} GPUs", lambda: all(
        published_devices(admin).get(node) == DEVICES_PER_NODE for node in nodes), timeout=90)


record = record_fixture("lab")


@pytest.fixture(scope="module")
def table(control_plane, workshop, tmp_path_factory):
    with seat_tools(control_plane, workshop, tmp_path_factory, "diagnosis-lab", SEATS) as tool:
        try:
            yield built(control_plane, workshop, tool)
        finally:
            cordon(client.CoreV1Api(control_plane.api_client), control_plane.nodes, False)


def built(control_plane, workshop, tool):
    """The situations, what every tool says about them, what the scheduler does once their cause is gone."""
    admin = control_plane.api_client
    core = client.CoreV1Api(admin)
    nodes = control_plane.nodes
    seen = {}
    # 1. A pod for a scheduler that does not run; every node cordoned.
    other = pod_body("gpu", claim="gpu")
    other["spec"]["schedulerName"] = OTHER
    create_as(workshop, SCHEDULER, [claim_body("gpu")], pods=[other])
    cordon(core, nodes, True)
    create_as(workshop, CORDONED, [claim_body("gpu")], pods=[pod_body("gpu", claim="gpu")])
    wait_pod_unschedulable(admin, CORDONED, "gpu")
    wait_for("the lease reaper's occupancy board in every seat", lambda: all(
        core.read_namespaced_config_map("dralab-gpu-occupancy", seat) for seat in SEATS), timeout=60)
    seen["cordoned"] = Seen(workshop, tool, "cordoned", [SCHEDULER, CORDONED])
    seen["other_pod"] = core.read_namespaced_pod("gpu", SCHEDULER)
    seen["other_claim"] = claim_of(admin, SCHEDULER)
    seen["cordoned_claim"] = claim_of(admin, CORDONED)
    # What the scheduler does once the cause is gone.
    cordon(core, nodes, False)
    seen["uncordoned"] = wait_allocated(admin, CORDONED, "user56's claim allocated once the nodes are uncordoned")
    core.delete_namespaced_pod("gpu", SCHEDULER, grace_period_seconds=0)
    wait_for("user55's pod gone", lambda: "gpu" not in [p.metadata.name for p in core.list_namespaced_pod(SCHEDULER).items])
    create_as(workshop, SCHEDULER, pods=[pod_body("gpu", claim="gpu")])
    seen["default_scheduler"] = wait_allocated(admin, SCHEDULER, "user55's claim allocated once its pod names no "
                                                                 "scheduler of its own")
    # 2. No device published at all: every plugin stopped, every ResourceSlice deleted.
    try:
        unpublish(control_plane.cluster, admin, nodes)
        create_as(workshop, NO_DEVICE, [claim_body("gpu")], pods=[pod_body("gpu", claim="gpu")])
        wait_pod_unschedulable(admin, NO_DEVICE, "gpu")
        seen["unpublished"] = Seen(workshop, tool, "unpublished", [NO_DEVICE])
        seen["unpublished_claim"] = claim_of(admin, NO_DEVICE)
    finally:
        republish(control_plane.cluster, admin, nodes)
    seen["republished"] = wait_allocated(admin, NO_DEVICE, "user57's claim allocated once the GPUs are published",
                                         timeout=120)
    return seen


def told_alike(seen, seat, verdict, reason):
    """dra_health's claim_pending problem, the board's row and can-has-gpu why as the seat: one verdict, one sentence."""
    health = seen.problem(f"ResourceClaim {seat}/gpu")
    board = seen.board_problem(f"ResourceClaim {seat}/gpu")
    answer = seen.why[seat]
    told = answer.json()
    assert (health["verdict"], health["explain_reason"]) == (verdict, reason), health
    assert board["verdict"] == told["verdict"] == verdict, (board, answer.describe())
    assert health["explain_sentence"] in board["text"], (board["text"], health["explain_sentence"])
    assert told["sentence"] == health["explain_sentence"], answer.describe()
    assert told["scheduler_said"] == health["scheduler_said"], answer.describe()
    return health, answer


def test_a_pod_for_a_scheduler_that_does_not_run_is_never_tried(table, record):
    seen = table["cordoned"]
    record.add("A pod whose schedulerName names a scheduler that does not run", seen, f"ResourceClaim {SCHEDULER}/gpu",
               SCHEDULER, outcome=f"PodScheduled condition: {getattr(pod_scheduled_condition(table['other_pod']), 'reason', None)}"
               f", claim allocated: {allocated(table['other_claim']) or 'no'}; recreated without schedulerName: "
               f"allocated {allocated(table['default_scheduler'])}")
    health, answer = told_alike(seen, SCHEDULER, "other_scheduler", "nodes_not_ready")
    assert health["explain_sentence"].endswith(
        f"The lab's scheduler (default-scheduler) never tries pod {SCHEDULER}/gpu: its schedulerName is {OTHER}, a "
        f"scheduler that does not run in the lab. Change the pod: drop its schedulerName (or set it to "
        f"default-scheduler); ask the instructor if {OTHER} should run."), health["explain_sentence"]
    assert answer.rc == 5, answer.describe()
    # No scheduler tried it: no PodScheduled condition, nothing said, the claim pending; the lab's scheduler allocates
    # it as soon as a pod without that schedulerName uses it.
    assert health["scheduler_said"] is None and pod_scheduled_condition(table["other_pod"]) is None
    assert not allocated(table["other_claim"]) and allocated(table["default_scheduler"])


@pytest.mark.parametrize("situation, moment, seat, reason, sentence, scheduler_said, before, after", [
    ("Every node cordoned", "cordoned", CORDONED, "nodes_not_ready",
     "the 24 matching GPUs are on nodes the pod cannot use: node-1 is cordoned (unschedulable), node-2 is cordoned "
     "(unschedulable) and node-3 is cordoned (unschedulable). Ask the instructor: those nodes cannot take the pod now.",
     "0/3 nodes are available: 3 node(s) were unschedulable.", "cordoned_claim", "uncordoned"),
    ("Driver or kubelet plugin down: no device published", "unpublished", NO_DEVICE, "no_matching_device",
     f"no published device belongs to DeviceClass {DRIVER} (0 devices published in the lab). Ask the instructor: the "
     "lab publishes no device (is the DRA driver running?).",
     "0/3 nodes are available: 3 cannot allocate all claims.", "unpublished_claim", "republished"),
], ids=["cordoned", "unpublished"])
def test_a_claim_the_lab_blocks_is_told_to_ask_the_instructor_until_the_scheduler_allocates_it(
        table, record, situation, moment, seat, reason, sentence, scheduler_said, before, after):
    seen = table[moment]
    record.add(situation, seen, f"ResourceClaim {seat}/gpu", seat,
               outcome=f"while {moment}: allocated {allocated(table[before]) or 'nothing'}; "
                       f"afterwards: allocated {allocated(table[after]) or 'nothing'}")
    health, answer = told_alike(seen, seat, "blocked", reason)
    assert health["explain_sentence"] == sentence, health["explain_sentence"]
    assert answer.rc == 3, answer.describe()
    assert health["scheduler_said"].startswith(scheduler_said), health["scheduler_said"]
    assert not allocated(table[before]) and allocated(table[after])


def test_without_any_device_dra_health_names_every_node_without_its_slice(table):
    missing = sorted(p["node"] for p in table["unpublished"].report["problems"] if p["type"] == "node_missing_slice")
    assert missing == ["node-1", "node-2", "node-3"], table["unpublished"].report["problems"]
