"""24 emulated GPUs: 8 per node, the DeviceClass menu, a healthy dra_health report."""

from __future__ import annotations

from collections import Counter

from conftest import CLUSTER_NODES, DEVICES_PER_NODE, DRIVER


def test_every_node_publishes_its_gpus(custom):
    slices = custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")["items"]
    devices = Counter()
    for s in slices:
        if s["spec"]["driver"] == DRIVER:
            devices[s["spec"].get("nodeName")] += len(s["spec"].get("devices", []))
    assert dict(devices) == {name: DEVICES_PER_NODE for name in CLUSTER_NODES}
    assert sum(devices.values()) == 24


def test_device_classes_are_present(custom):
    classes = custom.list_cluster_custom_object("resource.k8s.io", "v1", "deviceclasses")["items"]
    names = {c["metadata"]["name"] for c in classes}
    assert {"gpu.example.com", "gpu-40gi.example.com"} <= names


def test_dra_health_is_healthy(health):
    assert health["healthy"] is True, [p for p in health["problems"] if p["severity"] == "error"]
    summary = health["summary"]
    assert summary["devices_published"] == summary["devices_expected"] == 24
    assert summary["nodes_publishing"] == summary["nodes_expected"] == 3
