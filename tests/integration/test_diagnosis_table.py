"""The rest of the diagnosis table (docs/diagnosis.md) on the real 1.35 control plane: each situation built for real,
read back through dra_health, the board's state (dra_health's snapshot) and can-has-gpu run as the seat (its own
kubeconfig), compared with each other and with what the scheduler does.

Seats (one claim each: a seat may hold one GPU):
- user61: a claim of a DeviceClass that does not exist (never_fits, no_such_class);
- user62: a pod whose required node affinity matches no node (never_fits, "Change the pod");
- user63: a claim shared by two pods, the second one with a node affinity away from the node the first one got it
  on (pod_claim_unreachable, claim_elsewhere);
- user64: a pod with a scheduling gate (gated: the scheduler does not try it); once the gate is removed, the
  scheduler allocates the claim;
- user65: a pod whose claim from a template the API refuses to make, the seat holding its one claim already
  (pod_claim_refused, with the resource claim controller's FailedResourceClaimCreation words);
- user53: a pod whose claim fits now but which requires the company of a pod that does not run anywhere
  (inter-pod affinity: pod_unschedulable, in the scheduler's words); once such a pod runs, the scheduler
  allocates the claim.
The instructor's namespace (claims of several devices, which a seat may not make; can-has-gpu never sees them):
- nine: 9 GPUs in one claim on nodes of 8 (never_fits, too_few_per_node);
- pair: two GPUs with the same uuid (matchAttribute; never_fits, constraint_unsatisfiable).
"""

from __future__ import annotations

import re
import time

import pytest
from kubernetes import client

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import DEFAULT_DRIVER
from can_has_gpu_runner import Reaper, Tool
from diagnosis_seen import Seen, create_as, record_fixture
from k8s_helpers import (DRIVER, allocated, claim_body, clear_namespaces, pod_body, resource_api, template_body,
                         wait_for, wait_pod_unschedulable)

NOCLASS, AFFINITY, SHARED, GATED, REFUSED, LONELY = "user61", "user62", "user63", "user64", "user65", "user53"
SEATS = [NOCLASS, AFFINITY, SHARED, GATED, REFUSED, LONELY]
COMPANY = {"app": "dralab-company"}  # the label of the pod user53's pod must run beside
INSTRUCTOR = "dralab-diagnosis-table"
SETTINGS = {"lease_default": "2h", "lease_max": "8h", "wait": "120s", "holder_image": "busybox:1.37",
            "default_class": lab_settings.default("dralab_device_classes")[0]["name"], "driver": DEFAULT_DRIVER}
GATE = "example.com/queue"


def affinity(operator: str, values: list[str], key: str = "metadata.name", fields: bool = True) -> dict:
    term = {("matchFields" if fields else "matchExpressions"): [{"key": key, "operator": operator, "values": values}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def with_spec(pod: dict, **spec) -> dict:
    pod["spec"].update(spec)
    return pod


record = record_fixture("table")


@pytest.fixture(scope="module")
def table(control_plane, workshop, tmp_path_factory):
    admin = control_plane.api_client
    core = client.CoreV1Api(admin)
    clear_namespaces(admin, SEATS)
    tool = Tool(tmp_path_factory.mktemp("diagnosis-table"), workshop, SETTINGS)
    reaper = Reaper(tool, workshop.artifacts / "dralab-lease-reaper.kubeconfig", "--interval", "1s")
    try:
        yield from built(control_plane, workshop, tool)
    finally:
        assert reaper.stop() == 0, reaper.text()


def built(control_plane, workshop, tool):
    """The situations, what every tool says about them, what the scheduler does."""
    admin = control_plane.api_client
    core = client.CoreV1Api(admin)
    core.create_namespace({"metadata": {"name": INSTRUCTOR}})
    try:
        wait_for("the default service account", lambda: core.read_namespaced_service_account("default", INSTRUCTOR))
        nine = claim_body("nine")
        nine["spec"]["devices"]["requests"][0]["exactly"]["count"] = 9
        pair = claim_body("pair")
        pair["spec"]["devices"]["requests"] = [{"name": "a", "exactly": {"deviceClassName": DRIVER}},
                                               {"name": "b", "exactly": {"deviceClassName": DRIVER}}]
        pair["spec"]["devices"]["constraints"] = [{"matchAttribute": f"{DRIVER}/uuid"}]
        for claim in (nine, pair):
            resource_api(admin).create_namespaced_resource_claim(INSTRUCTOR, claim)
            core.create_namespaced_pod(INSTRUCTOR, pod_body(claim["metadata"]["name"], claim=claim["metadata"]["name"]))

        create_as(workshop, NOCLASS, [claim_body("noclass", device_class="gpu.exmaple.com")],
                  pods=[pod_body("noclass", claim="noclass")])
        create_as(workshop, AFFINITY, [claim_body("nowhere")],
                  pods=[with_spec(pod_body("nowhere", claim="nowhere"),
                                  affinity=affinity("In", ["no-such-zone"], "dralab.test/zone", fields=False))])
        create_as(workshop, SHARED, [claim_body("shared")], pods=[pod_body("first", claim="shared")])
        first = wait_for("user63/first on a node", lambda: core.read_namespaced_pod("first", SHARED).spec.node_name)
        create_as(workshop, SHARED, pods=[with_spec(pod_body("second", claim="shared"),
                                                    affinity=affinity("NotIn", [first]))])
        create_as(workshop, GATED, [claim_body("gated")],
                  pods=[with_spec(pod_body("gated", claim="gated"), schedulingGates=[{"name": GATE}])])
        create_as(workshop, REFUSED, [claim_body("held")], templates=[template_body("two")],
                  pods=[pod_body("two", template="two")])
        create_as(workshop, LONELY, [claim_body("lonely")], pods=[with_spec(pod_body("lonely", claim="lonely"), affinity={
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": COMPANY}, "topologyKey": "kubernetes.io/hostname"}]}})])

        for ns, pod in ((INSTRUCTOR, "nine"), (INSTRUCTOR, "pair"), (NOCLASS, "noclass"), (AFFINITY, "nowhere"),
                        (SHARED, "second"), (LONELY, "lonely")):
            wait_pod_unschedulable(admin, ns, pod)
        wait_for("the refusal of user65's claim", lambda: [
            e for e in core.list_namespaced_event(REFUSED).items if e.reason == "FailedResourceClaimCreation"])
        time.sleep(11)  # pod_claims.CLAIM_MAKING_SECONDS
        wait_for("the lease reaper's occupancy board in every seat", lambda: all(
            core.read_namespaced_config_map("dralab-gpu-occupancy", seat) for seat in SEATS), timeout=60)
        seen = {"first_node": first, "seen": Seen(workshop, tool, "built", SEATS),
                "gated_pod": core.read_namespaced_pod("gated", GATED)}
        # What the scheduler does: the gated claim is allocated once the gate is gone; the others stay pending.
        core.patch_namespaced_pod("gated", GATED, {"spec": {"schedulingGates": None}})
        seen["gated"] = wait_for("user64/gated allocated once ungated", lambda: (
            c if allocated(c := resource_api(admin).read_namespaced_resource_claim("gated", GATED)) else None),
            timeout=60)
        seen["still"] = {(ns, name): resource_api(admin).read_namespaced_resource_claim(name, ns)
                         for ns, name in ((INSTRUCTOR, "nine"), (INSTRUCTOR, "pair"), (NOCLASS, "noclass"),
                                          (AFFINITY, "nowhere"))}
        seen["second"] = core.read_namespaced_pod("second", SHARED)
        seen["refused_claims"] = resource_api(admin).list_namespaced_resource_claim(REFUSED).items
        # The company user53's pod asks for: a pod of the seat with that label, and no claim.
        company = pod_body("company")
        company["spec"].pop("resourceClaims")
        company["spec"]["containers"][0].pop("resources")
        company["metadata"]["labels"] = COMPANY
        create_as(workshop, LONELY, pods=[company])
        seen["lonely"] = wait_for("user53/lonely allocated once its company runs", lambda: (
            c if allocated(c := resource_api(admin).read_namespaced_resource_claim("lonely", LONELY)) else None),
            timeout=90)
        yield seen
    finally:
        clear_namespaces(admin, SEATS + [INSTRUCTOR])
        core.delete_namespace(INSTRUCTOR)
        wait_for(f"namespace {INSTRUCTOR} gone", lambda: INSTRUCTOR not in [
            n.metadata.name for n in core.list_namespace().items], timeout=120)


def outcome(claim) -> str:
    """What the scheduler did with a claim, read back: the devices it allocated, or still pending."""
    got = allocated(claim)
    return "allocated " + ", ".join(device for _pool, device in got) if got else "still pending"


def same_name(sentence: str) -> str:
    return re.sub(r'"two-gpu-[a-z0-9]+"', '"two-gpu-NAME"', sentence)


def claim_told(seen, ns, name):
    """The claim_pending problem of dra_health and the board's row of it; their verdict and sentence agree."""
    health = seen.problem(f"ResourceClaim {ns}/{name}")
    board = seen.board_problem(f"ResourceClaim {ns}/{name}")
    assert board["verdict"] == health["verdict"] and health["explain_sentence"] in board["text"], (board, health)
    return health


@pytest.mark.parametrize("ns, name, verdict, reason, words", [
    (INSTRUCTOR, "nine", "never_fits", "too_few_per_node",
     "the claim asks for 9 GPUs on one node, but at most 8 matching GPUs are on any node (24 match in the lab). "
     "Change the request: ask for at most 8 GPUs in one claim (the most one node has)."),
    (INSTRUCTOR, "pair", "never_fits", "constraint_unsatisfiable",
     "each request could be served alone, but the requests must get devices with the same gpu.example.com/uuid "
     "(matchAttribute) on one node, and no node has such devices even when all are free. Change the request: drop the "
     "matchAttribute constraint, or the selectors that keep the devices apart."),
])
def test_instructor_claims_that_never_fit(table, record, ns, name, verdict, reason, words):
    record.add(f"Instructor's claim {name} ({reason})", table["seen"], f"ResourceClaim {ns}/{name}",
               outcome=outcome(table["still"][(ns, name)]))
    health = claim_told(table["seen"], ns, name)
    assert (health["verdict"], health["explain_reason"], health["explain_sentence"]) == (verdict, reason, words)
    assert health["scheduler_said"].startswith("0/3 nodes are available")
    assert not allocated(table["still"][(ns, name)]), "the scheduler does not allocate it either"


@pytest.mark.parametrize("seat, name, reason, start", [
    (NOCLASS, "noclass", "no_such_class", "request gpu asks for DeviceClass gpu.exmaple.com, which does not exist"),
    (AFFINITY, "nowhere", "nodes_not_ready", "the 24 matching GPUs are on nodes the pod cannot use: node-1 is not "
                                             "selected by the pod's node affinity"),
])
def test_seat_claims_that_never_fit_are_told_alike_by_every_tool(table, record, seat, name, reason, start):
    seen = table["seen"]
    record.add(f"Seat claim that never fits ({reason})", seen, f"ResourceClaim {seat}/{name}", seat,
               outcome=outcome(table["still"][(seat, name)]))
    health = claim_told(seen, seat, name)
    answer = seen.why[seat]
    assert answer.rc == 5, answer.describe()
    told = answer.json()
    assert health["verdict"] == told["verdict"] == "never_fits" and health["explain_reason"] == reason
    assert health["explain_sentence"] == told["sentence"] and told["sentence"].startswith(start), told["sentence"]
    assert health["scheduler_said"] == told["scheduler_said"] and told["scheduler_said"].startswith("0/3 nodes are available")
    assert not allocated(table["still"][(seat, name)])
    if reason == "nodes_not_ready":
        assert told["sentence"].endswith("Change the pod: its nodeName, nodeSelector or node affinity keeps it off "
                                         "the nodes that have these devices.")


def test_a_pod_that_cannot_go_where_its_shared_claim_is(table, record):
    seen, node = table["seen"], table["first_node"]
    record.add("A shared claim's devices on a node the pod cannot go to", seen, f"Pod {SHARED}/second", SHARED,
               pod="second", outcome=f"pod bound to {table['second'].spec.node_name or 'no node'}")
    health = seen.problem(f"Pod {SHARED}/second")
    assert health["type"] == "pod_claim_unreachable" and health["verdict"] == "claim_elsewhere"
    assert health["reason"] == (
        f"pod {SHARED}/second uses claim shared, whose devices are on {node} (it got them for pod {SHARED}/first, "
        f"which shares it), and the pod cannot go there: {node} is not selected by the pod's node affinity. Change "
        f"the pod: let it run on {node} (its nodeName, nodeSelector or node affinity), or give it a claim of its own "
        f"(a resourceClaimTemplateName) if it needs devices of its own.")
    assert seen.board_problem(f"Pod {SHARED}/second")["text"] == health["reason"]
    answer = seen.why[SHARED]
    told = {f["pod"]: f for f in answer.json()["pods_waiting"]}
    # The seat's claim has its GPU (for pod first), but pod second waits for good: why exits 5 (change the pod).
    assert told["second"]["sentence"] == health["reason"] and answer.rc == 5, answer.describe()
    # The scheduler agrees: the pod stays unscheduled.
    assert not table["second"].spec.node_name


def test_a_gated_pod_waits_for_its_gate_then_the_scheduler_allocates(table, record):
    seen = table["seen"]
    record.add("A pod held back by a scheduling gate", seen, f"ResourceClaim {GATED}/gated", GATED,
               outcome="gate removed: " + outcome(table["gated"]))
    health = claim_told(seen, GATED, "gated")
    told = seen.why[GATED]
    assert health["verdict"] == told.json()["verdict"] == "gated", told.describe()
    assert health["explain_sentence"] == told.json()["sentence"]
    assert health["explain_sentence"].endswith(
        f"The scheduler does not try pod {GATED}/gated while it has the scheduling gate {GATE}: whoever added it (a "
        f"queue such as Kueue, an operator) removes it when the pod may start; ask the instructor if it stays.")
    # The scheduler's own words (PodScheduled False, SchedulingGated) stay evidence apart.
    assert health["scheduler_said"] == told.json()["scheduler_said"] == "Scheduling is blocked due to non-empty scheduling gates"
    assert told.rc == 3
    assert table["gated_pod"].spec.scheduling_gates and allocated(table["gated"])


def test_a_claim_the_admission_policy_refused_to_make(table, record):
    seen = table["seen"]
    record.add("A claim from a template the API refused to make", seen, f"Pod {REFUSED}/two", REFUSED, pod="two",
               outcome="claims of the seat: " + ", ".join(c.metadata.name for c in table["refused_claims"]))
    health = seen.problem(f"Pod {REFUSED}/two")
    assert health["type"] == "pod_claim_refused" and health["verdict"] == "refused"
    assert health["reason"].startswith(f"pod {REFUSED}/two waits for its claim from ResourceClaimTemplate two (entry "
                                       "gpu), which the API refused to make: PodResourceClaim gpu: create "
                                       "ResourceClaim"), health["reason"]
    assert "this seat already holds 1 of 1" in health["reason"] or "exceeded quota" in health["reason"], health["reason"]
    assert seen.board_problem(f"Pod {REFUSED}/two")["text"] == health["reason"]
    answer = seen.why[REFUSED]
    told = {f["pod"]: f for f in answer.json()["pods_waiting"]}
    # The controller tries again with a new generated name each time: the words of two reads differ only in it.
    assert told["two"]["verdict"] == "refused", answer.describe()
    assert same_name(told["two"]["sentence"]) == same_name(health["reason"]), answer.describe()
    assert answer.rc == 5, answer.describe()
    assert [c.metadata.name for c in table["refused_claims"]] == ["held"]


def test_a_claim_that_fits_whose_pod_fits_no_node_is_told_so_by_every_tool(table, record):
    seen = table["seen"]
    record.add("A claim that fits, whose pod's own affinity fits no node", seen, f"ResourceClaim {LONELY}/lonely", LONELY,
               outcome="its company running: " + outcome(table["lonely"]))
    health = claim_told(seen, LONELY, "lonely")
    told = seen.why[LONELY]
    assert (health["verdict"], health["explain_reason"]) == ("pod_unschedulable", "allocatable"), health
    assert health["explain_sentence"] == told.json()["sentence"] and told.json()["verdict"] == "pod_unschedulable"
    assert re.fullmatch(
        r"can be allocated now \(for example gpu-\d+ on node-\d\), but the scheduler finds no node for pod "
        rf"{LONELY}/lonely itself: 3 node\(s\) didn't match pod affinity rules\. Change the pod: ask for what a node "
        r"has room for \(its cpu, memory and ports\) and relax its affinity and spread rules; ask the instructor if "
        r"the nodes should have room\.", health["explain_sentence"]), health["explain_sentence"]
    assert health["scheduler_said"] == told.json()["scheduler_said"] and "didn't match pod affinity rules" in \
        health["scheduler_said"]
    assert told.rc == 5, told.describe()
    # The scheduler agrees: the claim is allocated once the company its pod asks for runs.
    assert allocated(table["lonely"])
