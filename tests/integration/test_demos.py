"""The three demos of the workshop (seed 004) on the lab: a ResourceClaimTemplate gives each pod its
own GPU, one ResourceClaim shared by two pods gives both the same GPU, and a CEL selector on memory
is allocated at >= 40Gi and stays pending at >= 100Gi. dra_health (and playbooks/health.yml)
explain the pending claim."""

from __future__ import annotations

import pytest

from k8s_helpers import (DRIVER, allocated, allocated_claims, claim_body, core_api, delete_namespace, pod_body,
                         pod_scheduled_condition, resource_api, template_body, wait_default_service_account,
                         wait_pod_running, wait_pod_unschedulable)
from playbook import problems_of

NS = "dra-demo"
MODEL = f"device.attributes['{DRIVER}'].model == 'LATEST-GPU-MODEL'"
MEM_40 = f"device.capacity['{DRIVER}'].memory.compareTo(quantity('40Gi')) >= 0"
MEM_100 = f"device.capacity['{DRIVER}'].memory.compareTo(quantity('100Gi')) >= 0"
RUNNING = ("pod-a", "pod-b", "shared-1", "shared-2", "big-gpu", "menu-gpu")


@pytest.fixture(scope="module")
def demo(control_plane, workshop):
    """Every demo object of the blog post, created at once in namespace dra-demo (deleted afterwards)."""
    api = control_plane.api_client
    core, resource = core_api(api), resource_api(api)
    core.create_namespace({"metadata": {"name": NS}})
    try:
        wait_default_service_account(api, NS)
        # Demo 1: one GPU per pod.
        resource.create_namespaced_resource_claim_template(NS, template_body("single-gpu"))
        for name in ("pod-a", "pod-b"):
            core.create_namespaced_pod(NS, pod_body(name, template="single-gpu"))
        # Demo 2: one GPU shared by two pods.
        resource.create_namespaced_resource_claim(NS, claim_body("shared-gpu"))
        for name in ("shared-1", "shared-2"):
            core.create_namespaced_pod(NS, pod_body(name, claim="shared-gpu"))
        # Demo 3: pick a GPU by its attributes.
        resource.create_namespaced_resource_claim_template(NS, template_body("gpu-40gi", selectors=[MODEL, MEM_40]))
        resource.create_namespaced_resource_claim_template(NS, template_body("gpu-100gi", selectors=[MEM_100]))
        core.create_namespaced_pod(NS, pod_body("big-gpu", template="gpu-40gi"))
        core.create_namespaced_pod(NS, pod_body("huge-gpu", template="gpu-100gi"))
        # The same as the menu's class gpu-40gi.example.com (device_classes default menu).
        resource.create_namespaced_resource_claim(NS, claim_body("menu-40gi", device_class="gpu-40gi.example.com"))
        core.create_namespaced_pod(NS, pod_body("menu-gpu", claim="menu-40gi"))

        pods = {name: wait_pod_running(api, NS, name) for name in RUNNING}
        pods["huge-gpu"] = wait_pod_unschedulable(api, NS, "huge-gpu")
        yield pods
    finally:
        delete_namespace(api, NS)


def claim_of(api, pod_name):
    """The claim a pod uses (generated from a template or named)."""
    pod = core_api(api).read_namespaced_pod(pod_name, NS)
    ref = pod.spec.resource_claims[0]
    name = ref.resource_claim_name
    if not name:
        [status] = pod.status.resource_claim_statuses
        name = status.resource_claim_name
    return resource_api(api).read_namespaced_resource_claim(name, NS)


def test_template_gives_each_pod_its_own_gpu(control_plane, demo):
    api = control_plane.api_client
    a, b = claim_of(api, "pod-a"), claim_of(api, "pod-b")
    assert a.metadata.name != b.metadata.name
    for claim, pod in ((a, demo["pod-a"]), (b, demo["pod-b"])):
        assert [o.uid for o in claim.metadata.owner_references] == [pod.metadata.uid]
        assert [r.uid for r in claim.status.reserved_for] == [pod.metadata.uid]
        assert len(allocated(claim)) == 1
    assert allocated(a) != allocated(b), "the two pods got the same GPU"


def test_shared_claim_gives_both_pods_the_same_gpu(control_plane, demo):
    api = control_plane.api_client
    claim = resource_api(api).read_namespaced_resource_claim("shared-gpu", NS)
    [(pool, device)] = allocated(claim)
    assert sorted(r.name for r in claim.status.reserved_for) == ["shared-1", "shared-2"]
    assert demo["shared-1"].spec.node_name == demo["shared-2"].spec.node_name == pool
    assert claim_of(api, "shared-1").metadata.uid == claim_of(api, "shared-2").metadata.uid


def test_cel_selector_picks_by_memory(control_plane, demo):
    api = control_plane.api_client
    big = claim_of(api, "big-gpu")
    assert len(allocated(big)) == 1
    assert len(allocated(resource_api(api).read_namespaced_resource_claim("menu-40gi", NS))) == 1

    huge = claim_of(api, "huge-gpu")
    assert allocated(huge) == []
    cond = pod_scheduled_condition(core_api(api).read_namespaced_pod("huge-gpu", NS))
    assert cond.status == "False" and cond.reason == "Unschedulable"
    assert "cannot allocate all claims" in cond.message
    # Every allocated device is a different GPU (shared-gpu counts once).
    devices = [d for c in allocated_claims(api) for d in allocated(c)]
    assert len(devices) == len(set(devices)) == 5


def test_dra_health_explains_the_pending_claim(control_plane, workshop, demo):
    api = control_plane.api_client
    huge = claim_of(api, "huge-gpu").metadata.name
    report = workshop.health()

    assert report["healthy"] is True, report["problems"]
    rows = {(c["namespace"], c["name"]): c for c in report["claims"]}
    row = rows[(NS, huge)]
    assert row["state"] == "pending" and row["devices"] == []
    assert "cannot allocate all claims" in row["pending_reason"]
    assert row["owner_template"] is True
    [problem] = [p for p in problems_of(report, "claim_pending") if p["name"] == huge]
    assert problem["severity"] == "warning"
    assert f"pod {NS}/huge-gpu cannot be scheduled" in problem["reason"]
    # The explainer adds what the scheduler's one-liner does not say.
    assert (problem["explain_reason"], problem["allocatable_now"]) == ("no_matching_device", False)
    assert problem["verdict"] == "never_fits" and "cannot allocate all claims" in problem["scheduler_said"]
    assert problem["explain_sentence"] == ("no GPU has memory >= 100Gi (the largest has 80Gi). Change the request: "
                                           "ask for no more than the devices offer.")
    assert (row["explain_reason"], row["explain_sentence"]) == ("no_matching_device", problem["explain_sentence"])

    shared = rows[(NS, "shared-gpu")]
    assert shared["state"] == "reserved" and sorted(shared["holder_pods_alive"]) == ["shared-1", "shared-2"]
    assert len(shared["devices"]) == 1

    # The summary matches the API.
    claims = resource_api(api).list_resource_claim_for_all_namespaces().items
    devices = {d for c in claims for d in allocated(c)}
    summary = report["summary"]
    assert summary["devices_allocated"] == len(devices)
    assert summary["devices_published"] == 24 and summary["devices_free"] == 24 - len(devices)
    assert summary["claims_total"] == len(claims)
    assert summary["claims_pending"] == sum(1 for c in claims if not allocated(c))
    assert [c["name"] for c in report["claims"] if c["namespace"] == NS and c["state"] == "pending"] == [huge]


def test_health_playbook_reports_the_pending_claim(control_plane, workshop, demo):
    huge = claim_of(control_plane.api_client, "huge-gpu").metadata.name
    run = workshop.converge("playbooks/health.yml")  # a pending claim is a warning, not a failure
    assert "DRA lab healthy: 0 error(s), 1 warning(s)" in run.flat, run.describe()
    assert f"WARNING ResourceClaim {NS}/{huge}: claim {NS}/{huge} is pending (pod {NS}/huge-gpu " \
           "cannot be scheduled) and never fits as asked: no GPU has memory >= 100Gi (the largest has 80Gi). " \
           "Change the request: ask for no more than the devices offer." in run.flat, run.describe()
    assert "scheduler said: 0/3 nodes are available: 3 cannot allocate all claims" in run.flat, run.describe()
