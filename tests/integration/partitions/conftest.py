"""The partitionable-devices session: the driver publishes each card as its partitions and itself whole
(kubeletPlugin.gpuPartitions), which changes every device of the cluster, so it runs on a cluster of its own:
`pytest tests/integration/partitions` (make test-integration does, after the others)."""

from __future__ import annotations

from playbook import feature_session

FEATURES = ["partitionable_devices"]
LAB_VARS = {"dralab_dra_features": FEATURES, "dralab_seats": 1}


dra_features, workshop = feature_session(FEATURES, LAB_VARS)
