"""The pending-claim explainer against the real kube-scheduler: 60 generated claims, one at a time.

For each claim (varied selectors: memory thresholds, model, index ranges and sets; counts 1..3; All;
firstAvailable; matchAttribute) the test reads the cluster as the scheduler will see it, asks
dra_explain "allocatable now?", then creates a pod for the claim and waits for the scheduler's verdict
(claim allocated, or pod Unschedulable). Pending claims are deleted right after their verdict, so no
pod waits in the background and changes the occupancy; allocated ones stay and fill the lab, and some
are released again, so later claims meet a partly or fully occupied lab. Every verdict must agree.
"""

from __future__ import annotations

import json
import random

import pytest
from kubernetes.client.rest import ApiException

from ansible_collections.dralab.workshop.plugins.module_utils.dra import explain as dra_explain  # this checkout's (conftest.py)
from k8s_helpers import (DRIVER, allocated, core_api, delete_namespace, pod_body, pod_scheduled_condition,
                         resource_api, wait_default_service_account, wait_for)

NS = "explain-agreement"
CLASS = "explain-agreement.gpu.example.com"  # the test's own DeviceClass: the bare control plane has none
CLAIMS = 60
SEED = 20261201
MEMORY = "device.capacity['gpu.example.com'].memory.compareTo(quantity('%s')) >= 0"
MEMORY_GT = "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('%s'))"
INDEX_RANGE = ("device.attributes['gpu.example.com'].index >= %d && "
               "device.attributes['gpu.example.com'].index <= %d")
INDEX_IN = "device.attributes['gpu.example.com'].index in %s"
MODEL = "device.attributes['gpu.example.com'].model == '%s'"
VERSION = "device.attributes['gpu.example.com'].driverVersion.compareTo(semver('%s')) >= 0"


def _request(name, selectors, count=1, mode="ExactCount"):
    exactly = {"deviceClassName": CLASS, "allocationMode": mode}
    if mode == "ExactCount":
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


def generate_specs(rng):
    """CLAIMS claim specs (spec.devices) with varied selectors and counts."""
    specs = []
    for number in range(CLAIMS):
        shape = number % 10
        selectors = []
        if rng.random() < 0.5:
            selectors.append(MEMORY % rng.choice(["16Gi", "40Gi", "80Gi", "81Gi", "100Gi"]))
        if rng.random() < 0.3:
            selectors.append(MODEL % rng.choice(["LATEST-GPU-MODEL", "LATEST-GPU-MODEL", "H100"]))
        if rng.random() < 0.5:
            low = rng.randint(0, 7)
            selectors.append(INDEX_RANGE % (low, min(7, low + rng.randint(0, 3))))
        if rng.random() < 0.15:
            selectors.append(INDEX_IN % sorted(rng.sample(range(8), rng.randint(1, 3))))
        if rng.random() < 0.1:
            selectors.append(VERSION % rng.choice(["0.1.0", "1.0.0", "2.0.0"]))
        if rng.random() < 0.1:
            selectors.append(MEMORY_GT % rng.choice(["40Gi", "80Gi"]))
        if shape == 7:  # allocationMode All over an index range (per node)
            low = rng.randint(4, 7)
            specs.append({"requests": [_request("gpu", [INDEX_RANGE % (low, 7)], mode="All")]})
        elif shape == 8:  # firstAvailable: a rarely free or impossible choice first, then a fallback
            first = {"name": "big", "deviceClassName": CLASS, "count": rng.randint(1, 3),
                     "selectors": [{"cel": {"expression": MEMORY % rng.choice(["80Gi", "100Gi"])}}]}
            second = {"name": "small", "deviceClassName": CLASS, "count": 1,
                      "selectors": [{"cel": {"expression": INDEX_RANGE % (rng.randint(0, 4), 7)}}]}
            specs.append({"requests": [{"name": "gpu", "firstAvailable": [first, second]}]})
        elif shape == 9:  # two requests that must share an attribute
            attribute = rng.choice(["gpu.example.com/model", "gpu.example.com/index", "gpu.example.com/driverVersion"])
            specs.append({"requests": [_request("a", selectors[:1]), _request("b", [])],
                          "constraints": [{"requests": ["a", "b"], "matchAttribute": attribute}]})
        else:
            specs.append({"requests": [_request("gpu", selectors, count=rng.choice([1, 1, 2, 3]))]})
    return specs


def read_state(api):
    """The cluster as plain API dicts, like dra_collect reads it."""
    def items(call, *args):
        return json.loads(call(*args, _preload_content=False).data)["items"]
    resource, core = resource_api(api), core_api(api)
    return {
        "device_classes": items(resource.list_device_class),
        "slices": items(resource.list_resource_slice),
        "claims": items(resource.list_resource_claim_for_all_namespaces),
        "pods": items(core.list_pod_for_all_namespaces),
        "nodes": items(core.list_node),
        "namespaces": items(core.list_namespace),
    }


def scheduler_verdict(api, name):
    """True once the claim is allocated, False once the scheduler has turned its pod down."""
    claim = resource_api(api).read_namespaced_resource_claim(name, NS)
    if allocated(claim):
        return True
    cond = pod_scheduled_condition(core_api(api).read_namespaced_pod(name, NS))
    if cond is not None and cond.status == "False" and cond.reason == "Unschedulable":
        return False
    return None


def release(api, name):
    """Delete a pod and its claim and wait until both are gone (the devices are free again)."""
    core, resource = core_api(api), resource_api(api)
    for call in (core.delete_namespaced_pod, resource.delete_namespaced_resource_claim):
        try:
            call(name, NS, grace_period_seconds=0)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def gone():
        for call in (core.read_namespaced_pod, resource.read_namespaced_resource_claim):
            try:
                call(name, NS)
                return False
            except ApiException as exc:
                if exc.status != 404:
                    raise
        return True
    wait_for(f"{NS}/{name} to be deleted", gone, timeout=60)


@pytest.fixture(scope="module")
def namespace(control_plane):
    api = control_plane.api_client
    resource_api(api).create_device_class({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}})
    try:
        core_api(api).create_namespace({"metadata": {"name": NS}})
        wait_default_service_account(api, NS)
        yield NS
    finally:
        delete_namespace(api, NS)
        resource_api(api).delete_device_class(CLASS)


def test_explainer_agrees_with_the_scheduler(control_plane, namespace, capsys):
    api = control_plane.api_client
    rng = random.Random(SEED)
    held = []
    rows = []
    for number, spec in enumerate(generate_specs(rng)):
        name = "c%02d" % number
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name}, "spec": {"devices": spec}}
        resource_api(api).create_namespaced_resource_claim(NS, body)
        state = read_state(api)
        claim = next(c for c in state["claims"] if (c["metadata"]["namespace"], c["metadata"]["name"]) == (NS, name))
        answer = dra_explain.explain_claim(claim, **state)
        core_api(api).create_namespaced_pod(NS, pod_body(name, claim=name))
        verdict = wait_for(f"the scheduler's verdict on {NS}/{name}",
                           lambda: (v,) if (v := scheduler_verdict(api, name)) is not None else None, timeout=60)[0]
        rows.append((name, answer["allocatable"], verdict, answer["reason"], answer["sentence"]))
        if verdict:
            held.append(name)
        else:
            release(api, name)
        # Vary the occupancy: the lab fills up, and GPUs come back now and then, more often when it is full.
        while held and rng.random() < (0.1 if answer["reason"] != "all_matching_in_use" else 0.4):
            release(api, held.pop(rng.randrange(len(held))))
    for name in held:
        release(api, name)

    agree = sum(1 for _n, predicted, actual, _r, _s in rows if predicted == actual)
    reasons = {}
    for _n, _p, _a, reason, _s in rows:
        reasons[reason] = reasons.get(reason, 0) + 1
    with capsys.disabled():
        print(f"\nexplainer agreement with kube-scheduler: {agree}/{len(rows)} claims "
              f"({sum(1 for r in rows if r[2])} allocated, {sum(1 for r in rows if not r[2])} pending); "
              f"reasons: {reasons}")
    disagreements = [r for r in rows if r[1] != r[2]]
    assert not disagreements, "explainer and scheduler disagree on %d of %d claims: %s" % (
        len(disagreements), len(rows), disagreements)
    # The generated set is varied enough to mean something: both verdicts and several reasons occur.
    assert len(rows) >= 50
    assert 10 <= sum(1 for r in rows if r[2]) <= len(rows) - 10
    assert {"allocatable", "no_matching_device", "too_few_per_node", "constraint_unsatisfiable"} <= set(reasons)
    assert reasons.get("all_matching_in_use", 0) >= 5, "the lab was never full enough: %s" % reasons
