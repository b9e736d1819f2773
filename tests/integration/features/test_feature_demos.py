"""The demos of docs/demos, applied unchanged with kubectl as a seat (its kubeconfig, its namespace, its quota)
against a 1.35.4 control plane with the features on; the outcome is read from the API, and dra_health's view
of each is checked.

kwok marks pods Running without a kubelet: NodePrepareResources is never called, so the driver writes no
device status (the device-status demo is checked on recorded objects in the unit tests only) and no container
sees its GPU_DEVICE_* variables. Allocation, quota, admission and the scheduler are the real ones.
"""

from __future__ import annotations

from k8s_helpers import DRIVER, core_api, delete_namespace, resource_api, wait_default_service_account, wait_for
from k8s_helpers import wait_pod_running, wait_pod_unschedulable
from playbook import problems_of
from seat_demo import SEAT, claim, demo, results

MONITORING = "dralab-monitoring"


def test_consumable_capacity_three_claims_share_one_card(control_plane, workshop, seat, cleanup):
    api = control_plane.api_client
    cleanup.append(demo("consumable-capacity"))
    seat("apply", *demo("consumable-capacity"))
    wait_pod_running(api, SEAT, "three-small")
    shares = [results(claim(api, f"small-{i}")) for i in (1, 2, 3)]
    assert all(len(r) == 1 for r in shares), shares
    cards = {(r[0].pool, r[0].device) for r in shares}
    assert len(cards) == 1, f"the three claims are on {cards}, not on one card"
    assert [r[0].consumed_capacity for r in shares] == [{"memory": "10Gi", "compute": "10"}] * 3
    assert len({r[0].share_id for r in shares}) == 3
    [(pool, device)] = cards

    health = workshop.health()
    [row] = [r for r in health["shared_devices"] if (r["pool"], r["device"]) == (pool, device)]
    assert row["claims"] == [f"{SEAT}/small-1", f"{SEAT}/small-2", f"{SEAT}/small-3"]
    assert row["capacity"]["memory"] == {"total": "80Gi", "used": "30Gi", "free": "50Gi"}
    assert row["capacity"]["compute"] == {"total": "100", "used": "30", "free": "70"}
    assert problems_of(health, "device_double_allocated") == []
    assert problems_of(health, "device_capacity_exceeded") == []
    assert any(line.endswith("3 claims; compute 30 used, 70 free of 100, memory 30Gi used, 50Gi free of 80Gi")
               for line in health["report_lines"]), health["report_lines"]


def test_prioritized_list_falls_back_to_40gi(control_plane, workshop, seat, cleanup):
    api = control_plane.api_client
    cleanup.append(demo("prioritized-list"))
    seat("apply", *demo("prioritized-list"))
    wait_pod_running(api, SEAT, "big-or-40gi")
    [result] = results(claim(api, "big-or-40gi"))
    assert result.request == "gpu/at-least-40gi"
    [row] = [c for c in workshop.health()["claims"] if (c["namespace"], c["name"]) == (SEAT, "big-or-40gi")]
    assert row["state"] == "reserved" and row["devices"][0]["request"] == "gpu/at-least-40gi"


def test_extended_resource_pod_gets_a_gpu_without_a_claim(control_plane, workshop, seat, cleanup):
    api = control_plane.api_client
    cleanup.append(demo("extended-resource"))
    seat("apply", *demo("extended-resource"))
    pod = wait_pod_running(api, SEAT, "classic")
    status = pod.status.extended_resource_claim_status
    assert status is not None and status.resource_claim_name, pod.status
    [result] = results(claim(api, status.resource_claim_name))
    assert result.driver == DRIVER
    [row] = [c for c in workshop.health()["claims"] if c["name"] == status.resource_claim_name]
    assert row["namespace"] == SEAT and row["state"] == "reserved" and row["holder_pods_alive"] == ["classic"]


def test_device_taints_keep_tainted_cards_from_claims_that_do_not_tolerate_them(
        control_plane, workshop, seat, instructor, cleanup):
    api = control_plane.api_client
    rule = demo("device-taints", "instructor-taint-rule.yaml")
    refused = seat("apply", *rule, check=False)
    assert refused.returncode != 0 and "forbidden" in refused.stderr.lower(), refused.stderr
    instructor("apply", *rule)
    try:
        health = workshop.health()
        tainted = sorted((r["node"], r["device"]) for r in health["tainted_devices"])
        assert tainted == [(node, "gpu-0") for node in sorted(control_plane.nodes)]
        assert all(t["rule"] == "maintenance-gpu-0" for r in health["tainted_devices"] for t in r["taints"])
        assert len(problems_of(health, "device_tainted")) == len(control_plane.nodes)

        cleanup.append(demo("device-taints", "claim.yaml", "pod.yaml"))
        seat("apply", *demo("device-taints", "claim.yaml", "pod.yaml"))
        wait_pod_unschedulable(api, SEAT, "wants-gpu-0")
        assert results(claim(api, "wants-gpu-0")) == []

        cleanup.append(demo("device-taints", "claim-tolerating.yaml", "pod-tolerating.yaml"))
        seat("apply", *demo("device-taints", "claim-tolerating.yaml", "pod-tolerating.yaml"))
        wait_pod_running(api, SEAT, "tolerates-maintenance")
        [result] = results(claim(api, "tolerates-maintenance"))
        assert result.device == "gpu-0"
        assert results(claim(api, "wants-gpu-0")) == [], "a claim that does not tolerate the taint got gpu-0"
    finally:
        instructor("delete", "--ignore-not-found", *rule)


def test_admin_access_is_refused_to_a_seat_and_given_to_the_instructor(control_plane, workshop, seat, instructor):
    api = control_plane.api_client
    refused = seat("apply", *demo("admin-access", "claim.yaml", "pod.yaml"), check=False)
    assert refused.returncode != 0, refused.stdout
    assert "admin-access" in refused.stderr, refused.stderr
    assert resource_api(api).list_namespaced_resource_claim(SEAT).items == []
    # The file's pod was accepted; without its claim it never starts.
    pod = core_api(api).read_namespaced_pod("monitor-gpu", SEAT)
    assert pod.status.phase == "Pending" and not pod.spec.node_name
    seat("delete", "--wait=false", *demo("admin-access", "claim.yaml", "pod.yaml"), "--ignore-not-found")
    wait_for(f"no pods in {SEAT}", lambda: not core_api(api).list_namespaced_pod(SEAT).items, timeout=120)

    instructor("apply", *demo("admin-access", "instructor-namespace.yaml"))
    try:
        wait_default_service_account(api, MONITORING)
        instructor("-n", MONITORING, "apply", *demo("admin-access", "claim.yaml", "pod.yaml"))
        wait_pod_running(api, MONITORING, "monitor-gpu")
        [result] = results(claim(api, "monitor-gpu", MONITORING))
        assert result.admin_access is True
        health = workshop.health()
        [row] = [c for c in health["claims"] if (c["namespace"], c["name"]) == (MONITORING, "monitor-gpu")]
        assert row["state"] == "reserved"
        assert problems_of(health, "device_double_allocated") == []
    finally:
        delete_namespace(api, MONITORING)
