"""The ResourceClaim and pods that can-has-gpu creates, as plain dicts."""

from __future__ import annotations

import math

from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import build_pools
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


def share_capacity(slices: list[dict], driver: str, memory: str) -> dict[str, str]:
    """What a share of `memory` asks of a shared GPU: that memory, and the same part of the card's compute (rounded
    up; the driver's default would be all of it). Refusal when no GPU of the lab is shared."""
    cards = [d for pool in build_pools(slices).values() if pool["driver"] == driver
             for d in pool["devices"].values() if d.get("allowMultipleAllocations")]
    if not cards:
        raise ValueError("no GPU of this lab is shared: --share needs the lab's shared GPUs (the instructor's "
                         "dralab_dra_features: [consumable_capacity]); reserve a whole GPU instead.")
    capacity = cards[0].get("capacity") or {}
    asked = {"memory": memory.strip()}
    total_memory = parse_quantity((capacity.get("memory") or {}).get("value") or "0")
    total_compute = (capacity.get("compute") or {}).get("value")
    if total_compute and total_memory > 0:
        part = parse_quantity(memory) * parse_quantity(total_compute) / total_memory
        asked["compute"] = str(max(int(math.ceil(min(part, parse_quantity(total_compute)))), 1))
    return asked


def share_of(result: dict, memory: str | None) -> dict | None:
    """What an allocation consumes of a shared GPU when it is a share (less than the card's memory), else None: a
    whole card on a lab whose GPUs are shareable is no share."""
    consumed = result.get("consumedCapacity") or {}
    if not consumed:
        return None
    try:
        whole = memory is not None and parse_quantity(consumed.get("memory", memory)) >= parse_quantity(memory)
    except ValueError:
        whole = False
    return None if whole else dict(consumed)


def claim_body(device_class: str, count: int, selectors: list[str], expires: str, lease_for: str,
               capacity: dict[str, str] | None = None) -> dict:
    exactly = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if capacity:
        exactly["capacity"] = {"requests": dict(capacity)}
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
