"""The claim held by a dead pod (seed 000: "a 12-day-old claim with a dead pod held its allocation
until manually deleted"), on a real 1.35 control plane, seen by dra_health and cleaned by reset.yml.

What 1.35 really does with a standalone ResourceClaim whose pod is deleted: kube-controller-manager's
resource claim controller drops the pod from status.reservedFor and, being the last consumer,
clears the allocation. The GPU is free again at once, but the claim object stays and still counts
against the seat's quota until it is deleted (seat user05 below).

The claim keeps holding its GPU only when that controller does not do its job (the known upstream
bugs that leave claims reserved for terminated pods): reproduced by deleting the pod while
kube-controller-manager is stopped (seat user06): dra_health reports claim_reserved_for_missing_pod.
An allocated claim that nobody reserves (the shape of the 12-day-old claim, seat user07) is written
the way the scheduler writes an allocation, and dra_health reports claim_allocated_unused once it is
older than stale_claim_age. health.yml run again seconds later reports changed=0: the sentences name
older ages, the lab is the same, and its board snapshot is kept.
"""

from __future__ import annotations

import re
import time

import pytest
from kubernetes.client.rest import ApiException

from k8s_helpers import (DRIVER, allocated, allocated_claims, api_from_kubeconfig, claim_body, clear_namespaces,
                         core_api, delete_namespace, expect_api_error, pod_body, resource_api,
                         wait_default_service_account, wait_for, wait_pod_running)
from playbook import problems_of

KCM = "kube-controller-manager"
FINALIZER = "resource.kubernetes.io/delete-protection"
SEATS = ("user05", "user06", "user07")
GPUS = 24


def pod_gone(core, ns, name):
    def check():
        try:
            core.read_namespaced_pod(name, ns)
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False
    return check


def train_then_delete_pod(api, seat):
    """As the seat: a claim `train-gpu`, a pod `train` using it; once it runs, the seat deletes the pod."""
    resource, core = resource_api(api), core_api(api)
    resource.create_namespaced_resource_claim(seat, claim_body("train-gpu"))
    core.create_namespaced_pod(seat, pod_body("train", claim="train-gpu"))
    pod = wait_pod_running(api, seat, "train")
    claim = resource.read_namespaced_resource_claim("train-gpu", seat)
    assert allocated(claim) and [r.uid for r in claim.status.reserved_for] == [pod.metadata.uid]
    core.delete_namespaced_pod("train", seat)
    wait_for(f"pod {seat}/train gone", pod_gone(core, seat, "train"), timeout=60)
    return pod


def allocate_by_hand(admin, seat, name):
    """A claim with an allocation and no consumer, as the scheduler would have left it (with its finalizer)."""
    resource = resource_api(admin)
    taken = {d for c in allocated_claims(admin) for d in allocated(c)}
    slices = sorted(resource.list_resource_slice().items, key=lambda s: s.spec.node_name)
    pool, device = next((s.spec.pool.name, d.name) for s in slices if s.spec.driver == DRIVER
                        for d in s.spec.devices if (s.spec.pool.name, d.name) not in taken)
    body = claim_body(name)
    body["metadata"]["finalizers"] = [FINALIZER]
    claim = resource.create_namespaced_resource_claim(seat, body)
    claim.status = {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": pool, "device": device}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [pool]}]}]},
    }}
    resource.replace_namespaced_resource_claim_status(name, seat, claim)
    return pool, device


@pytest.fixture(scope="module")
def stale(control_plane, workshop):
    """The three claims, one dra_health report per stale_claim_age, and a health.yml run."""
    admin = control_plane.api_client
    cluster = control_plane.cluster
    clear_namespaces(admin, SEATS)
    seen = {}
    try:
        # user05: kube-controller-manager running, as in a healthy lab.
        user05 = api_from_kubeconfig(workshop.seat_kubeconfig("user05"))
        try:
            train_then_delete_pod(user05, "user05")
            seen["user05_released"] = wait_for(
                "user05/train-gpu to lose its reservation",
                lambda: (c if not (c := resource_api(admin).read_namespaced_resource_claim("train-gpu", "user05"))
                         .status.reserved_for else None), timeout=60)
            seen["user05_second_claim"] = expect_api_error(
                403, resource_api(user05).create_namespaced_resource_claim, "user05", claim_body("another-gpu"))
        finally:
            user05.close()

        # user06: the resource claim controller misses the pod's deletion.
        cluster.stop_process(KCM)
        user06 = api_from_kubeconfig(workshop.seat_kubeconfig("user06"))
        try:
            seen["user06_pod"] = train_then_delete_pod(user06, "user06")
        finally:
            user06.close()
        time.sleep(2)  # would be plenty for the controller, were it running
        seen["user06_claim"] = resource_api(admin).read_namespaced_resource_claim("train-gpu", "user06")

        # user07: allocated, reserved for nobody.
        seen["user07_device"] = allocate_by_hand(admin, "user07", "old-gpu")
        time.sleep(2)  # older than stale_claim_age 1s

        seen["report"] = workshop.health(stale_claim_age="1s")
        seen["report_1h"] = workshop.health()
        seen["health_run"] = workshop.run("playbooks/health.yml", extra_vars={"lab_health_stale_claim_age": "1s"})
        # The same lab twice, seconds apart: only the ages the sentences name move on.
        quiet = {"lab_health_stale_claim_age": "1s", "lab_health_fail_on_unhealthy": False}
        seen["health_first"] = workshop.run("playbooks/health.yml", extra_vars=quiet)
        time.sleep(2)
        seen["health_again"] = workshop.run("playbooks/health.yml", extra_vars=quiet)
    finally:
        cluster.start_process(KCM)
    yield seen
    clear_namespaces(admin, SEATS)


def rows_by_seat(report):
    return {(c["namespace"], c["name"]): c for c in report["claims"]}


def test_deleted_pod_releases_the_gpu_in_1_35_but_the_claim_stays(control_plane, stale):
    claim = stale["user05_released"]
    # The controller cleared the allocation with the last reservation: the GPU is free again...
    assert claim.status.reserved_for is None and claim.status.allocation is None
    # ...but the claim (the "receipt") still counts against the seat's quota until it is deleted.
    # The seat is told what it holds and how to free it (the claim-count admission policy, before the quota).
    assert ("this seat already holds 1 of 1 GPU claim(s); list them with kubectl get resourceclaims and delete one "
            "to free it") in stale["user05_second_claim"].body
    row = rows_by_seat(stale["report"])[("user05", "train-gpu")]
    assert row["state"] == "pending" and row["pending_reason"] == "no pod uses this claim yet"
    [problem] = [p for p in problems_of(stale["report"], "claim_pending") if p["namespace"] == "user05"]
    assert problem["severity"] == "warning"


def test_claim_reserved_for_a_deleted_pod_is_an_error(control_plane, stale):
    claim, pod = stale["user06_claim"], stale["user06_pod"]
    # Without the controller, status still names the deleted pod and holds the GPU.
    assert [r.uid for r in claim.status.reserved_for] == [pod.metadata.uid]
    [(pool, device)] = allocated(claim)
    report = stale["report"]
    row = rows_by_seat(report)[("user06", "train-gpu")]
    assert row["state"] == "reserved" and row["reserved_for"] == ["train"] and row["holder_pods_alive"] == []
    [problem] = [p for p in problems_of(report, "claim_reserved_for_missing_pod") if p["namespace"] == "user06"]
    assert problem["severity"] == "error" and problem["pods"] == ["train"]
    assert "pod user06/train which no longer exists" in problem["reason"]
    assert f"GPU {device} on node {pool}" in problem["reason"]
    assert "kubectl -n user06 delete resourceclaim train-gpu" in problem["reason"]


def test_allocated_claim_nobody_uses_is_reported_when_older_than_the_threshold(control_plane, stale):
    pool, device = stale["user07_device"]
    row = rows_by_seat(stale["report"])[("user07", "old-gpu")]
    assert row["state"] == "allocated" and row["seat"] == "user07" and row["age_seconds"] >= 1
    [problem] = problems_of(stale["report"], "claim_allocated_unused")
    assert problem["severity"] == "error" and problem["name"] == "old-gpu"
    assert f"GPU {device} on node {pool}" in problem["reason"] and "no pod uses it" in problem["reason"]
    # With the default threshold (1h) the young claim is not a problem yet.
    assert not problems_of(stale["report_1h"], "claim_allocated_unused")


def test_health_reports_both_held_gpus(control_plane, stale):
    report = stale["report"]
    assert report["healthy"] is False and report["summary"]["errors"] == 2
    assert report["summary"]["devices_allocated"] == 2 and report["summary"]["devices_free"] == GPUS - 2
    run = stale["health_run"]
    assert run.rc != 0 and run.failed == 1, run.describe()
    assert "DRA lab UNHEALTHY: 2 error(s)" in run.flat, run.describe()
    assert "ERROR ResourceClaim user06/train-gpu: claim user06/train-gpu is reserved for pod user06/train" in run.flat
    assert "ERROR ResourceClaim user07/old-gpu: claim user07/old-gpu was created" in run.flat
    assert "The DRA lab is unhealthy: 2 error(s)" in run.flat


def test_health_yml_again_changes_nothing_when_only_ages_moved_on(stale):
    """The snapshot is the lab's record: written again when the lab changed, not because an age in a sentence did."""
    first, again = stale["health_first"], stale["health_again"]
    ages = [re.search(r"user07/old-gpu was created (\S+) ago", run.flat) for run in (first, again)]
    assert all(ages) and ages[0].group(1) != ages[1].group(1), (first.describe(), again.describe())
    assert first.rc == 0 and again.rc == 0, again.describe()
    assert again.changed == 0, f"{again.changed_tasks()}\n{again.describe()}"


@pytest.fixture
def lookalike(control_plane):
    """Namespace user99: named like a seat but not one (no labels), with a GPU in use."""
    api = control_plane.api_client
    core_api(api).create_namespace({"metadata": {"name": "user99"}})
    try:
        wait_default_service_account(api, "user99")
        resource_api(api).create_namespaced_resource_claim("user99", claim_body("keep-gpu"))
        core_api(api).create_namespaced_pod("user99", pod_body("keep", claim="keep-gpu"))
        wait_pod_running(api, "user99", "keep")
        yield "user99"
    finally:
        delete_namespace(api, "user99")


def test_reset_removes_the_stale_claims_and_frees_every_gpu(control_plane, workshop, stale, lookalike):
    admin = control_plane.api_client
    # Back up, the controller catches up with user06's deleted pod by itself.
    wait_for("kube-controller-manager to release user06/train-gpu", lambda: not (
        resource_api(admin).read_namespaced_resource_claim("train-gpu", "user06").status.reserved_for), timeout=90)

    run = workshop.converge("playbooks/reset.yml")
    assert run.changed > 0
    assert "3 object(s) deleted." in run.flat and "resourceclaims: 3" in run.flat, run.describe()
    assert not [c for c in resource_api(admin).list_resource_claim_for_all_namespaces().items
                if c.metadata.namespace in SEATS]
    # The look-alike namespace is not a seat: listed, left alone, and no reason to fail.
    [(pool, device)] = allocated(resource_api(admin).read_namespaced_resource_claim("keep-gpu", lookalike))
    assert "Claims outside the seat namespaces (left alone by the reset):" in run.flat, run.describe()
    assert f"{lookalike}/keep-gpu holds {device} for keep" in run.flat, run.describe()
    core_api(admin).read_namespaced_pod("keep", lookalike)
    delete_namespace(admin, lookalike)

    report = workshop.health(stale_claim_age="1s")
    assert report["healthy"] is True, report["problems"]
    assert report["summary"]["devices_free"] == GPUS and report["summary"]["claims_allocated"] == 0
