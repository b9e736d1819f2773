"""A node loses its GPUs: its DRA kubelet plugin stops and its ResourceSlice is gone, or the plugin
comes back publishing fewer devices. dra_health names the node and the shortfall, playbooks/health.yml
fails; once the plugin publishes its 8 GPUs again, the lab is healthy."""

from __future__ import annotations

import pytest

from k8s_helpers import DRIVER, published_devices, resource_api, wait_for
from playbook import DEVICES_PER_NODE, problems_of

GPUS = 24


@pytest.fixture(scope="module")
def node(control_plane, workshop):
    """The node whose plugin the tests stop; it publishes its 8 GPUs again afterwards."""
    name = control_plane.nodes[-1]
    api = control_plane.api_client
    yield name
    cluster = control_plane.cluster
    if published_devices(api).get(name) != DEVICES_PER_NODE:
        cluster.stop_plugin(name)
        cluster.start_plugin(name, num_devices=DEVICES_PER_NODE)
    wait_for(f"{name} to publish {DEVICES_PER_NODE} GPUs",
             lambda: published_devices(api).get(name) == DEVICES_PER_NODE, timeout=60)


def test_node_without_its_slice_is_reported_and_fails_health(control_plane, workshop, node):
    api = control_plane.api_client
    control_plane.cluster.stop_plugin(node)
    resource_api(api).delete_collection_resource_slice(field_selector=f"spec.nodeName={node}")
    wait_for(f"{node}'s ResourceSlice gone", lambda: node not in published_devices(api), timeout=30)

    report = workshop.health()
    assert report["healthy"] is False
    [problem] = problems_of(report, "node_missing_slice")
    assert problem["severity"] == "error" and problem["node"] == node
    assert (problem["published"], problem["expected"]) == (0, DEVICES_PER_NODE)
    assert f"node {node} publishes no ResourceSlice for driver {DRIVER}" in problem["reason"]
    row = {n["name"]: n for n in report["nodes"]}[node]
    assert (row["published"], row["expected"], row["slices"]) == (0, DEVICES_PER_NODE, 0)
    summary = report["summary"]
    assert summary["devices_published"] == GPUS - DEVICES_PER_NODE and summary["devices_expected"] == GPUS
    assert summary["nodes_publishing"] == 2 and summary["nodes_expected"] == 3

    run = workshop.run("playbooks/health.yml")
    assert run.rc != 0 and run.failed == 1, run.describe()
    assert f"Devices ({DRIVER}): 16/24 published on 2/3 nodes" in run.flat, run.describe()
    assert f"ERROR Node {node}: node {node} publishes no ResourceSlice for driver {DRIVER}" in run.flat
    assert "The DRA lab is unhealthy: 1 error(s)" in run.flat


def test_node_short_of_devices_is_reported(control_plane, workshop, node):
    api = control_plane.api_client
    control_plane.cluster.start_plugin(node, num_devices=6)
    wait_for(f"{node} to publish 6 GPUs", lambda: published_devices(api).get(node) == 6, timeout=60)

    report = workshop.health()
    assert report["healthy"] is False
    [problem] = problems_of(report, "device_count_short")
    assert problem["node"] == node and (problem["published"], problem["expected"]) == (6, DEVICES_PER_NODE)
    assert f"node {node} publishes 6 of 8 {DRIVER} devices (2 short)" in problem["reason"]
    assert not problems_of(report, "node_missing_slice")
    assert report["summary"]["devices_published"] == GPUS - 2


def test_restarted_plugin_makes_the_lab_healthy_again(control_plane, workshop, node):
    api = control_plane.api_client
    control_plane.cluster.stop_plugin(node)
    control_plane.cluster.start_plugin(node, num_devices=DEVICES_PER_NODE)
    wait_for(f"{node} to publish 8 GPUs", lambda: published_devices(api).get(node) == DEVICES_PER_NODE, timeout=60)

    report = workshop.health()
    assert report["healthy"] is True, report["problems"]
    assert report["summary"]["devices_published"] == report["summary"]["devices_free"] == GPUS
    assert all(p["consistent"] for p in report["pools"]), report["pools"]
    run = workshop.converge("playbooks/health.yml")
    assert "DRA lab healthy: 0 error(s), 0 warning(s)" in run.flat, run.describe()
    assert f"Devices ({DRIVER}): 24/24 published on 3/3 nodes, 0 allocated, 24 free" in run.flat, run.describe()
