"""Lease maths: how long a reservation may live, when it ends, and what the reaper releases.

When a lease ends is one rule of the collection (plugins/module_utils/seat/lease.py): the
earlier of the claim's lease-expires annotation and its creation plus the lab's maximum.
"""

from __future__ import annotations

import datetime

from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import PodIndex, allocated_devices
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age, format_time, parse_time
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta
from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import lease_end
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration

UTC = datetime.timezone.utc


class LeaseError(ValueError):
    """A lease request the lab does not allow (the message says what to ask for instead)."""


def now_utc() -> datetime.datetime:
    return datetime.datetime.now(UTC)


def stamp(moment: datetime.datetime) -> str:
    """RFC 3339 in UTC with seconds, as the API writes timestamps."""
    return format_time(moment)


def lease_seconds(requested: str | None, default: str, maximum: str) -> int:
    """Seconds of a lease asked for with --for (None: the lab's default)."""
    max_seconds = parse_duration(maximum)
    if requested is None:
        return min(parse_duration(default), max_seconds)
    try:
        seconds = parse_duration(requested)
    except ValueError:
        raise LeaseError(f"--for {requested} is not a duration: write it like 30m, 2h or 1h30m.") from None
    if seconds < 60:
        raise LeaseError(f"--for {requested} is too short: a lease lasts at least 1m.")
    if seconds > max_seconds:
        raise LeaseError(f"--for {requested} is longer than this lab allows: the longest lease is "
                         f"{format_age(max_seconds)}; ask for --for {format_age(max_seconds)} or less.")
    return seconds


def expiry(claim: dict, max_seconds: int) -> datetime.datetime | None:
    """When the claim's lease ends (None if the claim has no creation time, e.g. not created yet)."""
    return lease_end(claim, max_seconds)


def seconds_left(claim: dict, max_seconds: int, now: datetime.datetime) -> int | None:
    end = expiry(claim, max_seconds)
    return None if end is None else int((end - now).total_seconds())


def describe_left(seconds: int | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds <= 0:
        return "expired"
    return format_age(seconds + 59 if seconds >= 120 else seconds)  # whole minutes, rounded up


def age_seconds(obj: dict, now: datetime.datetime) -> int | None:
    created = parse_time(object_meta(obj).get("creationTimestamp"))
    return None if created is None else max(int((now - created).total_seconds()), 0)


def reaper_plan(seat_namespaces: dict[str, str], claims: list[dict], pods: list[dict], now: datetime.datetime,
                lease_max: int, idle_after: int | None = None, idle_since: dict | None = None) -> list[dict]:
    """What the reaper releases now: one entry per claim (seat, namespace, claim, devices, pods, reason).

    seat_namespaces maps each seat namespace (decided by the namespace's labels, which a seat cannot
    change) to its seat; claims elsewhere are never planned. idle_after (seconds, None = off) also
    releases allocated claims that no live pod has used for that long; idle_since (claim uid -> first
    time seen idle) is updated in place.
    """
    actions = []
    idle_seen = set()
    index = PodIndex(pods)
    for claim in claims:
        meta = object_meta(claim)
        namespace = meta.get("namespace")
        if namespace not in seat_namespaces or meta.get("deletionTimestamp"):
            continue
        users = index.consumers(claim)
        devices = [r.get("device") for r in allocated_devices(claim)]
        left = seconds_left(claim, lease_max, now)
        reason = None
        if left is not None and left <= 0:
            end = expiry(claim, lease_max)
            reason = f"lease ended {stamp(end)}"
        elif idle_after is not None and devices and not index.reservations(claim)[0]:
            uid = meta.get("uid") or f"{namespace}/{meta.get('name')}"
            idle_seen.add(uid)
            first = (idle_since if idle_since is not None else {}).setdefault(uid, now)
            if (now - first).total_seconds() >= idle_after:
                reason = f"allocated and unused for {format_age((now - first).total_seconds())}"
        if reason:
            actions.append({"seat": seat_namespaces[namespace], "namespace": namespace, "claim": meta.get("name"),
                            "devices": devices, "pods": sorted(object_meta(p).get("name") for p in users),
                            "reason": reason})
    if idle_since is not None:
        for uid in list(idle_since):
            if uid not in idle_seen:
                del idle_since[uid]
    return actions
