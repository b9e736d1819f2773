"""GPUs held outside the seats, as a seat sees them with only a seat's rights, on the real 1.35 control plane.

Workloads in a namespace of no seat (an instructor's demos) hold all 24 GPUs; dralab-lease-reaper (its own
ServiceAccount) publishes the occupancy; can-has-gpu runs as seats (the wheel's CLI, only the seat's kubeconfig):

- `status` counts no free GPU and says how many are in use outside the seats;
- `why` of a seat's waiting claim says it waits for devices in use outside the seats (never "can be allocated
  now"), and so does `reserve`, at once (exit 3, not after its whole wait) and with nothing left held;
- neither the occupancy a seat reads nor any answer names the namespace, its claims or its pods;
- an occupancy written by an older reaper (the seats' claims only, no scope) still reads: `status` says that the
  GPUs in use outside the seats are not counted.
"""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import DEFAULT_DRIVER
from can_has_gpu_runner import Reaper, Tool
from diagnosis_seen import Seen, ageless, record_fixture
from k8s_helpers import (allocated, api_from_kubeconfig, claim_body, clear_namespaces, delete_namespace,
                         pod_body, resource_api, wait_default_service_account, wait_for, wait_pod_unschedulable)

OUTSIDE = "instructor-demos"  # a namespace of no seat
SECRET_NAMES = ("instructor-demos", "demo-train", "demo-node")  # what the seats must never read
WAITS, RESERVES = "user30", "user31"
SEATS = [WAITS, RESERVES]
GPUS, PER_NODE = 24, 8
SETTINGS = {"lease_default": "2h", "lease_max": "8h", "wait": "120s", "holder_image": "busybox:1.37",
            "default_class": lab_settings.default("dralab_device_classes")[0]["name"], "driver": DEFAULT_DRIVER}
OCCUPANCY = "dralab-gpu-occupancy"

record = record_fixture("outside")


def occupancy_of(api, seat) -> dict:
    cm = client.CoreV1Api(api).read_namespaced_config_map(OCCUPANCY, seat)
    return json.loads(cm.data["claims.json"])


def devices_held(payload: dict) -> int:
    return sum(len(((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or [])
               for c in payload["claims"])


def whole_node_claim(name: str) -> dict:
    """One claim for all 8 GPUs of a node (the instructor's rights: no seat policy applies here)."""
    body = claim_body(name)
    body["spec"]["devices"]["requests"][0]["exactly"].update(allocationMode="ExactCount", count=PER_NODE)
    return body


@pytest.fixture(scope="module")
def tool(control_plane, workshop, tmp_path_factory):
    clear_namespaces(control_plane.api_client, SEATS)
    tool = Tool(tmp_path_factory.mktemp("outside"), workshop, SETTINGS)
    yield tool
    clear_namespaces(control_plane.api_client, SEATS)


def counted(admin, seat, timeout=30) -> None:
    """Until the seat's occupancy is written and counts every GPU, or timeout (then the tests say what is missing)."""
    wait_for(f"the occupancy in {seat}", lambda: occupancy_of(admin, seat), timeout=60)
    deadline = time.monotonic() + timeout
    while devices_held(occupancy_of(admin, seat)) != GPUS and time.monotonic() < deadline:
        time.sleep(0.5)


def told(tool, workshop, admin, res) -> dict:
    """What the seats read and are told with every GPU held outside the seats (the reaper running)."""
    for number in range(GPUS // PER_NODE):
        res.create_namespaced_resource_claim(OUTSIDE, whole_node_claim(f"demo-train-{number}"))
        client.CoreV1Api(admin).create_namespaced_pod(OUTSIDE, pod_body(f"demo-node-{number}",
                                                                        claim=f"demo-train-{number}"))
    wait_for(f"{OUTSIDE}'s claims to hold all {GPUS} GPUs", lambda: sum(
        len(allocated(c)) for c in res.list_namespaced_resource_claim(OUTSIDE).items) == GPUS, timeout=120)
    counted(admin, WAITS)
    seen = {"occupancy": {seat: client.CoreV1Api(admin).read_namespaced_config_map(OCCUPANCY, seat).data
                          for seat in SEATS}}
    seen["status"] = tool.run(WAITS, "status")
    seen["status_json"] = tool.run(WAITS, "status", "-o", "json")
    api = api_from_kubeconfig(workshop.seat_kubeconfig(WAITS))
    try:
        resource_api(api).create_namespaced_resource_claim(WAITS, claim_body("small"))
        client.CoreV1Api(api).create_namespaced_pod(WAITS, pod_body("small", claim="small"))
    finally:
        api.close()
    wait_pod_unschedulable(admin, WAITS, "small")
    seen["tools"] = Seen(workshop, tool, "outside", [WAITS])
    seen["why"] = tool.run(WAITS, "why", "small")
    seen["why_json"] = tool.run(WAITS, "why", "small", "-o", "json")
    started = time.monotonic()
    seen["reserve"] = tool.run(RESERVES, "reserve", "--no-wait", "--wait", "90s", "-o", "json")
    seen["reserve_seconds"] = time.monotonic() - started
    seen["reserve_left"] = res.list_namespaced_resource_claim(RESERVES).items
    return seen


@pytest.fixture(scope="module")
def seen(control_plane, workshop, tool):
    """The lab full from outside the seats; what the seats are told; then an older reaper's occupancy."""
    admin = control_plane.api_client
    try:
        client.CoreV1Api(admin).create_namespace({"metadata": {"name": OUTSIDE}})
        wait_default_service_account(admin, OUTSIDE)
        reaper = Reaper(tool, workshop.artifacts / "dralab-lease-reaper.kubeconfig", "--interval", "1s")
        try:
            seen = told(tool, workshop, admin, resource_api(admin))
        finally:
            assert reaper.stop() == 0, reaper.text()
        # An older reaper wrote the seats' claims only, without a scope: can-has-gpu still reads it and says so.
        old = occupancy_of(admin, WAITS)
        old = {"format": old["format"], "claims": [c for c in old["claims"]
                                                   if "dralab.workshop/seat" in c["metadata"].get("labels", {})]}
        client.CoreV1Api(admin).patch_namespaced_config_map(OCCUPANCY, WAITS, {"data": {"claims.json": json.dumps(old)}})
        seen["old_status"] = tool.run(WAITS, "status")
        seen["old_why"] = tool.run(WAITS, "why", "small")
        yield seen
    finally:
        clear_namespaces(admin, [*SEATS, OUTSIDE])
        delete_namespace(admin, OUTSIDE)


def no_secret_in(text: str) -> None:
    named = [name for name in SECRET_NAMES if name in text]
    assert not named, f"a seat reads {named}: {text}"


def test_the_occupancy_counts_every_gpu_and_names_no_holder_outside_the_seats(seen):
    for seat, data in seen["occupancy"].items():
        payload = json.loads(data["claims.json"])
        assert payload["scope"] == "cluster" and devices_held(payload) == GPUS, seat
        assert all(c["metadata"]["namespace"] == "(outside the seats)" for c in payload["claims"]), payload
        no_secret_in(data["claims.json"])


def test_status_as_a_seat_counts_no_free_gpu(seen):
    text, as_json = seen["status"], seen["status_json"]
    assert (text.rc, as_json.rc) == (0, 0), text.describe()
    assert f"Free GPUs in the lab: 0 of {GPUS}; {GPUS} in use outside the seats." in text.stdout, text.describe()
    free = as_json.json()["free"]
    assert (free["free"], free["published"], free["outside"], free["by_node"]) == (0, GPUS, GPUS, {})
    no_secret_in(text.stdout + as_json.stdout)


def test_why_as_a_seat_says_the_claim_waits_for_gpus_in_use_outside_the_seats(seen):
    text, as_json = seen["why"], seen["why_json"]
    answer = as_json.json()
    assert (text.rc, as_json.rc) == (3, 3), text.describe()
    assert answer["verdict"] == "waits" and answer["allocatable"] is False, answer
    assert "can be allocated now" not in text.stdout, text.describe()
    assert text.stdout.startswith(f"small waits for a device in use: {GPUS} GPUs match; all are in use: gpu-0 on "
                                  "node-1 in use outside the seats for "), text.describe()
    assert "Wait until one of them is released (no lease ends theirs by itself)." in answer["sentence"]
    no_secret_in(text.stdout + as_json.stdout)


def test_the_instructor_and_the_seat_are_told_the_same_verdict(seen, record):
    """dra_health, the board and can-has-gpu as the seat say the same sentence: the GPUs are in use outside the
    seats (no namespace named, in the instructor's report either) and the claim waits."""
    row = record.add("Every GPU in use outside the seats (an instructor's namespace holds all 24)", seen["tools"],
                     f"ResourceClaim {WAITS}/small", WAITS, outcome="still pending while they hold them")
    assert row["verdict"] == row["can_has_gpu"]["verdict"] == "waits", row
    assert row["board"].endswith(": " + row["dra_health"]), row  # the board: the claim, then the same sentence
    assert ageless(row["dra_health"]) == ageless(row["can_has_gpu"]["sentence"]), row
    assert "in use outside the seats" in row["dra_health"], row
    assert row["can_has_gpu"]["exit"] == 3, row
    no_secret_in(row["can_has_gpu"]["sentence"])


def test_reserve_as_a_seat_says_so_at_once_and_holds_nothing(seen):
    result = seen["reserve"]
    assert result.rc == 3, result.describe()
    answer = result.json()
    assert answer["verdict"] == "waits" and not answer["allocated"], answer
    assert "in use outside the seats" in answer["sentence"] and "can be allocated now" not in answer["sentence"]
    assert seen["reserve_seconds"] < 60, f"reserve waited {seen['reserve_seconds']:.0f}s for a GPU it was told of"
    assert not seen["reserve_left"], "reserve left a claim behind"
    no_secret_in(result.stdout + result.stderr)


def test_an_older_reapers_occupancy_still_reads_and_says_what_it_misses(seen):
    status, why = seen["old_status"], seen["old_why"]
    assert status.rc == 0, status.describe()
    assert (f"Free GPUs in the lab: {GPUS} of {GPUS} (node-1 8, node-2 8, node-3 8). The lab's occupancy board "
            "counts the seats' GPUs only, not those in use outside the seats: tell the instructor that "
            "dralab-lease-reaper is older than can-has-gpu.") in status.stdout, status.describe()
    assert why.rc in (0, 3) and "dralab-lease-reaper is older than can-has-gpu" in why.stdout, why.describe()
