"""device_classes role (playbooks/driver.yml) against the real API server: the DeviceClass menu
is applied, CEL errors come back with the API server's message naming the class, and a class
dropped from the menu is deleted while a class created outside the role stays."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from k8s_helpers import DRIVER, MANAGED_BY, MANAGED_BY_LABEL

DESCRIPTION = "dralab.workshop/description"
GPU = f"device.driver == '{DRIVER}'"
MEM_40 = f"device.capacity['{DRIVER}'].memory.compareTo(quantity('40Gi')) >= 0"
MODEL = f"device.attributes['{DRIVER}'].model == 'LATEST-GPU-MODEL'"
GPU_CONFIG = {"apiVersion": "gpu.resource.example.com/v1alpha1", "kind": "GpuConfig",
              "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}}

CLASS_A = "dralab-it-a.example.com"
CLASS_B = "dralab-it-b.example.com"
FOREIGN = "dralab-it-foreign.example.com"  # created outside the role, never in the menu
BROKEN_SYNTAX = "dralab-it-broken.example.com"
BROKEN_NAME = "dralab-it-undeclared.example.com"

DEFAULT_CLASSES = {"gpu.example.com", "gpu-40gi.example.com"}

MENU = [
    {"name": "gpu.example.com", "description": "Any emulated GPU of the example driver.", "selectors": [GPU]},
    {"name": "gpu-40gi.example.com", "description": "An emulated GPU with at least 40Gi of memory.",
     "selectors": [f"{GPU} && {MEM_40}"]},
    {"name": CLASS_A, "description": "Integration test class A", "selectors": [GPU, MODEL],
     "config": [{"opaque": {"driver": DRIVER, "parameters": GPU_CONFIG}}]},
    {"name": CLASS_B, "description": "Integration test class B", "selectors": [{"cel": {"expression": MEM_40}}]},
]
BROKEN = [
    # Syntax error: the expression ends after an operator.
    {"name": BROKEN_SYNTAX, "selectors": [f"{GPU} && device.capacity['{DRIVER}'].memory.compareTo(quantity('40Gi')) >="]},
    # Compiles to nothing: `gpu` is not a variable (attributes are dynamic, so type errors only show at run time).
    {"name": BROKEN_NAME, "selectors": [GPU, f"gpu.driver == '{DRIVER}'"]},
]


def class_names(api) -> set[str]:
    return {dc.metadata.name for dc in client.ResourceV1Api(api).list_device_class().items}


def read_class(api, name):
    return client.ResourceV1Api(api).read_device_class(name)


@pytest.fixture(scope="module")
def foreign_class(control_plane, lab):
    """A DeviceClass made by someone else (no managed-by label); the default menu is restored afterwards."""
    api = control_plane.api_client
    resource = client.ResourceV1Api(api)
    resource.create_device_class({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": FOREIGN, "labels": {"app.kubernetes.io/managed-by": "someone-else"}},
        "spec": {"selectors": [{"cel": {"expression": GPU}}]},
    })
    yield FOREIGN
    run = lab.run("playbooks/driver.yml")  # back to the default menu: prunes A and B
    try:
        resource.delete_device_class(FOREIGN)
    except ApiException as exc:
        if exc.status != 404:
            raise
    assert run.rc == 0, run.describe()
    leftovers = {n for n in class_names(api) if n.startswith("dralab-it-")}
    assert not leftovers, f"DeviceClasses left by the test: {leftovers}"
    assert DEFAULT_CLASSES <= class_names(api)


def test_menu_is_applied(control_plane, lab, foreign_class):
    run = lab.converge("playbooks/driver.yml", extra_vars={"dralab_device_classes": MENU})
    assert run.changed >= 1

    api = control_plane.api_client
    for entry in MENU:
        dc = read_class(api, entry["name"])
        assert dc.metadata.labels.get(MANAGED_BY_LABEL) == MANAGED_BY, entry["name"]
        assert dc.metadata.annotations.get(DESCRIPTION) == entry["description"], entry["name"]
        expressions = [s if isinstance(s, str) else s["cel"]["expression"] for s in entry["selectors"]]
        assert [s.cel.expression for s in dc.spec.selectors] == expressions, entry["name"]
    config = read_class(api, CLASS_A).spec.config
    assert len(config) == 1 and config[0].opaque.driver == DRIVER
    assert config[0].opaque.parameters == GPU_CONFIG
    # The foreign class is not in the menu and is left as it was.
    foreign = read_class(api, FOREIGN)
    assert foreign.metadata.labels == {"app.kubernetes.io/managed-by": "someone-else"}


def test_invalid_cel_stops_in_preflight_before_any_change(control_plane, lab, foreign_class):
    before = class_names(control_plane.api_client)
    run = lab.run("playbooks/driver.yml", extra_vars={"dralab_device_classes": MENU + BROKEN})
    assert run.rc != 0 and run.failed == 1, run.describe()
    flat = run.flat
    assert f"dralab_device_classes[4] ({BROKEN_SYNTAX}).selectors[0] does not compile: syntax error" in flat, \
        run.describe()
    assert f"dralab_device_classes[5] ({BROKEN_NAME}).selectors[1] does not compile" in flat, run.describe()
    assert "undeclared reference to 'gpu'" in flat, run.describe()
    assert "Publish the DeviceClass menu" not in run.output, run.describe()
    assert class_names(control_plane.api_client) == before


@pytest.mark.parametrize("check", [False, True], ids=["apply", "check-mode"])
def test_invalid_cel_is_rejected_with_the_api_server_message(control_plane, lab, foreign_class, check):
    # Without the preflight, the role's own guard: the API server's message for each rejected class.
    run = lab.run("playbooks/driver.yml", "--skip-tags", "preflight",
                  extra_vars={"dralab_device_classes": MENU + BROKEN}, check=check)
    assert run.rc != 0 and run.failed == 1, run.describe()
    out = run.output
    assert "The API server rejected 2 DeviceClass(es) of dralab_device_classes" in out, run.describe()
    # One line per rejected class: its name, then the API server's own message.
    syntax = f"DeviceClass {BROKEN_SYNTAX}: DeviceClass.resource.k8s.io \"{BROKEN_SYNTAX}\" is invalid: " \
             "spec.selectors[0].cel.expression: Invalid value"
    assert syntax in out, run.describe()
    assert "compilation failed" in out and "Syntax error" in out, run.describe()
    undeclared = f"DeviceClass {BROKEN_NAME}: DeviceClass.resource.k8s.io \"{BROKEN_NAME}\" is invalid: " \
                 "spec.selectors[1].cel.expression: Invalid value"
    assert undeclared in out, run.describe()
    assert "undeclared reference to 'gpu'" in out, run.describe()
    names = class_names(control_plane.api_client)
    assert BROKEN_SYNTAX not in names and BROKEN_NAME not in names
    # The valid classes of that menu are still there.
    assert {CLASS_A, CLASS_B} <= names


def test_removed_entry_deletes_only_that_class(control_plane, lab, foreign_class):
    api = control_plane.api_client
    assert {CLASS_A, CLASS_B, FOREIGN} <= class_names(api)
    lab.converge("playbooks/driver.yml", extra_vars={"dralab_device_classes": [e for e in MENU if e["name"] != CLASS_B]})
    names = class_names(api)
    assert CLASS_B not in names
    assert {CLASS_A, FOREIGN} | DEFAULT_CLASSES <= names
