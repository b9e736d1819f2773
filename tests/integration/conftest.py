"""Integration tier: one real control plane (tests/harness/local_cluster) per test session.

The `control_plane` fixture builds missing binaries with python -m dralab_build.binaries,
starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and
one dra-example-kubeletplugin per fake node in a temporary directory, and stops
everything and removes the directory when the session ends. If pytest is
killed, the processes die with it (the next session removes the directory).

Environment:
  DRALAB_CLUSTER_DIR    use a cluster already started with
                        `cluster.py up --dir DIR` (left running afterwards)
  DRALAB_FEATURE_GATES  feature gates for the components, e.g. DRAConsumableCapacity

One cluster per set of DRA features: the session's `dra_features` fixture
(none here) says which entries of dralab_dra_features the cluster runs with;
their gates, API versions and driver values come from
plugins/module_utils/dra/features.py, as the roles get them. A folder whose
tests need other features overrides `dra_features` in its conftest.py and runs
as a session of its own (tests/integration/features/: `make test-integration`
runs it after this folder); collecting it together with the rest is refused,
and `pytest tests/integration` leaves it out.

The tests share that one cluster; the modules may run in any order. Each module
leaves the lab as it found it (the autouse `leaves_the_lab_as_found` fixture
fails the module otherwise): the same objects in every namespace, no workloads,
the same namespaces and DeviceClasses, every node publishing its GPUs. A module
whose tests use `workshop` gets the converged lab before its first test. `lab`
runs the collection's playbooks (tests/integration/playbook.py); `workshop` is
the converged lab: driver.yml (the DeviceClass menu) and users.yml (72 seats)
applied once per session.

Options (to prove the order does not matter):
  --reverse-modules        run this directory's modules in reverse order
  --shuffle-modules SEED   run them in a random order from SEED
Tests inside a module keep their order.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TMP_PREFIX = "dralab-it-"

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The collection's code imports as ansible_collections.dralab.workshop from this checkout (collections/ holds a
# link to the repository; ansible_collections is a namespace package, beside the one of the ansible package).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "collections"))
from k8s_helpers import api_from_kubeconfig, lab_changes, lab_state  # noqa: E402  (tests/integration/k8s_helpers.py)
from playbook import Lab, converge_lab  # noqa: E402  (tests/integration/playbook.py)

sys.path.insert(0, str(REPO / "tests" / "harness"))
sys.path.insert(0, str(REPO))
from dralab_build.binaries.components import BY_NAME  # noqa: E402  (dralab_build/binaries: where the binaries are)
from dralab_build.binaries.versions import binary_path  # noqa: E402
from local_cluster.control_plane import Cluster, remove_stale  # noqa: E402  (tests/harness/local_cluster)

SETTLE_SECONDS = 180  # for what a module deleted to be gone (namespaces, pods) before the next module starts


@dataclass
class ControlPlane:
    dir: Path
    kubeconfig: Path
    api_client: object  # kubernetes.client.ApiClient, admin (system:masters)
    nodes: list[str]
    feature_gates: str = ""
    cluster: object = field(default=None, repr=False)  # local_cluster.control_plane.Cluster

    @staticmethod
    def binary(name: str) -> Path:
        """Path of a binary dralab_build built, e.g. binary("kubectl")."""
        return binary_path(BY_NAME[name])


@pytest.fixture(scope="session")
def dra_features() -> list[str]:
    """The dralab_dra_features of this session's cluster (a folder's conftest.py overrides it)."""
    return []


def feature_cluster_options(features: list[str]) -> dict:
    """Cluster() options for DRA features: gates, --runtime-config, driver values and the chart's extra releases
    (a plugin per node each), from the collection's table."""
    from ansible_collections.dralab.workshop.plugins.module_utils.dra import features as table
    gates = ",".join(filter(None, [*table.feature_gates(features), os.environ.get("DRALAB_FEATURE_GATES", "")]))
    return {"feature_gates": gates, "runtime_config": table.api_versions(features),
            "driver_values": table.helm_values(features), "driver_releases": table.driver_releases(features)}


@pytest.fixture(scope="session")
def control_plane(request, dra_features) -> ControlPlane:
    existing = os.environ.get("DRALAB_CLUSTER_DIR")
    if existing:
        cluster = Cluster(existing)
        cluster.nodes = cluster.load_state()["nodes"]
    else:
        # Build whatever is missing (with a warm cache: a few file checks).
        subprocess.run([sys.executable, "-m", "dralab_build.binaries"], cwd=REPO, check=True)
        remove_stale(Path(tempfile.gettempdir()), TMP_PREFIX)
        directory = tempfile.mkdtemp(prefix=TMP_PREFIX)  # short: unix socket paths live here
        cluster = Cluster(directory, die_with_parent=True, **feature_cluster_options(dra_features))
        request.addfinalizer(cluster.down)  # also if up() fails half-way
        cluster.up()
    api = cluster.api_client()
    request.addfinalizer(api.close)
    return ControlPlane(dir=cluster.dir, kubeconfig=cluster.kubeconfig, api_client=api,
                        nodes=list(cluster.nodes), feature_gates=cluster.feature_gates,
                        cluster=cluster)


def pytest_addoption(parser):
    group = parser.getgroup("dralab integration")
    group.addoption("--reverse-modules", action="store_true", help="run the integration modules in reverse order")
    group.addoption("--shuffle-modules", metavar="SEED", type=int, help="run the integration modules in a random order")


def _session_folders(config) -> list[Path]:
    """Sub-folders of this one that run as sessions of their own (a conftest.py calling playbook.feature_session)."""
    here = Path(__file__).resolve().parent
    return [path.parent for path in here.glob("*/conftest.py") if "feature_session(" in path.read_text()]


def pytest_ignore_collect(collection_path, config):
    """Leave out the folders with sessions of their own unless a command-line argument names them."""
    path = Path(collection_path).resolve()
    if path not in _session_folders(config):
        return None
    named = [Path(str(arg).split("::", maxsplit=1)[0]).resolve() for arg in config.args]
    return True if not any(arg == path or path in arg.parents for arg in named) else None


def pytest_collection_modifyitems(session, config, items):
    """--reverse-modules / --shuffle-modules: reorder this directory's modules (tests keep their order inside)."""
    reverse, seed = config.getoption("--reverse-modules"), config.getoption("--shuffle-modules")
    here = Path(__file__).resolve().parent
    folders = _session_folders(config)
    sessions = {next((folder for folder in folders if folder in Path(str(item.fspath)).resolve().parents), here)
                for item in items}
    if len(sessions) > 1:
        raise pytest.UsageError("these tests need clusters with different DRA features: run "
                                + " and ".join(str(folder) for folder in sorted(sessions)) + " as separate sessions")
    slots = [i for i, item in enumerate(items) if Path(str(item.fspath)).resolve().parent == here]
    modules: dict[str, list] = {}
    for i in slots:
        modules.setdefault(str(items[i].fspath), []).append(items[i])
    order = list(modules)
    if reverse:
        order.reverse()
    if seed is not None:
        random.Random(seed).shuffle(order)
    for slot, item in zip(slots, [item for name in order for item in modules[name]]):
        items[slot] = item
    config.dralab_module_order = [Path(name).stem for name in order]


def pytest_report_collectionfinish(config, start_path, items):
    order = getattr(config, "dralab_module_order", None)
    return f"integration modules in this order: {', '.join(order)}" if order else None


@pytest.fixture(scope="module", autouse=True)
def leaves_the_lab_as_found(request, control_plane):
    """Every module starts on a settled lab (converged first when its tests use `workshop`) and must leave it so."""
    if any("workshop" in item.fixturenames for item in request.session.items if item.module is request.module):
        request.getfixturevalue("workshop")
    api = control_plane.api_client
    before = lab_state(api)
    yield
    deadline = time.monotonic() + SETTLE_SECONDS
    while (changes := lab_changes(before, lab_state(api))) and time.monotonic() < deadline:
        time.sleep(1)
    assert not changes, (f"{request.module.__name__} did not leave the lab as it found it "
                         f"({len(changes)} change(s)): " + "; ".join(changes[:30]))


@pytest.fixture(scope="session")
def lab(control_plane, tmp_path_factory) -> Lab:
    """Runs the collection's playbooks against the control plane (inventory, artifacts in tmp)."""
    return Lab(control_plane.kubeconfig, tmp_path_factory.mktemp("lab"))


@pytest.fixture(scope="session")
def workshop(lab) -> Lab:
    """The converged lab: the default DeviceClass menu (driver.yml) and 72 seats (users.yml)."""
    return converge_lab(lab)


@pytest.fixture
def seat_api(workshop):
    """seat_api("user10"): an API client with that seat's current kubeconfig file (closed afterwards)."""
    opened = []

    def make(seat):
        api = api_from_kubeconfig(workshop.seat_kubeconfig(seat))
        opened.append(api)
        return api
    yield make
    for api in opened:
        api.close()
