"""The dra_driver role's wait (tasks/wait.yml) against the real plugins' ResourceSlices: it counts the devices
with dra_health on the controller, passes when every expected node publishes exactly its devices (also in check
mode), and fails naming each node with what it publishes when one does not."""

from __future__ import annotations

from pathlib import Path

from k8s_helpers import DRIVER, published_devices
from playbook import DEVICES_PER_NODE

WAIT = Path(__file__).resolve().parent / "playbooks" / "driver_wait.yml"


def wait_vars(control_plane, **more):
    return {"dra_driver_expected_nodes": list(control_plane.nodes), "dra_driver_wait_retries": 2,
            "dra_driver_wait_delay": 1, **more}


def test_every_node_publishing_its_devices_passes_also_in_check_mode(control_plane, lab):
    assert published_devices(control_plane.api_client) == {n: DEVICES_PER_NODE for n in control_plane.nodes}
    run = lab.converge(WAIT, extra_vars=wait_vars(control_plane))
    assert run.changed == 0 and run.count("ignored") == 0, run.describe()
    check = lab.converge(WAIT, check=True, extra_vars=wait_vars(control_plane))
    assert check.changed == 0, check.describe()


def test_a_node_short_of_its_devices_fails_naming_every_node(control_plane, lab):
    # 9 per node: every plugin publishes 8, so no node is complete (the count must be exact, not at least).
    run = lab.run(WAIT, extra_vars=wait_vars(control_plane, dra_driver_devices_per_node=DEVICES_PER_NODE + 1,
                                             dra_driver_expected_nodes=[*control_plane.nodes, "ghost"]))
    assert run.rc != 0 and run.failed == 1, run.describe()
    assert f"Not every node of dra_driver_expected_nodes publishes 9 devices of driver {DRIVER}" in run.flat, \
        run.describe()
    for node in control_plane.nodes:
        assert f"{node}: 8/9 devices, 1 slice(s), Ready" in run.flat, run.describe()
    assert "ghost: 0/9 devices, 0 slice(s), not in the cluster" in run.flat, run.describe()
    # ansible-core 2.21 names the role before the task in the retry line ("dralab.workshop.dra_driver : Wait ...").
    assert "FAILED - RETRYING: [localhost]: " in run.flat, run.describe()
    assert "Wait until every node publishes its devices (1 retries left)" in run.flat, run.describe()
