"""The lab's occupancy: every allocated claim of the cluster, as every seat may read it.

A seat reads only its own namespace, so it cannot see who holds the other
GPUs. dralab-lease-reaper, which reads the claims of every namespace, writes
the allocated claims of the cluster into the occupancy ConfigMap
(seat_model.OCCUPANCY_CONFIGMAP_NAME, the settings' `occupancy`) in each seat
namespace; can-has-gpu hands them to the explainer as the other claims of the
lab. A seat's claim is trimmed to what explains an allocation (name,
namespace, creation time, lease, requests, allocation, how many pods use it).
A claim of any other namespace (the instructor's demos, another class of
users) is anonymous: no namespace, name, request, selector nor pod, only its
devices and creation time, so that a seat learns that a GPU is "in use outside
the seats" (dra/diagnosis.py OUTSIDE_SEATS) and never by whom.

With them go the pods being deleted that a seat's claim is reserved for (`occupancy_pods`), trimmed to what
tells a holder stuck being deleted on a node that does not answer (dra/objects.py stuck_deleting): a seat
cannot read the other seats' pods, and without them it would be told to wait for a lease end that frees
nothing. A pod's name is in its claim's reservedFor already; its node is its GPU's.

The payload carries `"scope": "cluster"`; a ConfigMap an older reaper wrote
has no scope and counts only the seats' claims (read_board() says which),
and reads as before. The format stays 1: an older can-has-gpu reads the
anonymous claims as claims of no seat, in use outside the seats.
"""

from __future__ import annotations

import json

from ansible_collections.dralab.workshop.plugins.module_utils.dra.diagnosis import OUTSIDE_SEATS
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import allocated_devices, build_pools

from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import LEASE_EXPIRES, LEASE_FOR
from ansible_collections.dralab.workshop.plugins.module_utils.values import SEAT_LABEL

from .settings import TOOL_LABEL

FORMAT = 1
# The ConfigMap's one key: {"format": FORMAT, "scope": SCOPE, "claims": [...]} as JSON.
OCCUPANCY_KEY = "claims.json"
# The occupancy counts every allocated claim of the cluster (an older reaper's, without it: the seats' only).
SCOPE = "cluster"
# The namespace of an anonymous claim (not a namespace name, so never a seat's); its name is outside-N.
OUTSIDE_NAMESPACE = "(outside the seats)"
# What can-has-gpu adds to a count or an answer the occupancy of an older reaper (no scope) may get wrong.
OLD_OCCUPANCY = (f"The lab's occupancy board counts the seats' GPUs only, not those {OUTSIDE_SEATS}: tell the "
                 "instructor that dralab-lease-reaper is older than can-has-gpu.")
# What an anonymous claim keeps of each allocation result: the device, and what it consumes of a shared one.
OUTSIDE_RESULT_KEYS = ("driver", "pool", "device", "consumedCapacity", "shareID")


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


def anonymous_claim(claim: dict, number: int) -> dict | None:
    """A claim outside the seats as a seat may see it: its devices (admin access left out: it holds none) and
    creation time, under the name outside-NUMBER; None when it holds no device."""
    results = [{k: r[k] for k in OUTSIDE_RESULT_KEYS if k in r} for r in allocated_devices(claim)
               if not r.get("adminAccess")]
    if not results:
        return None
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"outside-{number}", "namespace": OUTSIDE_NAMESPACE,
                         "creationTimestamp": (claim.get("metadata") or {}).get("creationTimestamp")},
            "spec": {}, "status": {"allocation": {"devices": {"results": results}}, "reservedFor": []}}


def occupancy_claims(seat_namespaces: dict[str, str], claims: list[dict]) -> list[dict]:
    """Every allocated claim of the cluster in a stable order: the seats' trimmed, then the others anonymous
    (numbered by creation time)."""
    allocated = [c for c in claims if allocated_devices(c)]
    seats = sorted((trim_claim(c, seat_namespaces[c["metadata"]["namespace"]]) for c in allocated
                    if (c.get("metadata") or {}).get("namespace") in seat_namespaces),
                   key=lambda c: (c["metadata"]["namespace"], c["metadata"]["name"]))
    others = sorted((c for c in allocated if (c.get("metadata") or {}).get("namespace") not in seat_namespaces),
                    key=lambda c: (c["metadata"].get("creationTimestamp") or "", c["metadata"].get("namespace") or "",
                                   c["metadata"].get("name") or ""))
    anonymous = [anonymous_claim(c, number) for number, c in enumerate(others, 1)]
    return seats + [c for c in anonymous if c is not None]


def occupancy_pods(seat_namespaces: dict[str, str], claims: list[dict], pods: list[dict]) -> list[dict]:
    """The pods being deleted that the seats' allocated claims are reserved for: name, namespace, uid, deletion
    time, node and phase, sorted."""
    reserved = {r.get("uid") for c in claims if allocated_devices(c)
                and (c.get("metadata") or {}).get("namespace") in seat_namespaces
                for r in (c.get("status") or {}).get("reservedFor") or [] if r.get("resource") == "pods"}
    found = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("uid") in reserved and meta.get("deletionTimestamp"):
            found.append({"metadata": {k: meta.get(k) for k in ("name", "namespace", "uid", "deletionTimestamp")},
                          "spec": {"nodeName": (pod.get("spec") or {}).get("nodeName")},
                          "status": {"phase": (pod.get("status") or {}).get("phase")}})
    return sorted(found, key=lambda p: (p["metadata"]["namespace"] or "", p["metadata"]["name"] or ""))


def occupancy_data(rows: list[dict], pods: list[dict] | None = None, line: list[dict] | None = None) -> dict[str, str]:
    """ConfigMap data: the rows, the pods of occupancy_pods and the waitlist (seat/waitlist.py line_rows) as JSON,
    stable so that an unchanged occupancy is not written again."""
    return {OCCUPANCY_KEY: json.dumps({"format": FORMAT, "scope": SCOPE, "claims": rows, "pods": pods or [],
                                       "line": line or []}, sort_keys=True, separators=(",", ":"))}


def read_line(configmap: dict | None) -> list[dict] | None:
    """The waitlist of an occupancy ConfigMap (rows of seat/waitlist.py line_rows); None when the ConfigMap is not
    readable or an older reaper, without a waitlist, wrote it."""
    try:
        payload = json.loads(((configmap or {}).get("data") or {}).get(OCCUPANCY_KEY) or "")
    except ValueError:
        return None
    line = payload.get("line") if isinstance(payload, dict) else None
    return [r for r in line if isinstance(r, dict)] if isinstance(line, list) else None


def read_board(configmap: dict | None) -> tuple[list[dict] | None, list[dict], bool]:
    """An occupancy ConfigMap parsed once: its claims (None when there is no readable one), its pods (none in one an
    older reaper wrote), and whether it counts the devices in use outside the seats (this reaper's, scope cluster;
    False for one an older reaper wrote, the seats' claims only, or none)."""
    try:
        payload = json.loads(((configmap or {}).get("data") or {}).get(OCCUPANCY_KEY) or "")
    except ValueError:
        payload = None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        return None, [], False
    claims, pods = payload.get("claims"), payload.get("pods")
    return ([c for c in claims if isinstance(c, dict) and isinstance(c.get("metadata"), dict)]
            if isinstance(claims, list) else None,
            [p for p in pods if isinstance(p, dict) and isinstance(p.get("metadata"), dict)]
            if isinstance(pods, list) else [],
            payload.get("scope") == SCOPE)


def outside_devices(claims: list[dict], driver: str) -> int:
    """How many devices of the driver the claims of no seat hold (in an occupancy: the anonymous ones)."""
    return len({(r.get("pool"), r.get("device")) for c in claims
                if SEAT_LABEL not in ((c.get("metadata") or {}).get("labels") or {})
                for r in allocated_devices(c) if r.get("driver") == driver and not r.get("adminAccess")})


def published_devices(slices: list[dict], driver: str) -> list[tuple[str, str, str]]:
    """(node, pool, device) of every device the driver publishes (dra/objects.py build_pools: the newest generation
    of each pool, as the scheduler sees it); node is the pool's name for a pool of no node."""
    found = [(pool["node"] or pool["pool"], pool["pool"], name)
             for pool in build_pools(slices).values() if pool["driver"] == driver for name in pool["devices"]]
    return sorted(set(found))


def free_devices(slices: list[dict], claims: list[dict], driver: str) -> list[tuple[str, str]]:
    """(node, device) of every published device no claim holds."""
    taken = {(r.get("pool"), r.get("device")) for c in claims for r in allocated_devices(c)
             if r.get("driver") == driver and not r.get("adminAccess")}
    return [(node, device) for node, pool, device in published_devices(slices, driver) if (pool, device) not in taken]
