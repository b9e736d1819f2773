"""What the room is told about a pod without its GPU, on the real 1.35 control plane, by dra_health, the board's
state (dra_health's snapshot) and can-has-gpu run as the seat (the wheel's CLI, only the seat's own kubeconfig):

- the lab full (24 seats hold the 24 GPUs through `can-has-gpu reserve`, the lease reaper publishes the occupancy);
- user70's claim asks for >= 100Gi on 80Gi cards: it never fits as asked; every tool says so in the same sentence
  with the change to make, never "wait" nor "delete finished workloads", and the scheduler's own message
  ("0/3 nodes are available: 3 cannot allocate all claims ...") is kept apart as evidence;
- user71's plain claim waits: every tool names the seat claims holding the GPUs and the first lease end, in the
  same sentence; once that named holder releases, the claim gets its GPU;
- user69's pods wait for a claim with a typo, a template that does not exist and a claim of user71: dra_health and
  the board report each (pod_claim_missing), can-has-gpu tells the seat (without naming user71);
- `can-has-gpu reserve --memory 100Gi` fails at once with exit 5 and makes nothing;
- after every GPU is freed, user70's claim is still pending and still "never fits" everywhere.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from ansible_collections.dralab.workshop.plugins.module_utils.board import page as board_page
from can_has_gpu_runner import Reaper, seat_tool
from diagnosis_seen import SETTINGS, ageless, record_fixture
from diagnosis_seen import Seen as SeenBy
from k8s_helpers import (allocated, api_from_kubeconfig, claim_body, clear_namespaces, pod_body, resource_api,
                         wait_for, wait_pod_unschedulable)
from playbook import problems_of, seat_names

HOLDERS = seat_names(64)[40:64]  # user41..user64: one GPU each, the lab's 24
NEVER, WAITS, TYPOS, OTHER = "user70", "user71", "user69", "user72"
SEATS = HOLDERS + [NEVER, WAITS, TYPOS, OTHER]
GPUS = 24
MEMORY = "device.capacity['gpu.example.com'].memory.compareTo(quantity('100Gi')) >= 0"
NEVER_SENTENCE = ("no GPU has memory >= 100Gi (the largest has 80Gi). Change the request: ask for no more than the "
                  "devices offer.")

record = record_fixture("core")


@pytest.fixture(scope="module")
def tool(control_plane, workshop, tmp_path_factory):
    with seat_tool(control_plane.api_client, workshop, tmp_path_factory.mktemp("diagnosis"), SEATS, SETTINGS,
                   "diagnosis-transcript.txt") as made:
        yield made


@pytest.fixture(scope="module")
def reaper(tool, workshop):
    proc = Reaper(tool, workshop.artifacts / "dralab-lease-reaper.kubeconfig", "--interval", "1s")
    yield proc
    assert proc.stop() == 0, proc.text()


def occupancy_of(api, seat) -> list[dict]:
    cm = client.CoreV1Api(api).read_namespaced_config_map("dralab-gpu-occupancy", seat)
    return json.loads(cm.data["claims.json"])["claims"]


class Seen(SeenBy):
    """What each tool said at one moment (diagnosis_seen.Seen: can-has-gpu why -o json per seat) and can-has-gpu
    why's text as the seats read it."""

    def __init__(self, workshop, tool, name):
        super().__init__(workshop, tool, f"core-{name}", (NEVER, WAITS, TYPOS))
        self.text = {seat: tool.show(tool.run(seat, "why")) for seat in self.why}

    def pending(self, namespace):
        [row] = [p for p in self.board["pending"] if p["namespace"] == namespace]
        return dict(row, text=board_page.words(row["sentence"], self.board["generated"]))


@pytest.fixture(scope="module")
def situations(control_plane, workshop, tool, reaper):
    """The full lab, the three situations, what every tool says; then the named holder releases."""
    admin = control_plane.api_client
    wait_for("the occupancy in user71 to list no claim", lambda: occupancy_of(admin, WAITS) == [], timeout=60)
    with ThreadPoolExecutor(max_workers=12) as pool:
        held = list(pool.map(lambda s: tool.run(s, "reserve", "-o", "json"), HOLDERS))
    assert all(r.rc == 0 for r in held), [r.describe() for r in held if r.rc]
    devices = {f"{r.seat}/{r.json()['claim']}": (r.json()["devices"][0]["node"], r.json()["devices"][0]["device"])
               for r in held}
    wait_for("the occupancy to list the 24 holders", lambda: len(occupancy_of(admin, WAITS)) == GPUS, timeout=60)

    for seat, make in ((NEVER, lambda api: (claim_body("big", selectors=[MEMORY]), pod_body("big", claim="big"))),
                       (WAITS, lambda api: (claim_body("small"), pod_body("small", claim="small")))):
        api = api_from_kubeconfig(workshop.seat_kubeconfig(seat))
        try:
            claim, pod = make(api)
            resource_api(api).create_namespaced_resource_claim(seat, claim)
            client.CoreV1Api(api).create_namespaced_pod(seat, pod)
        finally:
            api.close()
    typos = api_from_kubeconfig(workshop.seat_kubeconfig(TYPOS))
    try:
        for pod in (pod_body("typo", claim="gpu-claimm"), pod_body("tmpl", template="no-such-template"),
                    pod_body("borrow", claim="small")):
            client.CoreV1Api(typos).create_namespaced_pod(TYPOS, pod)
    finally:
        typos.close()
    for seat, name in ((NEVER, "big"), (WAITS, "small")):
        wait_pod_unschedulable(admin, seat, name)

    seen = {"devices": devices, "full": Seen(workshop, tool, "full")}
    seen["reserve_never"] = tool.show(tool.run(OTHER, "reserve", "--memory", "100Gi"))
    seen["claims_after_reserve"] = resource_api(admin).list_namespaced_resource_claim(OTHER).items

    # The holder the waiting claim was told about releases; the claim gets its GPU.
    first = seen["full"].why[WAITS].json()["first_lease_claim"]
    seen["first"] = first
    seen["release_first"] = tool.show(tool.run(first.split("/")[0], "release", "--all"))
    seen["small"] = wait_for(f"{WAITS}/small to get the GPU {first} held", lambda: (
        c if allocated(c := resource_api(admin).read_namespaced_resource_claim("small", WAITS)) else None),
        timeout=120)

    # Every other GPU freed: the claim that never fits stays pending.
    clear_namespaces(admin, HOLDERS)
    wait_for("the occupancy to list user71's claim only", lambda: len(occupancy_of(admin, NEVER)) == 1, timeout=60)
    time.sleep(5)  # the scheduler retries the pending pod on the freed claims
    seen["freed"] = Seen(workshop, tool, "freed")
    seen["big"] = resource_api(admin).read_namespaced_resource_claim("big", NEVER)
    # What the scheduler did with the pods whose claim or template does not exist, every GPU free.
    seen["missing_pods"] = {name: client.CoreV1Api(admin).read_namespaced_pod(name, TYPOS)
                            for name in ("typo", "tmpl", "borrow")}
    yield seen
    clear_namespaces(admin, SEATS)


def test_a_claim_that_never_fits_is_told_so_by_every_tool(situations, record):
    for moment, situation, outcome in (
            ("full", "A claim no GPU can satisfy (memory >= 100Gi on 80Gi cards), the lab full", None),
            ("freed", "The same claim after every GPU is freed",
             "allocated: " + str(allocated(situations["big"]) or "nothing"))):
        seen = situations[moment]
        record.add(situation, seen, f"ResourceClaim {NEVER}/big", NEVER, outcome=outcome)
        health = seen.problem(f"ResourceClaim {NEVER}/big")
        row = seen.pending(NEVER)
        text, as_json = seen.text[NEVER], seen.why[NEVER]
        answer = as_json.json()
        assert health["verdict"] == row["verdict"] == answer["verdict"] == "never_fits", moment
        assert health["explain_sentence"] == row["text"] == answer["sentence"] == NEVER_SENTENCE, moment
        assert health["reason"] == (f"claim {NEVER}/big is pending (pod {NEVER}/big cannot be scheduled) and never "
                                    f"fits as asked: {NEVER_SENTENCE}")
        # The scheduler's message is evidence apart, the same in each, and never glued into the sentence.
        said = health["scheduler_said"]
        assert "cannot allocate all claims" in said and said == row["scheduler_said"] == answer["scheduler_said"]
        assert said not in health["reason"] and "freed" not in health["reason"] and "delete" not in health["reason"]
        assert (text.rc, as_json.rc) == (5, 5), text.describe()
        assert text.stdout == f"big never fits as asked: {NEVER_SENTENCE}\nscheduler said: {said}\n", text.describe()
    assert not allocated(situations["big"]), "no GPU has 100Gi, however many are free"


def test_reserve_refuses_a_request_that_never_fits_at_once(situations):
    result = situations["reserve_never"]
    assert result.rc == 5, result.describe()
    assert result.stdout.startswith("This request never fits the lab as asked: " + NEVER_SENTENCE), result.describe()
    assert "With can-has-gpu: reserve --memory 80Gi or less (or without --memory)." in result.stdout
    assert "try again later" not in result.stdout and not situations["claims_after_reserve"]


def test_a_claim_that_waits_names_its_holders_the_same_everywhere_and_gets_the_gpu_they_release(situations, record):
    seen = situations["full"]
    record.add("Every matching GPU in use by the seats (24 reserved through can-has-gpu)", seen,
               f"ResourceClaim {WAITS}/small", WAITS,
               outcome=f"{situations['first']} released: allocated {allocated(situations['small'])}")
    health = seen.problem(f"ResourceClaim {WAITS}/small")
    row = seen.pending(WAITS)
    text, as_json = seen.text[WAITS], seen.why[WAITS]
    answer = as_json.json()
    assert health["verdict"] == row["verdict"] == answer["verdict"] == "waits"
    assert health["explain_sentence"] == row["text"], "the report and the board are one judgement"
    assert ageless(answer["sentence"]) == ageless(health["explain_sentence"])
    sentence = health["explain_sentence"]
    assert sentence.startswith("24 GPUs match; all are in use: gpu-0 on node-1 by user"), sentence
    assert " (lease until 20" in sentence and ", and 21 more." in sentence, sentence
    first = situations["first"]
    assert first in situations["devices"] and answer["first_lease_claim"] == first
    assert sentence.endswith(f"Wait until one of them is released: the first of their leases ends at "
                             f"{answer['first_lease_end']} ({first}).")
    assert health["scheduler_said"] == answer["scheduler_said"]
    assert "cannot allocate all claims" in health["scheduler_said"]
    assert health["scheduler_said"] not in health["reason"]
    assert (text.rc, as_json.rc) == (3, 3)
    assert text.stdout.startswith("small waits for a device in use: 24 GPUs match;"), text.describe()
    # The named holder released: the waiting claim has the GPU it held.
    assert situations["release_first"].rc == 0, situations["release_first"].describe()
    assert allocated(situations["small"]) == [situations["devices"][first]]


def test_pods_that_wait_for_a_missing_claim_are_reported(situations, record):
    seen = situations["full"]
    for name, situation in (("typo", "A pod whose resourceClaimName has a typo"),
                            ("tmpl", "A pod whose resourceClaimTemplateName does not exist"),
                            ("borrow", "A pod naming a claim of another namespace")):
        bound = situations["missing_pods"][name].spec.node_name
        record.add(situation, seen, f"Pod {TYPOS}/{name}", TYPOS, pod=name,
                   outcome=f"every GPU freed: pod bound to {bound or 'no node'}")
        assert not bound, f"{TYPOS}/{name} was scheduled to {bound} without its claim"
    found = {p["name"]: p for p in problems_of(seen.report, "pod_claim_missing") if p["namespace"] == TYPOS}
    assert sorted(found) == ["borrow", "tmpl", "typo"]
    assert (found["typo"]["missing_kind"], found["typo"]["missing"]) == ("ResourceClaim", "gpu-claimm")
    assert (found["tmpl"]["missing_kind"], found["tmpl"]["missing"]) == ("ResourceClaimTemplate", "no-such-template")
    assert found["borrow"]["elsewhere"] == [WAITS]
    assert (f"namespace {WAITS} has one, but a pod can only use a ResourceClaim of its own namespace"
            in found["borrow"]["reason"])
    for name, problem in found.items():
        assert problem["severity"] == "warning" and problem["verdict"] == "claim_missing"
        assert seen.board_problem(f"Pod {TYPOS}/{name}")["text"] == problem["reason"]
    text, as_json = seen.text[TYPOS], seen.why[TYPOS]
    assert (text.rc, as_json.rc) == (5, 5), text.describe()
    told = {f["pod"]: f["sentence"] for f in as_json.json()["pods_waiting"]}
    # The seat is told of its own pods in the report's words, but never of another seat's namespace.
    assert told["typo"] == found["typo"]["reason"] and told["tmpl"] == found["tmpl"]["reason"]
    assert WAITS not in told["borrow"] and "does not exist in namespace user69" in told["borrow"]
    assert text.stdout.splitlines()[0] == "P" + told["borrow"][1:]
