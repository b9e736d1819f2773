"""Smoke test of the integration harness: the control plane, fake nodes, emulated GPUs,
and a ResourceClaim allocated by the real scheduler."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

DRIVER = "gpu.example.com"
DEVICES_PER_NODE = 8


def wait_for(what, check, timeout=90, interval=0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def test_kube_apiserver_is_v1_35_4(control_plane):
    out = subprocess.run([control_plane.binary("kube-apiserver"), "--version"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "Kubernetes v1.35.4"
    assert client.VersionApi(control_plane.api_client).get_code().git_version == "v1.35.4"


def test_three_ready_fake_nodes(control_plane):
    nodes = client.CoreV1Api(control_plane.api_client).list_node().items
    assert sorted(n.metadata.name for n in nodes) == ["node-1", "node-2", "node-3"]
    for node in nodes:
        assert node.metadata.annotations.get("kwok.x-k8s.io/node") == "fake"
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert ready and ready[0].status == "True", node.metadata.name


def test_each_node_publishes_eight_gpus(control_plane):
    slices = client.ResourceV1Api(control_plane.api_client).list_resource_slice().items
    assert len(slices) == 3
    by_node = {s.spec.node_name: s for s in slices}
    assert sorted(by_node) == ["node-1", "node-2", "node-3"]
    for node, rs in by_node.items():
        assert rs.spec.driver == DRIVER
        assert rs.spec.pool.name == node
        assert sorted(d.name for d in rs.spec.devices) == [f"gpu-{i}" for i in range(DEVICES_PER_NODE)]


@pytest.fixture
def namespace(control_plane):
    core = client.CoreV1Api(control_plane.api_client)
    name = f"smoke-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name}})
    # Pods are admitted only once the controller manager created the default ServiceAccount.
    wait_for("ServiceAccount default", lambda: any(
        sa.metadata.name == "default" for sa in core.list_namespaced_service_account(name).items))
    yield name
    core.delete_namespace(name)
    wait_for(f"namespace {name} deleted", lambda: name not in {ns.metadata.name for ns in core.list_namespace().items})


@pytest.fixture
def gpu_device_class(control_plane):
    resource = client.ResourceV1Api(control_plane.api_client)
    created = False
    try:
        resource.create_device_class({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
        })
        created = True
    except ApiException as exc:
        if exc.status != 409:  # already there (e.g. a reused cluster)
            raise
    yield DRIVER
    if created:
        resource.delete_device_class(DRIVER)


def test_scheduler_allocates_a_claim(control_plane, namespace, gpu_device_class):
    api = control_plane.api_client
    resource, core = client.ResourceV1Api(api), client.CoreV1Api(api)
    resource.create_namespaced_resource_claim(namespace, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "one-gpu"},
        "spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": gpu_device_class}}]}},
    })
    claim = resource.read_namespaced_resource_claim("one-gpu", namespace)
    assert claim.status is None or claim.status.allocation is None  # nothing before a pod

    core.create_namespaced_pod(namespace, {
        "metadata": {"name": "uses-gpu"},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "one-gpu"}],
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10.1",
                            "resources": {"claims": [{"name": "gpu"}]}}],
        },
    })
    pod = wait_for("pod Running on a fake node", lambda: (
        p if (p := core.read_namespaced_pod("uses-gpu", namespace)).status.phase == "Running" else None))
    claim = resource.read_namespaced_resource_claim("one-gpu", namespace)

    allocation = claim.status.allocation
    assert allocation is not None
    [result] = allocation.devices.results
    assert result.driver == DRIVER
    assert result.pool == pod.spec.node_name  # allocated on the node the pod was bound to
    assert result.device.startswith("gpu-")
    assert [r.uid for r in claim.status.reserved_for] == [pod.metadata.uid]
