"""The lab's occupancy: its allocated claims, as every seat may read them.

A seat reads only its own namespace, so it cannot see who holds the other
GPUs. dralab-lease-reaper, which reads every seat namespace, writes the
allocated claims of all seats (trimmed to what explains an allocation: name,
namespace, creation time, lease, requests, allocation, how many pods use it)
into the occupancy ConfigMap (seat_model.OCCUPANCY_CONFIGMAP_NAME, the
settings' `occupancy`) in each seat namespace; can-has-gpu hands them to the
explainer as the other claims of the lab.
"""

from __future__ import annotations

import json

from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import allocated_devices, build_pools

from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import LEASE_EXPIRES, LEASE_FOR
from ansible_collections.dralab.workshop.plugins.module_utils.values import SEAT_LABEL

from .settings import TOOL_LABEL

FORMAT = 1
# The ConfigMap's one key: {"format": FORMAT, "claims": [...]} as JSON.
OCCUPANCY_KEY = "claims.json"


def trim_claim(claim: dict, seat: str) -> dict:
    meta = claim.get("metadata") or {}
    status = claim.get("status") or {}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k in (LEASE_EXPIRES, LEASE_FOR)}
    trimmed_meta = {"name": meta.get("name"), "namespace": meta.get("namespace"),
                    "creationTimestamp": meta.get("creationTimestamp"), "uid": meta.get("uid"),
                    "labels": {SEAT_LABEL: seat}, "annotations": annotations}
    if TOOL_LABEL in (meta.get("labels") or {}):
        trimmed_meta["labels"][TOOL_LABEL] = meta["labels"][TOOL_LABEL]
    reserved = [{"resource": r.get("resource"), "name": r.get("name"), "uid": r.get("uid")}
                for r in status.get("reservedFor") or []]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": trimmed_meta,
            "spec": claim.get("spec") or {},
            "status": {"allocation": status.get("allocation"), "reservedFor": reserved}}


def occupancy_claims(seat_namespaces: dict[str, str], claims: list[dict]) -> list[dict]:
    """The allocated claims of every seat namespace, trimmed, in a stable order."""
    rows = [trim_claim(c, seat_namespaces[(c.get("metadata") or {}).get("namespace")]) for c in claims
            if (c.get("metadata") or {}).get("namespace") in seat_namespaces and allocated_devices(c)]
    return sorted(rows, key=lambda c: (c["metadata"]["namespace"], c["metadata"]["name"]))


def occupancy_data(rows: list[dict]) -> dict[str, str]:
    """ConfigMap data: the rows as JSON, stable so that an unchanged occupancy is not written again."""
    return {OCCUPANCY_KEY: json.dumps({"format": FORMAT, "claims": rows}, sort_keys=True, separators=(",", ":"))}


def read_occupancy(configmap: dict | None) -> list[dict] | None:
    """The claims in an occupancy ConfigMap; None when there is no (readable) one."""
    if not configmap:
        return None
    try:
        payload = json.loads((configmap.get("data") or {}).get(OCCUPANCY_KEY) or "")
    except ValueError:
        return None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT or not isinstance(payload.get("claims"), list):
        return None
    return [c for c in payload["claims"] if isinstance(c, dict) and isinstance(c.get("metadata"), dict)]


def published_devices(slices: list[dict], driver: str) -> list[tuple[str, str, str]]:
    """(node, pool, device) of every device the driver publishes (dra/objects.py build_pools: the newest generation
    of each pool, as the scheduler sees it); node is the pool's name for a pool of no node."""
    found = [(pool["node"] or pool["pool"], pool["pool"], name)
             for pool in build_pools(slices).values() if pool["driver"] == driver for name in pool["devices"]]
    return sorted(set(found))


def free_devices(slices: list[dict], claims: list[dict], driver: str) -> list[tuple[str, str]]:
    """(node, device) of every published device no claim holds."""
    taken = {(r.get("pool"), r.get("device")) for c in claims for r in allocated_devices(c)
             if r.get("driver") == driver}
    return [(node, device) for node, pool, device in published_devices(slices, driver) if (pool, device) not in taken]
