"""The device-taints row of the diagnosis table (docs/diagnosis.md) on the real 1.35 control plane with
DRADeviceTaints and DRADeviceTaintRules (this session's device_taints feature): the instructor's DeviceTaintRule
(v1alpha3) taints every gpu-0, the seat's claim wants a gpu-0 and does not tolerate it. Read back through dra_health,
the board's state and can-has-gpu as the seat (its kubeconfig), compared, and with the scheduler: nothing while the
rule stands, gpu-0 once it is deleted. What each tool said: diagnosis-table-taints.json and .md (workshop.dir)."""

from __future__ import annotations

import pytest
from kubernetes import client

from diagnosis_seen import Seen, record_fixture, seat_tools
from k8s_helpers import allocated, resource_api, wait_for, wait_pod_unschedulable
from seat_demo import SEAT, demo

RULE = "maintenance-gpu-0"
record = record_fixture("taints")


@pytest.fixture(scope="module")
def tainted(control_plane, workshop, seat, instructor, tmp_path_factory):
    api = control_plane.api_client
    rule = demo("device-taints", "instructor-taint-rule.yaml")
    with seat_tools(control_plane, workshop, tmp_path_factory, "diagnosis-taints", [SEAT]) as tool:
        instructor("apply", *rule)
        try:
            seat("apply", *demo("device-taints", "claim.yaml", "pod.yaml"))
            wait_pod_unschedulable(api, SEAT, "wants-gpu-0")
            wait_for("the lease reaper's occupancy board", lambda: client.CoreV1Api(api).read_namespaced_config_map(
                "dralab-gpu-occupancy", SEAT), timeout=60)
            seen = {"seen": Seen(workshop, tool, "taints", [SEAT]),
                    "while": resource_api(api).read_namespaced_resource_claim("wants-gpu-0", SEAT)}
        finally:
            instructor("delete", "--ignore-not-found", *rule)
        seen["after"] = wait_for("wants-gpu-0 allocated once the rule is gone", lambda: (
            c if allocated(c := resource_api(api).read_namespaced_resource_claim("wants-gpu-0", SEAT)) else None),
            timeout=90)
        yield seen


def test_a_claim_whose_every_match_is_tainted_is_told_so_by_every_tool(tainted, record):
    seen = tainted["seen"]
    obj = f"ResourceClaim {SEAT}/wants-gpu-0"
    record.add("Device taints (DeviceTaintRule), not tolerated", seen, obj, SEAT,
               outcome=f"while the rule stands: allocated {allocated(tainted['while']) or 'nothing'}; rule deleted: "
                       f"allocated {allocated(tainted['after'])}")
    health = seen.problem(obj)
    assert (health["verdict"], health["explain_reason"]) == ("blocked", "all_matching_tainted"), health
    assert f"(DeviceTaintRule {RULE})" in health["explain_sentence"], health["explain_sentence"]
    assert health["explain_sentence"].endswith(
        "Ask the instructor when the taint is lifted, or whether the request may tolerate it."), health["explain_sentence"]
    board = seen.board_problem(obj)
    assert board["verdict"] == "blocked" and health["explain_sentence"] in board["text"], board["text"]
    answer = seen.why[SEAT]
    told = answer.json()
    assert (told["verdict"], told["sentence"], answer.rc) == ("blocked", health["explain_sentence"], 3), answer.describe()
    assert told["scheduler_said"] == health["scheduler_said"] and health["scheduler_said"].startswith("0/3 nodes")
    assert not allocated(tainted["while"]) and [d for _pool, d in allocated(tainted["after"])] == ["gpu-0"]
