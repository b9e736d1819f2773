"""Integration tier: one real control plane (tests/harness/cluster.py) per test session.

The `control_plane` fixture builds missing binaries with tests/harness/build.py,
starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and
one dra-example-kubeletplugin per fake node in a temporary directory, and stops
everything and removes the directory when the session ends. If pytest is
killed, the processes die with it (the next session removes the directory).

Environment:
  DRALAB_CLUSTER_DIR    use a cluster already started with
                        `cluster.py up --dir DIR` (left running afterwards)
  DRALAB_FEATURE_GATES  feature gates for the components, e.g. DRAConsumableCapacity
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"
TMP_PREFIX = "dralab-it-"


def _load_cluster_module():
    name = "dralab_harness_cluster"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HARNESS / "cluster.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


harness = _load_cluster_module()  # harness.Cluster, harness.build


@dataclass
class ControlPlane:
    dir: Path
    kubeconfig: Path
    api_client: object  # kubernetes.client.ApiClient, admin (system:masters)
    nodes: list[str]
    feature_gates: str = ""
    cluster: object = field(default=None, repr=False)  # harness.Cluster

    @staticmethod
    def binary(name: str) -> Path:
        """Path of a harness-built binary, e.g. binary("kubectl")."""
        return harness.build.binary_path(harness.build.BY_NAME[name])


@pytest.fixture(scope="session")
def control_plane(request) -> ControlPlane:
    existing = os.environ.get("DRALAB_CLUSTER_DIR")
    if existing:
        cluster = harness.Cluster(existing)
        cluster.nodes = cluster.load_state()["nodes"]
    else:
        # Build whatever is missing (with a warm cache: a few file checks).
        subprocess.run([sys.executable, str(HARNESS / "build.py")], check=True)
        harness.remove_stale(Path(tempfile.gettempdir()), TMP_PREFIX)
        directory = tempfile.mkdtemp(prefix=TMP_PREFIX)  # short: unix socket paths live here
        cluster = harness.Cluster(directory, feature_gates=os.environ.get("DRALAB_FEATURE_GATES", ""),
                                  die_with_parent=True)
        request.addfinalizer(cluster.down)  # also if up() fails half-way
        cluster.up()
    api = cluster.api_client()
    request.addfinalizer(api.close)
    return ControlPlane(dir=cluster.dir, kubeconfig=cluster.kubeconfig, api_client=api,
                        nodes=list(cluster.nodes), feature_gates=cluster.feature_gates,
                        cluster=cluster)
