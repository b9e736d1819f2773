"""The lab's DRA feature (inventories/local: consumable_capacity): a seat logs in over SSH with its password
and runs the consumable-capacity demo that workshop_users copied into its home (~/demos/consumable-capacity), unchanged: three claims of 10Gi on one card
of a real kubelet + containerd node, 50Gi of it left, the pod's container sees its three shares, dra_health
reports the card healthy with its capacity used and free.

The lab's inventory turns the feature on (dralab_dra_features: [consumable_capacity], dralab_gpus_per_seat: 3);
the first test checks that the lab is that one.
"""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import HEALTH_PLAYBOOK, REPO, login, run_playbook, wait_for

FEATURES = yaml.safe_load((REPO / "inventories" / "local" / "group_vars" / "all.yml").read_text())
SEAT = "user01"
DEMO = "~/demos/consumable-capacity"


@pytest.fixture(scope="module")
def seat():
    session = login(SEAT)
    yield session
    session.run(f"kubectl delete -f {DEMO} --ignore-not-found --wait=true --timeout=120s")
    session.close()


def test_the_lab_runs_with_consumable_capacity(api):
    from kubernetes import client
    classes = [c.metadata.name for c in client.ResourceV1Api(api).list_device_class().items]
    assert "gpu-shared.example.com" in classes
    slices = client.ResourceV1Api(api).list_resource_slice().items
    assert slices and all(d.allow_multiple_allocations for s in slices for d in s.spec.devices or [])
    assert FEATURES["dralab_dra_features"] == ["consumable_capacity"]


def test_the_demo_is_in_the_seats_home(seat):
    rc, out, err = seat.run(f"ls {DEMO}")
    assert rc == 0, err
    assert sorted(out.split()) == ["README.md", "claim-small-1.yaml", "claim-small-2.yaml", "claim-small-3.yaml", "pod.yaml"]


def test_three_claims_share_one_card_with_50gi_left(seat):
    rc, out, err = seat.run(f"kubectl apply -f {DEMO}")
    assert rc == 0, out + err
    rc, out, err = seat.run("kubectl wait --for=condition=Ready pod/three-small --timeout=180s")
    assert rc == 0, out + err
    rc, out, err = seat.run("kubectl get resourceclaims -o json")
    assert rc == 0, err
    claims = {c["metadata"]["name"]: c for c in json.loads(out)["items"]}
    results = [claims[f"small-{i}"]["status"]["allocation"]["devices"]["results"] for i in (1, 2, 3)]
    assert all(len(r) == 1 for r in results), results
    assert len({(r[0]["pool"], r[0]["device"]) for r in results}) == 1, "the three claims are not on one card"
    assert [r[0]["consumedCapacity"] for r in results] == [{"memory": "10Gi", "compute": "10"}] * 3


def test_the_container_sees_its_share(seat):
    # The driver names the variables after the card (GPU_DEVICE_<index>_MEMORY), the same for each share of it.
    def logged():
        rc, out, err = seat.run("kubectl logs three-small")
        return out if rc == 0 and "_MEMORY=10Gi" in out else None
    out = wait_for("GPU_DEVICE_*_MEMORY=10Gi in the pod's log", logged, timeout=120)
    assert "_COMPUTE=10" in out, out


def test_health_reports_the_card_with_its_capacity(health_after_demo):
    [row] = [r for r in health_after_demo["shared_devices"] if r["claims"] == [
        f"{SEAT}/small-1", f"{SEAT}/small-2", f"{SEAT}/small-3"]]
    assert row["capacity"]["memory"] == {"total": "80Gi", "used": "30Gi", "free": "50Gi"}
    assert not [p for p in health_after_demo["problems"]
                if p["type"] in ("device_double_allocated", "device_capacity_exceeded")]


@pytest.fixture
def health_after_demo(tmp_path):
    """dralab.workshop.dra_health's result while the demo runs (the session's `health` is read earlier)."""
    out = tmp_path / "health.json"
    options = {"health_json_path": str(out), "health_options": {"fail_on_unhealthy": False}}
    proc = run_playbook(HEALTH_PLAYBOOK, "-e", json.dumps(options))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text())
