"""docs/demos/partitionable-devices on 1.35.4 with the driver's partitions (kubeletPlugin.gpuPartitions): the
two partitions the claim asks for come from one card (matchAttribute on its uuid); a seat is refused the
two-device claim by the lab's admission policy; dra_health counts physical cards, not partitions."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import GPU_PARTITIONS

from k8s_helpers import DRIVER, delete_namespace, resource_api, wait_default_service_account, wait_pod_running

REPO = Path(__file__).resolve().parents[3]
FILES = ["-f", str(REPO / "docs" / "demos" / "partitionable-devices")]
NAMESPACE = "dralab-partitions"


def kubectl(control_plane, kubeconfig, *args):
    return subprocess.run([str(control_plane.binary("kubectl")), f"--kubeconfig={kubeconfig}", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_seat_may_not_ask_for_two_partitions(control_plane, workshop):
    refused = kubectl(control_plane, workshop.seat_kubeconfig("user01"), "apply", *FILES)
    assert refused.returncode != 0
    assert "asks for at most 1 device(s) per claim" in refused.stderr, refused.stderr
    kubectl(control_plane, workshop.seat_kubeconfig("user01"), "delete", "--ignore-not-found", "--wait=false", *FILES)


def test_two_partitions_of_one_card(control_plane, workshop):
    api = control_plane.api_client
    admin = control_plane.kubeconfig
    assert kubectl(control_plane, admin, "create", "namespace", NAMESPACE).returncode == 0
    try:
        wait_default_service_account(api, NAMESPACE)
        applied = kubectl(control_plane, admin, "-n", NAMESPACE, "apply", *FILES)
        assert applied.returncode == 0, applied.stderr
        wait_pod_running(api, NAMESPACE, "two-partitions")
        claim = resource_api(api).read_namespaced_resource_claim("two-partitions", NAMESPACE)
        results = claim.status.allocation.devices.results
        assert sorted(r.request for r in results) == ["first", "second"]
        assert all(r.device.split("-partition-")[0] == results[0].device.split("-partition-")[0] for r in results)
        assert len({r.device for r in results}) == 2 and all("-partition-" in r.device for r in results)
        slices = resource_api(api).list_resource_slice().items
        uuids = {(d.name, s.spec.pool.name): d.attributes["uuid"].string
                 for s in slices if s.spec.driver == DRIVER for d in s.spec.devices or []}
        pool = results[0].pool
        assert uuids[(results[0].device, pool)] == uuids[(results[1].device, pool)]

        health = workshop.health()
        for node in health["nodes"]:
            assert (node["published"], node["expected"], node["devices"]) == (8, 8, 8 * (GPU_PARTITIONS + 1)), node
        assert health["summary"]["nodes_complete"] == len(control_plane.nodes)
        assert not [p for p in health["problems"] if p["type"] in ("device_count_short", "pool_inconsistent")]
    finally:
        delete_namespace(api, NAMESPACE)
