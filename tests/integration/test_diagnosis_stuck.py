"""A row of the diagnosis table (docs/diagnosis.md) on the real 1.35 control plane: a pod being deleted on a node
that is NotReady keeps its claim reserved (the resource claim controller releases a claim only when its pod is gone,
terminal, or deleted before it was bound), so a claim that waits for that device waits until somebody force-deletes
the pod; no lease end frees it.

The node goes NotReady as when its kubelet dies: kwok (the fake kubelet of every node) is stopped, and the node's
Ready condition set Unknown as the node lifecycle controller would after its grace period (3m here); nothing deletes
the pod then. Read back through dra_health, the board's state and can-has-gpu as the waiting seat; once kwok runs
again, the node is Ready, the pod is gone and the scheduler allocates the waiting claim.

Seats: user58 holds one GPU with its pod `holder` (a finalizer keeps it in the API once deleted: the lab's pods
have no grace period, and kwok would delete it at once); user59 asks for that very GPU (its uuid). user60 holds a
GPU on another node, and user54 asks for either of the two: it waits for user60's (the GPU of the stuck pod is on the
NotReady node), and can-has-gpu as user54, which cannot read user58's pods, names the stuck pod as dra_health does
from the lease reaper's occupancy board; released by user60, that GPU goes to user54 while the node is still down.
What each tool said is written to diagnosis-table-stuck.json and .md (workshop.dir).
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from diagnosis_seen import Seen, ageless, create_as, record_fixture, seat_tools
from k8s_helpers import (DRIVER, allocated, claim_body, pod_body, resource_api, wait_for,
                         wait_pod_running, wait_pod_unschedulable)

HOLDER, WAITER, OTHER, EITHER = "user58", "user59", "user60", "user54"
# What the scheduler finally does: an event usually requeues the waiting pod within seconds, but on a loaded CI
# machine one was seen to take over 90 s (once in four runs); kube-scheduler retries every unschedulable pod at
# least every 5 minutes (podMaxInUnschedulablePodsDuration) without one, so the wait covers that.
RETRIED = 330
SEATS = [HOLDER, WAITER, OTHER, EITHER]
FINALIZER = "example.com/still-running"

record = record_fixture("stuck")


def ready(core, node):
    return next((c.status for c in core.read_node(node).status.conditions or [] if c.type == "Ready"), None)


def free_device_elsewhere(admin, pool):
    """(pool, device) of a device no claim holds, in a pool other than pool."""
    taken = {found for claim in resource_api(admin).list_resource_claim_for_all_namespaces().items
             for found in allocated(claim)}
    for piece in resource_api(admin).list_resource_slice().items:
        if piece.spec.driver == DRIVER and piece.spec.pool.name != pool:
            for found in piece.spec.devices or []:
                if (piece.spec.pool.name, found.name) not in taken:
                    return piece.spec.pool.name, found.name
    raise AssertionError(f"no free device outside pool {pool}")


def occupancy_has_pod(core, seat, uid):
    """Whether the lease reaper's occupancy board in the seat's namespace carries the pod of that uid."""
    data = core.read_namespaced_config_map("dralab-gpu-occupancy", seat).data or {}
    return any(p["metadata"]["uid"] == uid for p in json.loads(data.get("claims.json") or "{}").get("pods") or [])


def uuid_of(admin, pool, device):
    for piece in resource_api(admin).list_resource_slice().items:
        if piece.spec.driver == DRIVER and piece.spec.pool.name == pool:
            for found in piece.spec.devices or []:
                if found.name == device:
                    return found.attributes["uuid"].string
    raise AssertionError(f"no device {device} in pool {pool}")


@pytest.fixture(scope="module")
def stuck(control_plane, workshop, tmp_path_factory):
    core = client.CoreV1Api(control_plane.api_client)
    with seat_tools(control_plane, workshop, tmp_path_factory, "diagnosis-stuck", SEATS) as tool:
        try:
            yield built(control_plane, workshop, tool)
        finally:
            wait_for("no node tainted by the node lifecycle controller", lambda: not any(
                n.spec.taints for n in core.list_node().items), timeout=90)


def built(control_plane, workshop, tool):
    """The stuck pod, what every tool says meanwhile, what the scheduler does once the node is back."""
    admin, cluster = control_plane.api_client, control_plane.cluster
    core = client.CoreV1Api(admin)
    holder = pod_body("holder", claim="gpu")
    holder["metadata"]["finalizers"] = [FINALIZER]  # a pod of grace 0 goes at once: this keeps it, as a kubelet
    create_as(workshop, HOLDER, [claim_body("gpu")], pods=[holder])  # that cannot confirm its stop would
    node = wait_pod_running(admin, HOLDER, "holder").spec.node_name
    [(pool, device)] = wait_for("user58's claim allocated", lambda: allocated(
        resource_api(admin).read_namespaced_resource_claim("gpu", HOLDER)))
    uuid = uuid_of(admin, pool, device)
    create_as(workshop, WAITER, [claim_body("gpu", selectors=[
        f'device.attributes["{DRIVER}"].uuid == "{uuid}"'])], pods=[pod_body("gpu", claim="gpu")])
    wait_pod_unschedulable(admin, WAITER, "gpu")
    other_pool, other_device = free_device_elsewhere(admin, pool)
    other_uuid = uuid_of(admin, other_pool, other_device)
    create_as(workshop, OTHER, [claim_body("gpu", selectors=[f'device.attributes["{DRIVER}"].uuid == "{other_uuid}"'])],
              pods=[pod_body("gpu", claim="gpu")])
    other_node = wait_pod_running(admin, OTHER, "gpu").spec.node_name
    create_as(workshop, EITHER, [claim_body("gpu", selectors=[
        f'device.attributes["{DRIVER}"].uuid in ["{uuid}", "{other_uuid}"]'])], pods=[pod_body("gpu", claim="gpu")])
    wait_pod_unschedulable(admin, EITHER, "gpu")
    wait_for("the lease reaper's occupancy board in every seat", lambda: all(
        core.read_namespaced_config_map("dralab-gpu-occupancy", seat) for seat in SEATS), timeout=60)
    seen = {"node": node, "device": device, "other_node": other_node, "other_device": other_device}
    try:
        cluster.stop_process("kwok")
        core.patch_node_status(node, {"status": {"conditions": [{
            "type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status (dralab test)"}]}})
        core.delete_namespaced_pod("holder", HOLDER)
        seen["deleting"] = wait_for("user58/holder being deleted", lambda: (
            p if (p := core.read_namespaced_pod("holder", HOLDER)).metadata.deletion_timestamp else None))
        holder_uid = seen["deleting"].metadata.uid
        wait_for("the stuck pod on the occupancy board", lambda: occupancy_has_pod(core, EITHER, holder_uid), timeout=60)
        seen["stuck"] = Seen(workshop, tool, "stuck", [WAITER, EITHER])
        seen["held"] = resource_api(admin).read_namespaced_resource_claim("gpu", HOLDER)
        seen["waiting"] = resource_api(admin).read_namespaced_resource_claim("gpu", WAITER)
        # The holder that frees a GPU for user54: user60 releases (the pod forced out, as its lease's end would).
        core.delete_namespaced_pod("gpu", OTHER, grace_period_seconds=0)
        resource_api(admin).delete_namespaced_resource_claim("gpu", OTHER)
        seen["either"] = wait_for("user54's claim allocated once user60 released", lambda: (
            c if allocated(c := resource_api(admin).read_namespaced_resource_claim("gpu", EITHER)) else None),
            timeout=RETRIED)
    finally:
        cluster.start_process("kwok")
        wait_for(f"{node} Ready again", lambda: ready(core, node) == "True", timeout=60)
        core.patch_namespaced_pod("holder", HOLDER, {"metadata": {"finalizers": None}})
    seen["released"] = wait_for("user59's claim allocated once the pod is gone", lambda: (
        c if allocated(c := resource_api(admin).read_namespaced_resource_claim("gpu", WAITER)) else None),
        timeout=RETRIED)
    return seen


def test_the_claim_of_a_pod_stuck_terminating_is_told_held_until_the_pod_is_forced_out(stuck, record):
    seen, node = stuck["stuck"], stuck["node"]
    record.add("The holder claim of a pod stuck Terminating on a NotReady node", seen, f"ResourceClaim {HOLDER}/gpu",
               outcome=f"reservedFor while stuck: {[r.name for r in stuck['held'].status.reserved_for or []]}")
    health = seen.problem(f"ResourceClaim {HOLDER}/gpu")
    assert health["type"] == "claim_reserved_for_missing_pod" and health["severity"] == "error", health
    assert health["reason"].startswith(
        f"claim {HOLDER}/gpu is reserved for pod {HOLDER}/holder which is being deleted on {node}, which is NotReady; "
        f"the GPU {stuck['device']} on node {node} stays held until the pod is gone (kubectl -n {HOLDER} delete pod "
        f"holder --force --grace-period=0)."), health["reason"]
    assert seen.board_problem(f"ResourceClaim {HOLDER}/gpu")["text"] == health["reason"]
    # What the controllers do meanwhile: the pod stays, reserved for; only when it is gone is the claim free.
    assert stuck["deleting"].metadata.deletion_timestamp
    assert [r.name for r in stuck["held"].status.reserved_for] == ["holder"]


def test_a_claim_waiting_for_that_gpu_is_blocked_on_the_node_that_is_not_ready(stuck, record):
    """The GPU is on the NotReady node: the claim that wants it is blocked there, which every tool says alike (its
    holder's stuck pod is named in the sentence of a claim that waits for GPUs on other nodes: unit tests)."""
    seen, node = stuck["stuck"], stuck["node"]
    record.add("A claim waiting for the GPU of a pod stuck Terminating (the GPU's node NotReady)", seen,
               f"ResourceClaim {WAITER}/gpu", WAITER,
               outcome=f"while stuck: allocated {allocated(stuck['waiting']) or 'nothing'}; kwok back, the pod gone: "
                       f"allocated {allocated(stuck['released'])}")
    health = seen.problem(f"ResourceClaim {WAITER}/gpu")
    assert (health["verdict"], health["explain_reason"]) == ("blocked", "nodes_not_ready"), health
    assert health["explain_sentence"] == (f"the 1 matching GPU is on nodes the pod cannot use: {node} is NotReady. "
                                          "Ask the instructor: those nodes cannot take the pod now."), health
    board = seen.board_problem(f"ResourceClaim {WAITER}/gpu")
    assert board["verdict"] == "blocked" and health["explain_sentence"] in board["text"], board["text"]
    answer = seen.why[WAITER]
    told = answer.json()
    assert (told["verdict"], told["sentence"], answer.rc) == ("blocked", health["explain_sentence"], 3), answer.describe()
    assert told["scheduler_said"] == health["scheduler_said"] and health["scheduler_said"].startswith("0/3 nodes")
    # The scheduler: nothing while the pod stays; that GPU once the node is Ready and the pod gone.
    assert not allocated(stuck["waiting"]) and [d for _pool, d in allocated(stuck["released"])] == [stuck["device"]]


def test_a_claim_waiting_for_gpus_one_of_which_a_stuck_pod_holds_is_told_so_by_every_tool(stuck, record):
    """The GPU of the stuck pod is on the NotReady node, the other one in use by user60 on a Ready node: the claim
    waits for user60's, and every tool, can-has-gpu as user54 included, names the stuck pod after it."""
    seen, node = stuck["stuck"], stuck["node"]
    record.add("A claim waiting for two GPUs: one in use, one held by a pod stuck Terminating on a NotReady node",
               seen, f"ResourceClaim {EITHER}/gpu", EITHER,
               outcome=f"user60 released (the node still NotReady): allocated {allocated(stuck['either'])}")
    health = seen.problem(f"ResourceClaim {EITHER}/gpu")
    sentence = health["explain_sentence"]
    assert (health["verdict"], health["explain_reason"]) == ("waits", "all_matching_in_use"), health
    words = ageless(sentence)
    assert words.startswith(f"2 GPUs match; all are in use: {stuck['other_device']} on {stuck['other_node']} by "
                            f"{OTHER}/gpu for AGE (lease until "), sentence
    assert (f"{stuck['device']} on {node} by {HOLDER}/gpu for AGE (lease until " in words
            and f"), held while pod {HOLDER}/holder is being deleted on {node}, which is NotReady (only a forced "
                f"deletion of the pod frees it: ask the instructor). Wait until one of them is released: the first of "
                f"their leases ends at " in words and words.endswith(f" ({OTHER}/gpu).")), sentence
    board = seen.board_problem(f"ResourceClaim {EITHER}/gpu")
    assert board["verdict"] == "waits" and ageless(sentence) in ageless(board["text"]), board["text"]
    answer = seen.why[EITHER]
    told = answer.json()
    assert (told["verdict"], ageless(told["sentence"]), answer.rc) == ("waits", ageless(sentence), 3), answer.describe()
    # The scheduler: user60's GPU, once released, while the stuck pod still holds the other one.
    assert [d for _pool, d in allocated(stuck["either"])] == [stuck["other_device"]]
