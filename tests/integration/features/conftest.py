"""The DRA features session: one cluster with every feature the demos of docs/demos need switched on.

tests/integration/conftest.py starts the cluster with what these features need (their gates on every
component, resource.k8s.io/v1alpha3, the driver's values as the chart hands them to the kubelet plugin),
from plugins/module_utils/dra/features.py; `workshop` converges the lab with the same dralab_dra_features
(the DeviceClasses they add), three seats that may hold three claims each (the consumable-capacity demo
makes three). gpu_nic_numa adds a second plugin per node (the chart's net release: NICs of net.example.com),
both built by the lab with resource.kubernetes.io/pcieRoot (dralab_build/binaries/source_edits.py, SOURCE_EDITS). Run it
as a session of its own: `pytest tests/integration/features` (make test-integration does, after the default
session).

Not here: partitionable_devices (GPU_PARTITIONS changes every device of the cluster, so it needs a cluster of
its own) and binding_conditions (the driver's controller is not part of the harness).
"""

from __future__ import annotations

import pytest

from k8s_helpers import core_api, wait_for
from playbook import feature_session
from seat_demo import SEAT, Kubectl, wait_claims_gone

FEATURES = ["consumable_capacity", "prioritized_list", "device_status", "extended_resource", "device_taints",
            "admin_access", "gpu_nic_numa"]
SEATS = 3
LAB_VARS = {"dralab_dra_features": FEATURES, "dralab_seats": SEATS, "dralab_gpus_per_seat": 3}


dra_features, workshop = feature_session(FEATURES, LAB_VARS)


@pytest.fixture(scope="module")
def seat(control_plane, workshop) -> Kubectl:
    """kubectl as seat user01 (the kubeconfig users.yml wrote for it)."""
    return Kubectl(control_plane.binary("kubectl"), workshop.seat_kubeconfig(SEAT))


@pytest.fixture(scope="module")
def instructor(control_plane) -> Kubectl:
    return Kubectl(control_plane.binary("kubectl"), control_plane.kubeconfig)


@pytest.fixture
def cleanup(seat, control_plane):
    """Deletes what a test applied as the seat (kubectl delete -f of the same files) and waits until it is gone."""
    applied = []
    yield applied
    for args in applied:
        seat("delete", "--ignore-not-found", "--wait=false", *args)
    core = core_api(control_plane.api_client)
    wait_for(f"no pods in {SEAT}", lambda: not core.list_namespaced_pod(SEAT).items, timeout=120)
    wait_claims_gone(control_plane.api_client)
