"""Small helpers on the Kubernetes Python client for the integration tests."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from ansible_collections.dralab.workshop.plugins.module_utils.values import MANAGED_BY, MANAGED_BY_LABEL, SEAT_LABEL

DRIVER = "gpu.example.com"
MANAGED = f"{MANAGED_BY_LABEL}={MANAGED_BY}"  # label selector of every object the collection manages
SEAT_SELECTOR = f"{MANAGED},{SEAT_LABEL}"
IMAGE = "registry.k8s.io/pause:3.10.1"  # kwok never pulls it


def wait_for(what, check, timeout=90, interval=0.5):
    """Poll check() until it returns something truthy; fail the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = check()
        except ApiException as exc:  # e.g. an object not created yet
            value, last = None, exc
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last})" if last else ""))
        time.sleep(interval)


def api_from_kubeconfig(path: str | Path) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(path))


def resource_api(api) -> client.ResourceV1Api:
    return client.ResourceV1Api(api)


def core_api(api) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def claim_body(name: str, device_class: str = DRIVER, selectors: list[str] | None = None,
               labels: dict | None = None) -> dict:
    exactly = {"deviceClassName": device_class}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def template_body(name: str, device_class: str = DRIVER, selectors: list[str] | None = None) -> dict:
    claim = claim_body(name, device_class, selectors)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name}, "spec": {"spec": claim["spec"]}}


def pod_body(name: str, claim: str | None = None, template: str | None = None) -> dict:
    """A pod whose container uses one claim, given by name (shared) or by template (its own)."""
    source = {"resourceClaimName": claim} if claim else {"resourceClaimTemplateName": template}
    spec = {
        "terminationGracePeriodSeconds": 0,
        "resourceClaims": [{"name": "gpu", **source}],
        "containers": [{"name": "ctr", "image": IMAGE, "resources": {"claims": [{"name": "gpu"}]}}],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def expect_api_error(status: int, call, *args, **kwargs) -> ApiException:
    """call(*args) must fail with HTTP `status`; returns the exception (its .body has the message)."""
    with pytest.raises(ApiException) as info:
        call(*args, **kwargs)
    assert info.value.status == status, f"expected HTTP {status}, got {info.value.status}: {info.value.body}"
    return info.value


def seat_namespaces(api) -> list[str]:
    return sorted(ns.metadata.name for ns in core_api(api).list_namespace(label_selector=SEAT_SELECTOR).items)


def allocated(claim) -> list[tuple[str, str]]:
    """(pool, device) of each device allocated to a claim object."""
    if not claim.status or not claim.status.allocation:
        return []
    return [(r.pool, r.device) for r in claim.status.allocation.devices.results or []]


def all_claims(api):
    return resource_api(api).list_resource_claim_for_all_namespaces().items


def allocated_claims(api):
    return [c for c in all_claims(api) if allocated(c)]


def published_devices(api) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in resource_api(api).list_resource_slice().items:
        if s.spec.driver == DRIVER and s.spec.node_name:
            counts[s.spec.node_name] = counts.get(s.spec.node_name, 0) + len(s.spec.devices or [])
    return counts


def pod_scheduled_condition(pod):
    for cond in (pod.status.conditions or []) if pod.status else []:
        if cond.type == "PodScheduled":
            return cond
    return None


def wait_pod_running(api, namespace: str, name: str, timeout=90):
    core = core_api(api)
    return wait_for(f"pod {namespace}/{name} Running", lambda: (
        p if (p := core.read_namespaced_pod(name, namespace)).status.phase == "Running" else None), timeout)


def wait_pod_unschedulable(api, namespace: str, name: str, timeout=90):
    """Until the scheduler has given up on the pod for now (PodScheduled=False with a message)."""
    core = core_api(api)

    def check():
        pod = core.read_namespaced_pod(name, namespace)
        cond = pod_scheduled_condition(pod)
        return pod if cond is not None and cond.status == "False" and cond.message else None
    return wait_for(f"pod {namespace}/{name} unschedulable", check, timeout)


def wait_default_service_account(api, namespace: str, timeout=60):
    core = core_api(api)
    wait_for(f"ServiceAccount {namespace}/default", lambda: core.read_namespaced_service_account("default", namespace),
             timeout)


def clear_namespaces(api, namespaces, timeout=120):
    """Delete every pod, ResourceClaim and ResourceClaimTemplate in the namespaces and wait until gone
    (test clean-up that does not depend on the roles under test)."""
    core, res = core_api(api), resource_api(api)
    body = client.V1DeleteOptions(grace_period_seconds=0, propagation_policy="Background")
    for ns in namespaces:
        core.delete_collection_namespaced_pod(ns, body=body)
        res.delete_collection_namespaced_resource_claim_template(ns)
        res.delete_collection_namespaced_resource_claim(ns)
    wanted = set(namespaces)

    def gone():
        left = [p for p in core.list_pod_for_all_namespaces().items if p.metadata.namespace in wanted]
        left += [c for c in res.list_resource_claim_for_all_namespaces().items if c.metadata.namespace in wanted]
        return not left
    wait_for(f"pods and claims gone from {len(namespaces)} namespace(s)", gone, timeout)


def delete_namespace(api, name: str, timeout=120):
    core = core_api(api)
    try:
        core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise

    def gone():
        try:
            core.read_namespace(name)
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False
    wait_for(f"namespace {name} deleted", gone, timeout)
