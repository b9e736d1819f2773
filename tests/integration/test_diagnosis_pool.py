"""The row "pool being republished" of the diagnosis table (docs/diagnosis.md) on the real 1.35 control plane.

A driver republishing a pool writes its ResourceSlices one after the other: until the last one is there, the pool is
incomplete, and a claim that asks for all matching devices (allocationMode All) cannot be allocated, since the
scheduler cannot know all of them. Here the instructor publishes such a pool by hand (allNodes, the example driver's
name, 2 slices announced, 1 written; the kubelet plugins leave slices of no node alone) and asks for all of its
devices in a namespace of their own (a seat may not ask for All). dra_health and the board's state say it waits
for the pool (blocked, pool_incomplete); once the second slice is written, the scheduler allocates all three.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from diagnosis_seen import Seen, record_fixture
from k8s_helpers import DRIVER, allocated, claim_body, pod_body, resource_api, wait_for, wait_pod_unschedulable

INSTRUCTOR = "dralab-diagnosis-pool"
POOL = "republishing"
SELECTOR = f"device.driver == '{DRIVER}' && has(device.attributes['{DRIVER}'].{POOL})"

record = record_fixture("pool")


def pool_slice(number: int, devices: list[str]) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"dralab-test-{POOL}-{number}"},
            "spec": {"driver": DRIVER, "pool": {"name": POOL, "generation": 1, "resourceSliceCount": 2},
                     "allNodes": True,
                     "devices": [{"name": name, "attributes": {POOL: {"bool": True}}} for name in devices]}}


@pytest.fixture(scope="module")
def pool(control_plane, workshop):
    admin = control_plane.api_client
    core, resource = client.CoreV1Api(admin), resource_api(admin)
    core.create_namespace({"metadata": {"name": INSTRUCTOR}})
    slices = [pool_slice(1, ["spare-0", "spare-1"]), pool_slice(2, ["spare-2"])]
    try:
        wait_for("the default service account", lambda: core.read_namespaced_service_account("default", INSTRUCTOR))
        resource.create_resource_slice(slices[0])
        claim = claim_body("all", selectors=[SELECTOR])
        claim["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "All"
        resource.create_namespaced_resource_claim(INSTRUCTOR, claim)
        core.create_namespaced_pod(INSTRUCTOR, pod_body("all", claim="all"))
        wait_pod_unschedulable(admin, INSTRUCTOR, "all")
        seen = {"seen": Seen(workshop, None, "pool", []),
                "pending": resource.read_namespaced_resource_claim("all", INSTRUCTOR)}
        resource.create_resource_slice(slices[1])
        seen["complete"] = wait_for("the claim allocated once the pool is complete", lambda: (
            c if allocated(c := resource.read_namespaced_resource_claim("all", INSTRUCTOR)) else None), timeout=90)
        yield seen
    finally:
        core.delete_namespace(INSTRUCTOR)
        wait_for(f"namespace {INSTRUCTOR} gone", lambda: INSTRUCTOR not in [
            n.metadata.name for n in core.list_namespace().items], timeout=120)
        for piece in slices:
            resource.delete_resource_slice(piece["metadata"]["name"])


def test_a_claim_for_all_devices_of_a_pool_being_republished_waits_for_the_pool(pool, record):
    seen = pool["seen"]
    obj = f"ResourceClaim {INSTRUCTOR}/all"
    record.add("All devices of a pool being republished (allocationMode All)", seen, obj,
               outcome=f"the pool's second slice written: allocated {sorted(d for _p, d in allocated(pool['complete']))}")
    health = seen.problem(obj)
    assert (health["verdict"], health["explain_reason"]) == ("blocked", "pool_incomplete"), health
    assert health["explain_sentence"] == (
        f"the claim asks for all matching GPUs, but pool {DRIVER}/{POOL} is being republished. Wait a few seconds "
        "while the driver publishes its devices again; ask the instructor if it lasts."), health["explain_sentence"]
    board = seen.board_problem(obj)
    assert board["verdict"] == "blocked" and health["explain_sentence"] in board["text"], board["text"]
    # The scheduler's own words, apart: its filter refuses the claim while the pool is being updated.
    assert f"resource pool {DRIVER}/{POOL} is currently being updated" in (health["scheduler_said"] or ""), health
    # dra_health names the pool itself too.
    assert any(p["type"] == "pool_inconsistent" and POOL in p["object"] for p in seen.report["problems"]), [
        (p["type"], p["object"]) for p in seen.report["problems"]]
    # The scheduler: nothing while the pool is incomplete, all three once it is whole.
    assert not allocated(pool["pending"])
    assert sorted(d for _pool, d in allocated(pool["complete"])) == ["spare-0", "spare-1", "spare-2"]
