"""A seat's place in the GPU waitlist: join it, wait for the turn without polling, tell the position, leave.

The line and its keeper are plugins/module_utils/seat/waitlist.py and keeper.py (in the lease reaper). Here the
seat's side: its place is a holder pod with the waitlist gate and the request in an annotation (no claim yet,
so nothing is held while it waits); it watches that one pod (one request per RENEW_SECONDS, which also renews
the place) and reads its position from the occupancy ConfigMap the keeper writes.
"""

from __future__ import annotations

import datetime
import json
import secrets
import string
import time
from dataclasses import dataclass

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError
from ansible_collections.dralab.workshop.plugins.module_utils.seat.waitlist import (
    RENEW_SECONDS,
    RENEWED_ANNOTATION,
    REQUEST_ANNOTATION,
    gated,
)
from ansible_collections.dralab.workshop.plugins.module_utils.values import WAITLIST_GATE, format_age, format_time, parse_time

from .api import Api, Refusal
from .objects import CLAIM_PREFIX, claim_body, holder_pod
from .occupancy import read_line

MERGE_PATCH = "application/merge-patch+json"
TURN_ALLOCATION = 60  # seconds the claim of a turn has to be allocated (the keeper saw its GPU free)


def ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def new_claim_name() -> str:
    """The name of the claim a place in line will make: gpu- and five random letters or digits (as generateName)."""
    alphabet = string.ascii_lowercase + string.digits
    return CLAIM_PREFIX + "".join(secrets.choice(alphabet) for dummy in range(5))


def place_pod(claim: str, image: str, request: dict, now: datetime.datetime) -> dict:
    """The holder pod of a claim not made yet, gated until the keeper gives it the turn."""
    pod = holder_pod(claim, image)
    pod["spec"]["schedulingGates"] = [{"name": WAITLIST_GATE}]
    pod["metadata"]["annotations"] = {REQUEST_ANNOTATION: json.dumps(request, sort_keys=True),
                                      RENEWED_ANNOTATION: format_time(now)}
    return pod


def position_text(row: dict | None, now: datetime.datetime) -> str:
    """'You are 5th in line for gpu.example.com; about 12m, when user17's lease ends.' (or without the estimate)."""
    if row is None:
        return "You are in line; your position is published within seconds."
    if row.get("position") is None:
        return ("This place waits behind your own: your seat holds what its quota allows, or its other place is "
                "being served (can-has-gpu release frees a claim, can-has-gpu leave gives this place up).")
    where = "next in line" if row.get("position") == 1 else f"{ordinal(int(row.get('position') or 0))} in line"
    memory = (row.get("capacity") or {}).get("memory")
    text = f"You are {where} for " + (f"a {memory} share of " if memory else "") + f"{row.get('device_class')}"
    end = parse_time(row.get("estimate"))
    if end is not None:
        left = max(int((end - now).total_seconds()), 0)
        text += f"; about {format_age(left) if left else 'now'}, when {row.get('estimate_seat')}'s lease ends"
    else:
        text += "; no lease ends soon enough to say when"
    return text + "."


def own_rows(line: list[dict] | None, namespace: str) -> dict[str, dict]:
    """{pod: row} of the seat's own places in the keeper's line."""
    return {r.get("pod"): r for r in line or [] if r.get("namespace") == namespace}


def read_own_line(api: Api, occupancy: str) -> dict[str, dict] | None:
    """The seat's places as the keeper last published them (None: no line is published)."""
    configmap = api.call("reading the lab's occupancy board", "GET", api.ns_path("configmaps", occupancy),
                         missing_ok=True)
    line = read_line(configmap)
    return None if line is None else own_rows(line, api.namespace)


def places(pods: list[dict]) -> list[dict]:
    """The seat's pods that hold a place in line (gated by the waitlist, not being deleted)."""
    return [p for p in pods if gated(p) and not p["metadata"].get("deletionTimestamp")]


@dataclass
class Turn:
    """How waiting in line ended: 'turn' (the gate is gone: make the claim now), 'dropped' (the pod is gone: the
    keeper took the place, or a reset) or 'timeout' (--wait is over)."""

    outcome: str
    waited: float


def renew(api: Api, pod: str) -> None:
    body = {"metadata": {"annotations": {RENEWED_ANNOTATION: format_time(datetime.datetime.now(datetime.timezone.utc))}}}
    api.call("renewing your place in line", "PATCH", api.ns_path("pods", pod), body, content_type=MERGE_PATCH)


def wait_turn(api: Api, pod: dict, occupancy: str, wait_seconds: int | None, progress) -> Turn:
    """Watch the place's pod until its gate is gone or it is deleted; renew the place and read the position every
    RENEW_SECONDS (the only requests while waiting)."""
    name, started = pod["metadata"]["name"], time.monotonic()
    version = pod["metadata"].get("resourceVersion") or "0"
    path = api.ns_path("pods")
    while True:
        waited = time.monotonic() - started
        if wait_seconds is not None and waited >= wait_seconds:
            return Turn("timeout", waited)
        rows = read_own_line(api, occupancy)
        progress.progress(position_text((rows or {}).get(name), datetime.datetime.now(datetime.timezone.utc))
                          + f" (waited {format_age(int(waited))}; Ctrl-C leaves the line)")
        window = RENEW_SECONDS if wait_seconds is None else max(min(RENEW_SECONDS, wait_seconds - waited), 1)
        try:
            for event in api.client.watch(path, version, {"fieldSelector": f"metadata.name={name}"}, window):
                obj = event.get("object") or {}
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if event.get("type") == "DELETED" or (obj.get("metadata") or {}).get("deletionTimestamp"):
                    return Turn("dropped", time.monotonic() - started)
                if event.get("type") in ("ADDED", "MODIFIED") and not gated(obj):
                    return Turn("turn", time.monotonic() - started)
        except K8sError as exc:
            if exc.status != 410:
                raise Refusal(f"watching your place in line failed: {exc}", reason="api") from None
            version = "0"
        current = api.call("reading your place in line", "GET", api.ns_path("pods", name), missing_ok=True)
        if current is None or current["metadata"].get("deletionTimestamp"):
            return Turn("dropped", time.monotonic() - started)
        if not gated(current):
            return Turn("turn", time.monotonic() - started)
        version = current["metadata"].get("resourceVersion") or version
        renew(api, name)


def leave(api: Api) -> list[str]:
    """Every place of the seat in line given up: their pods deleted (no claim exists for them)."""
    gone = []
    for pod in places(api.items("listing your pods", api.ns_path("pods"))):
        name = pod["metadata"]["name"]
        leave_place(api, name)
        gone.append(name)
    return sorted(gone)


@dataclass
class Joined:
    """How a wait in line ended: the claim made on the turn (None: no turn, the sentence says why) and how long it
    took."""

    claim: str | None
    sentence: str
    waited: float


def join_line(api: Api, settings, request, progress) -> Joined:
    """A place in line for the request, the wait for the turn, then the claim (its lease from now). On any way out
    without a turn (Ctrl-C, the session closing, --wait over) the place is given up."""
    name = new_claim_name()
    asked = {"deviceClassName": request.device_class, "count": request.count, "selectors": list(request.selectors)}
    if request.capacity:
        asked["capacity"] = dict(request.capacity)
    now = datetime.datetime.now(datetime.timezone.utc)
    pod = api.call("joining the line", "POST", api.ns_path("pods"), place_pod(name, settings.holder_image, asked, now))
    started = time.monotonic()
    made = False
    try:
        turn = wait_turn(api, pod, settings.occupancy, request.wait_seconds, progress)
        if turn.outcome == "dropped":
            return Joined(None, "You lost your place in line: your turn came and passed, or the lab was reset. "
                                "Reserve again to join the line at its end.", turn.waited)
        if turn.outcome == "timeout":
            leave_place(api, pod["metadata"]["name"])
            return Joined(None, f"No GPU came within --wait {format_age(int(turn.waited))}: you left the line.",
                          turn.waited)
        expires = format_time(datetime.datetime.now(datetime.timezone.utc)
                              + datetime.timedelta(seconds=request.lease_seconds))
        body = claim_body(request.device_class, request.count, request.selectors, expires,
                          format_age(request.lease_seconds), request.capacity)
        del body["metadata"]["generateName"]
        body["metadata"]["name"] = name
        progress.progress(f"Your turn: making claim {name}...")
        api.call("creating your claim", "POST", api.ns_path("resourceclaims"), body)
        made = True
        return Joined(name, "", time.monotonic() - started)
    finally:
        if not made:
            leave_place(api, pod["metadata"]["name"])


def leave_place(api: Api, pod: str) -> None:
    try:
        api.call("leaving the line", "DELETE", api.ns_path("pods", pod), {"gracePeriodSeconds": 0}, missing_ok=True)
    except Refusal:
        pass  # the keeper drops a place whose renewals stop
