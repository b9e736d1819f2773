"""The DRA features session: one cluster with every feature the demos of docs/demos need switched on.

tests/integration/conftest.py starts the cluster with what these features need (their gates on every
component, resource.k8s.io/v1alpha3, the driver's values as the chart hands them to the kubelet plugin),
from plugins/module_utils/dra_features.py; `workshop` converges the lab with the same dralab_dra_features
(the DeviceClasses they add), three seats that may hold three claims each (the consumable-capacity demo
makes three). Run it as a session of its own: `pytest tests/integration/features` (make test-integration
does, after the default session).

Not here: partitionable_devices (GPU_PARTITIONS changes every device of the cluster, so it needs a cluster of
its own) and binding_conditions (the driver's controller is not part of the harness).
"""

from __future__ import annotations

from playbook import feature_session

FEATURES = ["consumable_capacity", "prioritized_list", "device_status", "extended_resource", "device_taints",
            "admin_access"]
SEATS = 3
LAB_VARS = {"dralab_dra_features": FEATURES, "dralab_seats": SEATS, "dralab_gpus_per_seat": 3}


dra_features, workshop = feature_session(FEATURES, LAB_VARS)
