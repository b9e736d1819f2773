"""Small helpers on the Kubernetes Python client for the integration tests."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import (
    baseline_names,
    credential_accounts,
    recorded_account,
)
from ansible_collections.dralab.workshop.plugins.module_utils.values import MANAGED_BY, MANAGED_BY_LABEL, SEAT_LABEL

DRIVER = "gpu.example.com"
MANAGED = f"{MANAGED_BY_LABEL}={MANAGED_BY}"  # label selector of every object the collection manages
SEAT_SELECTOR = f"{MANAGED},{SEAT_LABEL}"
IMAGE = "registry.k8s.io/pause:3.10.1"  # kwok never pulls it
EVENT_KINDS = {("", "events"), ("events.k8s.io", "events")}
# What kube-controller-manager puts in every namespace, whenever it gets to it.
NAMESPACE_FURNITURE = {("", "configmaps", "kube-root-ca.crt"), ("", "serviceaccounts", "default")}


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


def seat_account(api, seat: str) -> str:
    """The name of the seat's ServiceAccount now: the one its Namespace records (seat_model.recorded_account)."""
    return recorded_account(raw_get(api, f"/api/v1/namespaces/{seat}"))


def expect_no_access(call, *args, **kwargs) -> ApiException:
    """call(*args) must be refused: 401 (the token is unknown) or 403 (it names an account without rights: a
    revoked token kube-apiserver still accepts from its 10 s cache of successful authentications)."""
    with pytest.raises(ApiException) as info:
        call(*args, **kwargs)
    assert info.value.status in (401, 403), f"expected HTTP 401 or 403, got {info.value.status}: {info.value.body}"
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


def raw_get(api, path):
    """GET an API path as JSON with an ApiClient's credentials."""
    serialized = api.param_serialize("GET", path, header_params={"Accept": "application/json"},
                                     auth_settings=["BearerToken"])
    response = api.call_api(*serialized)
    data = response.read()
    assert 200 <= response.status < 300, (path, response.status, data[:300])
    return json.loads(data)


def namespaced_kinds(api):
    """(group, API path, resource) of every namespaced kind the API server serves and lists, events excepted."""
    sources = [("", "/api/v1")] + [(g["name"], "/apis/" + g["preferredVersion"]["groupVersion"])
                                   for g in raw_get(api, "/apis")["groups"]]
    for group, path in sources:
        for resource in raw_get(api, path)["resources"]:
            if "/" in resource["name"] or not resource["namespaced"] or (group, resource["name"]) in EVENT_KINDS:
                continue
            if "list" in resource["verbs"]:
                yield group, path, resource["name"]


# --- the lab as a test module must leave it -----------------------------------------------------------

def lab_state(api) -> dict:
    """What a test module leaves as it found it: every namespaced object outside kube-* (kind, namespace, name;
    events excepted), the namespaces, the DeviceClasses and the devices each node publishes."""
    objects = set()
    for group, path, resource in namespaced_kinds(api):
        for item in raw_get(api, f"{path}/{resource}").get("items") or []:
            meta = item["metadata"]
            if not meta["namespace"].startswith("kube-"):
                objects.add((group, resource, meta["namespace"], meta["name"]))
    namespace_items = raw_get(api, "/api/v1/namespaces")["items"]
    namespaces = {ns["metadata"]["name"]: ns["metadata"].get("labels") or {} for ns in namespace_items}
    classes = {dc["metadata"]["name"]: {"labels": dc["metadata"].get("labels") or {}, "spec": dc["spec"]}
               for dc in raw_get(api, "/apis/resource.k8s.io/v1/deviceclasses")["items"]}
    return {"objects": objects, "namespaces": namespaces, "classes": classes, "devices": published_devices(api),
            "accounts": credential_accounts(namespace_items)}


def lab_changes(before: dict, after: dict) -> list[str]:
    """What `after` changed of `before`, apart from what converging the lab adds (driver.yml, users.yml): seat
    namespaces, their baseline objects (seat_model.baseline_names) and DeviceClasses managed by the collection,
    and the previous credential generation's accounts a rotating reset replaced; and apart from the
    NAMESPACE_FURNITURE of any namespace."""
    def seat(labels):
        return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and SEAT_LABEL in labels

    seats = {name for name, labels in after["namespaces"].items() if seat(labels)}

    def rotated_away(ns, resource, name):
        """A seat's baseline object of its previous credential generation (a rotating reset replaced it)."""
        old = before["accounts"].get(ns)
        return (ns in seats and after["accounts"].get(ns) != old
                and name in baseline_names(ns, account=old).get(resource, set()))

    changes = [f"gone: {ns} {resource} {name}" for _g, resource, ns, name in sorted(before["objects"] - after["objects"])
               if not rotated_away(ns, resource, name)]
    changes += [f"left behind: {ns} {resource} {name}" for group, resource, ns, name in sorted(after["objects"] - before["objects"])
                if (group, resource, name) not in NAMESPACE_FURNITURE
                and not (ns in seats and name in baseline_names(
                    ns, account=after["accounts"].get(ns)).get(resource, set()))]
    changes += [f"namespace gone: {name}" for name in sorted(set(before["namespaces"]) - set(after["namespaces"]))]
    changes += [f"namespace left behind: {name}" for name in sorted(set(after["namespaces"]) - set(before["namespaces"]))
                if name not in seats]
    for name in sorted(set(before["classes"]) | set(after["classes"])):
        old, new = before["classes"].get(name), after["classes"].get(name)
        if old is None and new["labels"].get(MANAGED_BY_LABEL) != MANAGED_BY:
            changes.append(f"DeviceClass left behind: {name}")
        elif old is not None and new != old:
            changes.append(f"DeviceClass {'gone' if new is None else 'changed'}: {name}")
    if after["devices"] != before["devices"]:
        changes.append(f"published devices per node: {before['devices']} before, {after['devices']} after")
    return changes


def remove_board_identity(api, name: str = "dralab-board", namespace: str = "dralab-system"):
    """Delete what playbooks/board.yml makes in the cluster (its read-only identity), missing ones ignored."""
    rbac, core = client.RbacAuthorizationV1Api(api), client.CoreV1Api(api)
    for delete, args in ((rbac.delete_cluster_role_binding, (f"{name}-read",)),
                         (rbac.delete_cluster_role, (f"{name}-read",)),
                         (core.delete_namespaced_secret, (f"{name}-token", namespace)),
                         (core.delete_namespaced_service_account, (name, namespace))):
        try:
            delete(*args)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
