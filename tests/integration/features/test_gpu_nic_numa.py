"""docs/demos/gpu-nic-numa applied unchanged as a seat: one claim gets a GPU and a NIC on one PCIe root
(matchAttribute resource.kubernetes.io/pcieRoot, which the lab's build of the driver publishes in both
profiles); dra_health sees a healthy lab with both devices. A seat's claim may hold one GPU and one NIC, never
two NICs nor two GPUs (the claim-size policies with the companion class). dra_driver's wait also waits for the
NICs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import (NIC_CLASS, NIC_DRIVER,
                                                                                   PCIE_ROOT_ATTRIBUTE)

from k8s_helpers import DRIVER, published_devices, resource_api, wait_for, wait_pod_running
from playbook import DEVICES_PER_NODE, problems_of
from seat_demo import SEAT, claim, demo, results

WAIT = Path(__file__).resolve().parents[1] / "playbooks" / "driver_wait.yml"
NIC = NIC_CLASS["name"]
GPU_CLASSES = ("gpu.example.com", "gpu-40gi.example.com")


def pcie_roots(api) -> dict[tuple[str, str, str], str]:
    """(driver, pool, device) -> its pcieRoot attribute, of every published device."""
    roots = {}
    for rslice in resource_api(api).list_resource_slice().items:
        for device in rslice.spec.devices or []:
            attribute = (device.attributes or {}).get(PCIE_ROOT_ATTRIBUTE)
            roots[(rslice.spec.driver, rslice.spec.pool.name, device.name)] = attribute.string if attribute else None
    return roots


def test_every_gpu_and_nic_publishes_its_pcie_root(control_plane):
    roots = pcie_roots(control_plane.api_client)
    for driver, prefix in ((DRIVER, "gpu"), (NIC_DRIVER, "nic")):
        for node in control_plane.nodes:
            mine = {key[2]: root for key, root in roots.items() if key[:2] == (driver, node)}
            assert mine == {f"{prefix}-{i}": "pci0000:%02x" % (i % 2) for i in range(DEVICES_PER_NODE)}, mine


def test_demo_claim_gets_a_gpu_and_a_nic_on_one_pcie_root(control_plane, workshop, seat, cleanup):
    api = control_plane.api_client
    cleanup.append(demo("gpu-nic-numa"))
    seat("apply", *demo("gpu-nic-numa"))
    wait_pod_running(api, SEAT, "gpu-and-nic")
    by_request = {r.request: r for r in results(claim(api, "gpu-and-nic"))}
    assert sorted(by_request) == ["gpu", "nic"], by_request
    gpu, nic = by_request["gpu"], by_request["nic"]
    assert (gpu.driver, nic.driver) == (DRIVER, NIC_DRIVER)
    assert gpu.pool == nic.pool, "the GPU and the NIC are on different nodes"
    roots = pcie_roots(api)
    gpu_root, nic_root = roots[(gpu.driver, gpu.pool, gpu.device)], roots[(nic.driver, nic.pool, nic.device)]
    assert gpu_root is not None and gpu_root == nic_root, (gpu_root, nic_root)

    for driver in (DRIVER, NIC_DRIVER):
        health = workshop.health(driver=driver)
        assert health["healthy"], health["report_lines"]
        assert health["summary"]["nodes_complete"] == len(control_plane.nodes), health["report_lines"]
        [row] = [c for c in health["claims"] if (c["namespace"], c["name"]) == (SEAT, "gpu-and-nic")]
        assert row["state"] == "reserved" and row["holder_pods_alive"] == ["gpu-and-nic"]
        assert sorted((d["driver"], d["device"], d["node"]) for d in row["devices"]) == sorted(
            [(DRIVER, gpu.device, gpu.pool), (NIC_DRIVER, nic.device, nic.pool)])
        for kind in ("claim_device_unknown", "device_double_allocated", "device_capacity_exceeded"):
            assert problems_of(health, kind) == [], health["report_lines"]
    gpu_health = workshop.health()
    assert gpu_health["summary"]["devices_allocated"] == 1, gpu_health["summary"]


def claim_spec(requests: list[str]) -> dict:
    """A ResourceClaimSpec of one request per entry; an entry 'a|b' is a firstAvailable list of classes a, b."""
    made = []
    for index, entry in enumerate(requests):
        classes = entry.split("|")
        if len(classes) == 1:
            made.append({"name": f"r{index}", "exactly": {"deviceClassName": classes[0]}})
        else:
            made.append({"name": f"r{index}", "firstAvailable": [
                {"name": f"s{sub}", "deviceClassName": name} for sub, name in enumerate(classes)]})
    return {"devices": {"requests": made}}


def claim_manifest(name: str, requests: list[str]) -> str:
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
                       "spec": claim_spec(requests)})


@pytest.mark.parametrize("requests, refusal", [
    ([NIC, NIC], f"at most 1 device(s) of {NIC} per claim; this ResourceClaim asks for 2"),
    ([GPU_CLASSES[0], GPU_CLASSES[1], NIC], "at most 1 GPU(s) per claim"),
    ([GPU_CLASSES[0], GPU_CLASSES[0]], "at most 1 GPU(s) per claim"),
    # A firstAvailable alternative counts as what its class is: the GPU alternative makes a second GPU.
    ([GPU_CLASSES[0], f"{NIC}|{GPU_CLASSES[1]}"], "at most 1 GPU(s) per claim"),
])
def test_a_seat_claim_holds_at_most_one_gpu_and_one_nic(control_plane, workshop, seat, requests, refusal):
    try:
        refused = seat("create", "-f", "-", stdin=claim_manifest("greedy", requests), check=False)
        assert refused.returncode != 0, refused.stdout
        assert refusal in refused.stderr, refused.stderr
        assert resource_api(control_plane.api_client).list_namespaced_resource_claim(SEAT).items == []
    finally:  # what an admitted claim would leave
        seat("delete", "resourceclaim", "greedy", "--ignore-not-found")


def test_a_seat_claim_template_holds_at_most_one_nic_too(control_plane, workshop, seat):
    template = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                           "metadata": {"name": "greedy"}, "spec": {"spec": claim_spec([NIC, NIC])}})
    try:
        refused = seat("create", "-f", "-", stdin=template, check=False)
        assert refused.returncode != 0, refused.stdout
        assert f"at most 1 device(s) of {NIC} per claim; this ResourceClaimTemplate asks for 2" in refused.stderr, \
            refused.stderr
    finally:
        seat("delete", "resourceclaimtemplate", "greedy", "--ignore-not-found")


def test_a_seat_claim_may_hold_one_gpu_and_one_nic(control_plane, workshop, seat):
    try:
        seat("apply", "-f", "-", stdin=claim_manifest("pair", [GPU_CLASSES[0], NIC]))
        seat("apply", "-f", "-", stdin=claim_manifest("nic-only", [NIC]))
    finally:
        seat("delete", "resourceclaim", "pair", "nic-only", "--ignore-not-found")


def test_driver_wait_waits_for_the_nics_too(control_plane, lab):
    cluster, node = control_plane.cluster, control_plane.nodes[0]
    wait_vars = {"dralab_dra_features": ["gpu_nic_numa"], "dra_driver_expected_nodes": list(control_plane.nodes),
                 "dra_driver_wait_retries": 2, "dra_driver_wait_delay": 1}
    run = lab.converge(WAIT, extra_vars=wait_vars)
    assert run.changed == 0 and run.count("ignored") == 0, run.describe()
    assert f"(item={NIC_DRIVER})" in run.flat, run.describe()

    api = resource_api(control_plane.api_client)
    cluster.stop_process(f"plugin-net-{node}")
    try:
        for rslice in api.list_resource_slice(field_selector=f"spec.driver={NIC_DRIVER},spec.nodeName={node}").items:
            api.delete_resource_slice(rslice.metadata.name)
        run = lab.run(WAIT, extra_vars=wait_vars)
        assert run.rc != 0, run.describe()
        assert f"publishes {DEVICES_PER_NODE} devices of driver {NIC_DRIVER}" in run.flat, run.describe()
        assert f"{node}: 0/{DEVICES_PER_NODE} devices, 0 slice(s), Ready" in run.flat, run.describe()
        assert f"devices of driver {DRIVER}." not in run.flat, "the GPUs are all there: " + run.describe()
    finally:
        cluster.start_process(f"plugin-net-{node}")
        wait_for(f"{node} to publish its NICs again", lambda: sum(
            len(s.spec.devices or []) for s in api.list_resource_slice(
                field_selector=f"spec.driver={NIC_DRIVER},spec.nodeName={node}").items) == DEVICES_PER_NODE)
    assert published_devices(control_plane.api_client) == {n: DEVICES_PER_NODE for n in control_plane.nodes}
