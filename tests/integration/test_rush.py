"""The workshop rush: all 72 seats, each with its own kubeconfig, create a ResourceClaim and a pod
at the same moment. 24 GPUs: exactly 24 claims are allocated (no GPU twice), 48 stay pending, and
dra_health's summary agrees with the API. playbooks/reset.yml then frees every GPU."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from k8s_helpers import (DRIVER, allocated, api_from_kubeconfig, claim_body, clear_namespaces, core_api, pod_body,
                         pod_scheduled_condition, resource_api, wait_for)
from playbook import SEATS, problems_of, seat_names

SEATS_ALL = seat_names(SEATS)
GPUS = 24
CLAIM, POD = "rush-gpu", "rush"


def seat_objects(api):
    """({seat: claim}, {seat: pod}) of the rush, as the admin sees them."""
    claims = {c.metadata.namespace: c for c in resource_api(api).list_resource_claim_for_all_namespaces().items
              if c.metadata.name == CLAIM}
    pods = {p.metadata.namespace: p for p in core_api(api).list_pod_for_all_namespaces().items
            if p.metadata.name == POD}
    return claims, pods


def settled(api):
    """Every GPU taken and the scheduler has turned down every other pod at least once."""
    claims, pods = seat_objects(api)
    if len(claims) != SEATS or len(pods) != SEATS:
        return None
    taken = [c for c in claims.values() if allocated(c)]
    turned_down = [p for p in pods.values()
                   if (cond := pod_scheduled_condition(p)) is not None and cond.status == "False"]
    return (claims, pods) if len(taken) == GPUS and len(turned_down) == SEATS - GPUS else None


@pytest.fixture(scope="module")
def rush(control_plane, workshop):
    api = control_plane.api_client
    clear_namespaces(api, SEATS_ALL)
    start = threading.Barrier(SEATS)

    def one_seat(seat):
        seat_api = api_from_kubeconfig(workshop.seat_kubeconfig(seat))
        try:
            start.wait(timeout=60)
            resource_api(seat_api).create_namespaced_resource_claim(seat, claim_body(CLAIM))
            core_api(seat_api).create_namespaced_pod(seat, pod_body(POD, claim=CLAIM))
        finally:
            seat_api.close()

    with ThreadPoolExecutor(max_workers=SEATS) as pool:
        futures = {seat: pool.submit(one_seat, seat) for seat in SEATS_ALL}
    errors = {seat: f.exception() for seat, f in futures.items() if f.exception() is not None}
    assert not errors, f"{len(errors)} seat(s) could not create their claim and pod: {errors}"
    claims, pods = wait_for("the rush to settle (24 allocated, 48 turned down)", lambda: settled(api), timeout=180)
    try:
        yield claims, pods
    finally:
        clear_namespaces(api, SEATS_ALL)


def test_exactly_24_claims_are_allocated_and_no_gpu_twice(control_plane, rush):
    claims, pods = seat_objects(control_plane.api_client)  # read again: still settled
    taken = {seat: allocated(c) for seat, c in claims.items() if allocated(c)}
    assert len(taken) == GPUS
    devices = [d for results in taken.values() for d in results]
    assert len(devices) == len(set(devices)) == GPUS, "a GPU is in two claims"
    slices = resource_api(control_plane.api_client).list_resource_slice().items
    published = {(s.spec.pool.name, d.name) for s in slices if s.spec.driver == DRIVER for d in s.spec.devices}
    assert set(devices) == published, "the 24 allocated devices are not the 24 published GPUs"
    for seat, claim in claims.items():
        pod = pods[seat]
        if seat in taken:
            assert pod.status.phase == "Running", seat
            assert [(r.name, r.uid) for r in claim.status.reserved_for] == [(POD, pod.metadata.uid)]
            assert pod.spec.node_name == taken[seat][0][0]
        else:
            assert pod.status.phase == "Pending" and not pod.spec.node_name, seat
            assert "cannot allocate all claims" in pod_scheduled_condition(pod).message


def test_dra_health_summary_matches_the_api(control_plane, workshop, rush):
    api = control_plane.api_client
    report = workshop.health()
    claims = resource_api(api).list_resource_claim_for_all_namespaces().items
    allocated_api = [c for c in claims if allocated(c)]

    summary = report["summary"]
    assert summary["devices_published"] == summary["devices_expected"] == GPUS
    assert summary["devices_allocated"] == len({d for c in allocated_api for d in allocated(c)}) == GPUS
    assert summary["devices_free"] == 0
    assert summary["claims_total"] == len(claims) == SEATS
    assert summary["claims_allocated"] == summary["claims_reserved"] == len(allocated_api) == GPUS
    assert summary["claims_pending"] == SEATS - GPUS
    assert report["healthy"] is True and summary["errors"] == 0
    assert not problems_of(report, "device_double_allocated")

    pending = problems_of(report, "claim_pending")
    assert len(pending) == SEATS - GPUS == summary["warnings"]
    rows = {c["namespace"]: c for c in report["claims"]}
    for claim in claims:
        row = rows[claim.metadata.namespace]
        assert row["seat"] == claim.metadata.namespace
        assert sorted((d["pool"], d["device"]) for d in row["devices"]) == sorted(allocated(claim))
        if allocated(claim):
            assert row["state"] == "reserved" and row["holder_pods_alive"] == [POD]
        else:
            assert row["state"] == "pending" and "cannot allocate all claims" in row["pending_reason"]
            # The explainer names who holds the GPUs (seat, device, node).
            assert row["explain_reason"] == "all_matching_in_use"
            assert row["explain_sentence"].startswith("24 GPUs match; all are in use: gpu-0 on node-1 by user")
            assert row["verdict"] == "waits" and "Wait until one of them is released" in row["explain_sentence"]
    for problem in pending:
        assert problem["explain_reason"] == "all_matching_in_use" and problem["allocatable_now"] is False
        # The diagnosis is the sentence; the scheduler's words are evidence apart.
        assert problem["reason"].endswith(" and waits for a device in use: " + problem["explain_sentence"])
        assert "cannot allocate all claims" in problem["scheduler_said"]
        assert problem["scheduler_said"] not in problem["reason"]


def test_reset_in_check_mode_deletes_nothing(control_plane, workshop, rush):
    run = workshop.converge("playbooks/reset.yml", check=True)
    assert run.changed > 0  # it would delete the rush
    assert "Check mode: these seat claims would be deleted:" in run.flat, run.describe()
    claims, pods = seat_objects(control_plane.api_client)
    assert len(claims) == len(pods) == SEATS
    assert sum(1 for c in claims.values() if allocated(c)) == GPUS


def test_reset_frees_every_gpu(control_plane, workshop, rush):
    api = control_plane.api_client
    run = workshop.converge("playbooks/reset.yml")
    assert run.changed > 0
    assert f"{SEATS} seat namespace(s), {2 * SEATS} object(s) deleted." in run.flat, run.describe()
    claims, pods = seat_objects(api)
    assert not claims and not pods
    report = workshop.health()
    assert report["summary"]["devices_free"] == GPUS
    assert report["summary"]["claims_allocated"] == 0
    wait_for("user42's quota to be released", lambda: (
        client.CoreV1Api(api).read_namespaced_resource_quota("dralab-seat-quota", "user42")
        .status.used[f"{DRIVER}.deviceclass.resource.k8s.io/devices"] == "0"))
