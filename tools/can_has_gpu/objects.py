"""The ResourceClaim and pods that can-has-gpu creates, as plain dicts."""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_quantity

from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import LEASE_EXPIRES, LEASE_FOR

from .settings import CLAIM_LABEL, ROLE_LABEL, TOOL, TOOL_LABEL

CLAIM_PREFIX = "gpu-"
REQUEST = "gpu"


def memory_selector(driver: str, memory: str) -> str:
    """CEL: the device has at least `memory` of memory (capacity of the driver's domain).

    memory is a Kubernetes quantity (values.parse_quantity, the rule CEL's quantity() follows) above zero.
    """
    try:
        positive = parse_quantity(memory) > 0
    except ValueError:
        positive = False
    if not positive:
        raise ValueError(f"--memory {memory} is not a quantity: write it like 40Gi or 80Gi.")
    return f"device.capacity['{driver}'].memory.compareTo(quantity('{memory.strip()}')) >= 0"


def claim_body(device_class: str, count: int, selectors: list[str], expires: str, lease_for: str) -> dict:
    exactly = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"generateName": CLAIM_PREFIX, "labels": {TOOL_LABEL: TOOL},
                     "annotations": {LEASE_EXPIRES: expires, LEASE_FOR: lease_for}},
        "spec": {"devices": {"requests": [{"name": REQUEST, "exactly": exactly}]}},
    }


def _pod(name: str, claim: str, role: str, container: dict, restart: str) -> dict:
    container = dict(container, resources=dict(container.get("resources") or {}, claims=[{"name": REQUEST}]))
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {TOOL_LABEL: TOOL, ROLE_LABEL: role, CLAIM_LABEL: claim}},
        "spec": {
            "restartPolicy": restart,
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "resourceClaims": [{"name": REQUEST, "resourceClaimName": claim}],
            "containers": [container],
        },
    }


def holder_pod(claim: str, image: str) -> dict:
    """A tiny pod that keeps the claim reserved, so the GPU is allocated now and stays the seat's."""
    container = {"name": "holder", "image": image, "command": ["sleep", "2147483647"],
                 "resources": {"requests": {"cpu": "5m", "memory": "8Mi"},
                               "limits": {"cpu": "50m", "memory": "16Mi"}}}
    return _pod(f"{claim}-holder", claim, "holder", container, "Always")


def workload_pod(name: str, claim: str, image: str, command: list[str]) -> dict:
    container = {"name": "main", "image": image}
    if command:
        container["command"] = list(command)
    return _pod(name, claim, "workload", container, "Never")
