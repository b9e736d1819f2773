"""The partitionable-devices session: the driver publishes each card as its partitions and itself whole
(kubeletPlugin.gpuPartitions), which changes every device of the cluster, so it runs on a cluster of its own:
`pytest tests/integration/partitions` (make test-integration does, after the others)."""

from __future__ import annotations

import pytest

FEATURES = ["partitionable_devices"]
LAB_VARS = {"dralab_dra_features": FEATURES, "dralab_seats": 1}


@pytest.fixture(scope="session")
def dra_features() -> list[str]:
    return list(FEATURES)


@pytest.fixture(scope="session")
def workshop(lab):
    """The menu with the partition class (driver.yml) and one seat (users.yml)."""
    lab.converge("playbooks/driver.yml", extra_vars=LAB_VARS)
    lab.converge("playbooks/users.yml", extra_vars=LAB_VARS)
    return lab
