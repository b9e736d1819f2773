"""The diagnosis table's partitions row (docs/diagnosis.md) on 1.35.4 with the driver's partitions: every card of the
lab held whole by the instructor, so that no partition is left, though every partition device is itself unallocated.
dra_health, the board's state and can-has-gpu why run as the seat (its own kubeconfig, the lease reaper's occupancy
board) must all say the seat's partition claim waits for a GPU in use outside the seats, never "can be allocated
now"; the scheduler agrees (the claim stays pending), and once one card is released the claim gets a partition of it.
"""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import PARTITION_CLASS
from diagnosis_seen import Seen, create_as, instructor_holding, record_fixture, seat_tools
from k8s_helpers import DRIVER, allocated, claim_body, pod_body, resource_api, wait_for, wait_pod_unschedulable

SEAT = "user01"
INSTRUCTOR = "dralab-partition-table"
WHOLE = f"has(device.attributes['{DRIVER}'].full)"

record = record_fixture("partitions")


def whole_cards(name: str) -> dict:
    """A claim of the 8 cards of one node, each whole (its own device, which consumes all of the card's counters)."""
    body = claim_body(name, selectors=[WHOLE])
    body["spec"]["devices"]["requests"][0]["exactly"]["count"] = 8
    return body


@pytest.fixture(scope="module")
def exhausted(control_plane, workshop, tmp_path_factory):
    admin = control_plane.api_client
    core, resource = client.CoreV1Api(admin), resource_api(admin)
    cards = [whole_cards(f"cards-{n}") for n in range(len(control_plane.nodes))]
    with seat_tools(control_plane, workshop, tmp_path_factory, "partition-table", [SEAT]) as tool, \
            instructor_holding(admin, INSTRUCTOR, cards) as names:
        create_as(workshop, SEAT, [claim_body("slice", device_class=PARTITION_CLASS["name"])],
                  pods=[pod_body("slice", claim="slice")])
        wait_pod_unschedulable(admin, SEAT, "slice")
        wait_for("the lease reaper's occupancy board", lambda: core.read_namespaced_config_map(
            "dralab-gpu-occupancy", SEAT), timeout=60)
        time.sleep(3)  # the reaper's next round (1 s) has counted the instructor's cards
        seen = {"seen": Seen(workshop, tool, "partitions", [SEAT]),
                "pending": resource.read_namespaced_resource_claim("slice", SEAT)}
        # What the scheduler does once one card is free: the seat's claim gets a partition of it.
        released = allocated(resource.read_namespaced_resource_claim(names[0], INSTRUCTOR))
        core.delete_namespaced_pod(names[0], INSTRUCTOR, grace_period_seconds=0)
        resource.delete_namespaced_resource_claim(names[0], INSTRUCTOR)
        seen["released_pool"] = released[0][0]
        seen["after"] = wait_for("the seat's partition allocated once a node's cards are released", lambda: (
            c if allocated(c := resource.read_namespaced_resource_claim("slice", SEAT)) else None), timeout=90)
        yield seen


def test_a_partition_of_cards_held_whole_waits_and_every_tool_says_so(exhausted, record):
    seen = exhausted["seen"]
    after = allocated(exhausted["after"])
    record.add("Every card held whole: a partition waits (partitions exhausted)", seen, f"ResourceClaim {SEAT}/slice",
               SEAT, outcome=f"still pending while held; one node's cards released: allocated {after}")
    health = seen.problem(f"ResourceClaim {SEAT}/slice")
    board = seen.board_problem(f"ResourceClaim {SEAT}/slice")
    told = seen.why[SEAT].json()
    assert health["verdict"] == board["verdict"] == told["verdict"] == "waits", (health, told)
    assert health["explain_reason"] == "all_matching_in_use"
    assert "can be allocated now" not in health["explain_sentence"] + told["sentence"]
    assert health["explain_sentence"] in board["text"]
    # The seat sees who holds the cards only as "outside the seats" (the instructor's claims are not its to read).
    assert "GPUs match; their cards are all in use: " in told["sentence"], told["sentence"]
    assert "in use outside the seats" in told["sentence"], told["sentence"]
    assert health["scheduler_said"].startswith("0/3 nodes are available"), health["scheduler_said"]
    assert not allocated(exhausted["pending"]), "the scheduler does not allocate it while the cards are held"
    assert seen.why[SEAT].rc == 3, seen.why[SEAT].describe()
    # Released: a partition of a card of the node whose cards were freed.
    [(pool, device)] = after
    assert pool == exhausted["released_pool"] and "-partition-" in device, after
