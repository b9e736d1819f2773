"""The shared-capacity rows of the diagnosis table (docs/diagnosis.md) on 1.35.4 with DRAConsumableCapacity (this
session's consumable_capacity feature: every GPU shareable, class gpu-shared.example.com). The instructor takes all of
every card's memory (80Gi shares of all 24 cards); the seat asks for a 20Gi share, which waits for a GPU in use
outside the seats, and for a 100Gi share, which no card ever has room for. Read back through dra_health, the board's
state and can-has-gpu as the seat (its kubeconfig), compared, and with the scheduler: the 100Gi share stays pending,
the 20Gi share is allocated once one of the instructor's claims is released."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import SHARED_CLASS
from diagnosis_seen import Seen, ageless, create_as, instructor_holding, record_fixture, seat_tools
from k8s_helpers import allocated, claim_body, pod_body, resource_api, wait_for, wait_pod_unschedulable
from seat_demo import SEAT

INSTRUCTOR = "dralab-share-table"
record = record_fixture("shares")


def share(name: str, memory: str, count: int = 1) -> dict:
    body = claim_body(name, device_class=SHARED_CLASS["name"])
    exactly = body["spec"]["devices"]["requests"][0]["exactly"]
    exactly.update(count=count, capacity={"requests": {"memory": memory}})
    return body


@pytest.fixture(scope="module")
def shares(control_plane, workshop, tmp_path_factory):
    admin = control_plane.api_client
    core, resource = client.CoreV1Api(admin), resource_api(admin)
    cards = [share(f"cards-{n}", "80Gi", count=8) for n in range(len(control_plane.nodes))]
    with seat_tools(control_plane, workshop, tmp_path_factory, "diagnosis-shares", [SEAT]) as tool, \
            instructor_holding(admin, INSTRUCTOR, cards) as names:
        create_as(workshop, SEAT, [share("small", "20Gi"), share("huge", "100Gi")],
                  pods=[pod_body("small", claim="small"), pod_body("huge", claim="huge")])
        for pod in ("small", "huge"):
            wait_pod_unschedulable(admin, SEAT, pod)
        wait_for("the lease reaper's occupancy board", lambda: core.read_namespaced_config_map(
            "dralab-gpu-occupancy", SEAT), timeout=60)
        time.sleep(3)  # the reaper's next round (1 s) has counted the instructor's shares
        seen = {"seen": Seen(workshop, tool, "shares", [SEAT]),
                "why": {name: tool.run(SEAT, "why", name, "-o", "json") for name in ("small", "huge")}}
        # What the scheduler does once one node's cards have room again.
        core.delete_namespaced_pod(names[0], INSTRUCTOR, grace_period_seconds=0)
        resource.delete_namespaced_resource_claim(names[0], INSTRUCTOR)
        seen["small"] = wait_for("the 20Gi share allocated once cards have room", lambda: (
            c if allocated(c := resource.read_namespaced_resource_claim("small", SEAT)) else None), timeout=90)
        time.sleep(5)  # the scheduler has had its chances at the 100Gi share too
        seen["huge"] = resource.read_namespaced_resource_claim("huge", SEAT)
        yield seen


def told(shares, name):
    """dra_health's problem for the seat's claim, the board's row of it and can-has-gpu why's answer for it (run as
    the seat at the same moment): all three agree."""
    seen, obj = shares["seen"], f"ResourceClaim {SEAT}/{name}"
    seen.why[SEAT] = shares["why"][name]  # the record's can-has-gpu cell: this claim's answer
    health = seen.problem(obj)
    board = seen.board_problem(obj)
    answer = shares["why"][name]
    assert board["verdict"] == health["verdict"] and health["explain_sentence"] in board["text"], (board, health)
    assert (answer.json()["verdict"], ageless(answer.json()["sentence"])) == (
        health["verdict"], ageless(health["explain_sentence"])), answer.describe()
    assert answer.json()["scheduler_said"] == health["scheduler_said"]
    return health, answer


def test_a_share_of_cards_whose_memory_is_taken_waits(shares, record):
    health, answer = told(shares, "small")
    record.add("Shared capacity exhausted: a 20Gi share", shares["seen"], f"ResourceClaim {SEAT}/small", SEAT,
               outcome=f"one node's shares released: allocated {allocated(shares['small'])}")
    assert (health["verdict"], health["explain_reason"]) == ("waits", "all_matching_in_use"), health
    assert "in use outside the seats" in health["explain_sentence"], health["explain_sentence"]
    assert health["scheduler_said"].startswith("0/3 nodes are available")
    assert answer.rc == 3, answer.describe()
    assert allocated(shares["small"])


def test_a_share_no_card_has_room_for_never_fits(shares, record):
    health, answer = told(shares, "huge")
    record.add("A share larger than any card: 100Gi", shares["seen"], f"ResourceClaim {SEAT}/huge", SEAT,
               outcome="still pending" if not allocated(shares["huge"]) else f"allocated {allocated(shares['huge'])}")
    assert (health["verdict"], health["explain_reason"]) == ("never_fits", "no_matching_device"), health
    assert health["explain_sentence"] == ("no GPU has room for what the claim asks: memory 100Gi (the largest has "
                                          "80Gi). Change the request: ask for at most 80Gi of memory.")
    assert answer.rc == 5, answer.describe()
    assert not allocated(shares["huge"]), "the scheduler never allocates it either"
