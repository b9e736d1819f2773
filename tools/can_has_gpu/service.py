"""What can-has-gpu does for a seat: reserve, status, why, release and run, over the seat's own API.

Each command returns its result as data (what `-o json` prints; cli.py renders it as
text) and tells what it waits for through a Progress (cli.Out). reserve is a chain of
steps: check the request (one that never fits the lab as asked is refused before
anything is made), make the claim and its holder pod, wait for a GPU while asking the
explainer why none comes, then report the GPU or take the claim back. What a claim
without a GPU is told is the explainer's diagnosis (plugins/module_utils/dra/diagnosis.py),
the same words dra_health and the board say; what the scheduler said is kept apart.
"""

from __future__ import annotations

import datetime
import secrets
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from ansible_collections.dralab.workshop.plugins.module_utils.dra.diagnosis import scheduler_message
from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import SHARED_CLASS
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import allocated_devices
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import CLAIM_COUNT_KEY
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age, format_time, parse_quantity
from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import (
    LeaseError,
    age_seconds,
    describe_left,
    lease_end,
    lease_seconds,
    seconds_left,
)
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration

from .api import EXIT_NEVER_FITS, EXIT_NO_GPU, EXIT_USAGE, Api, Refusal, held_sentence
from .lab import SeatView, claim_state, explain, pods_waiting, scheduler_said, seat_view, users_of
from .line import TURN_ALLOCATION, join_line, own_rows, places, position_text
from .line import leave as leave_line
from .objects import claim_body, holder_pod, memory_selector, share_capacity, share_of, workload_pod
from .occupancy import OLD_OCCUPANCY, free_devices, outside_devices, published_devices
from .render import devices_text
from .settings import Settings

MOST_GPUS = 8  # what one reserve may ask for (--count)
CLAIM_RETRY = 15  # seconds a quota refusal is retried while the seat holds no live claim
RUN_START = 180  # seconds a run's pod has to start
GONE_WAIT = 30  # seconds reserve waits for a claim it took back to be gone
RELEASE_WAIT = 60  # seconds release waits for the claims to be gone
EXIT_WAIT = 60  # seconds run waits for the exit code once the log has ended


class Progress(Protocol):
    """Where a command says what it waits for (cli.Out: stderr in text mode, nothing with JSON)."""

    def progress(self, text: str) -> None: ...

    def end_progress(self) -> None: ...


def now_utc() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


# --- what every command reads ----------------------------------------------------------------

def devices_of(view: SeatView | None, claim: dict) -> list[dict]:
    """The claim's allocated devices with their node, memory and the driver's data."""
    info = view.device_info() if view is not None else {}
    data = {(d.get("pool"), d.get("device")): d.get("data") or {}
            for d in (claim.get("status") or {}).get("devices") or []}
    return [{"device": r.get("device"), "pool": r.get("pool"), "driver": r.get("driver"),
             "share": share_of(r, info.get((r.get("pool"), r.get("device")), {}).get("memory")),
             "node": info.get((r.get("pool"), r.get("device")), {}).get("node") or r.get("pool"),
             "memory": info.get((r.get("pool"), r.get("device")), {}).get("memory"),
             "data": data.get((r.get("pool"), r.get("device")), {})} for r in allocated_devices(claim)]


def claim_row(view: SeatView, claim: dict, settings: Settings, now: datetime.datetime) -> dict:
    """One claim as status lists it: state, devices, age, lease and pods."""
    meta = claim["metadata"]
    left = seconds_left(claim, settings.lease_max_seconds, now)
    end = lease_end(claim, settings.lease_max_seconds)
    return {"name": meta["name"], "state": claim_state(claim, view.pods), "devices": devices_of(view, claim),
            "age_seconds": age_seconds(claim, now), "lease_expires": format_time(end) if end else None,
            "lease_left_seconds": left, "pods": sorted(p["metadata"]["name"] for p in users_of(view, claim))}


def pick_claim(view: SeatView, name: str | None, purpose: str, prefer: Callable[[dict], bool]) -> dict:
    """The claim named, else the newest of the preferred ones (else of all)."""
    if name:
        claim = view.claim(name)
        if claim is None:
            raise Refusal(f"You have no claim {name}: can-has-gpu status lists yours.", reason="no_such_claim")
        return claim
    if not view.claims:
        raise Refusal(f"You have no claims to {purpose}: reserve a GPU first with can-has-gpu reserve.",
                      reason="no_claims")
    preferred = [c for c in view.claims if prefer(c)] or view.claims
    preferred.sort(key=lambda c: c["metadata"].get("creationTimestamp") or "", reverse=True)
    return preferred[0]


def diagnosis_fields(answer: dict | None) -> dict:
    """The diagnosis of an explainer's answer (or of a pod_claims finding) as a result carries it: verdict, headline
    and action, None where there is none."""
    return {key: (answer or {}).get(key) for key in ("verdict", "headline", "action")}


def explain_sentence(view: SeatView, claim: dict, now: datetime.datetime,
                     settings: Settings) -> tuple[dict | None, str]:
    """The explainer's answer (with its diagnosis) and its sentence; never fails (a claim is not lost over an
    explanation)."""
    try:
        answer = explain(view, claim, now, settings.lease_max_seconds)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # never lose the claim over it
        return None, f"no explanation available ({type(exc).__name__}: {exc})"
    sentence = answer.get("sentence") or answer.get("reason") or "no explanation"
    if view.occupancy is None:
        sentence += (" (The lab's occupancy board is not published, so other seats' GPUs are not counted: "
                     "tell the instructor that dralab-lease-reaper is not running.)")
    elif not view.occupancy_outside and answer.get("verdict") in ("fits_now", "waits"):
        sentence += f" ({OLD_OCCUPANCY})"
    return answer, sentence


def delete(api: Api, kind: str, name: str, doing: str) -> bool:
    """Delete one object of the seat's namespace now; False when it was gone already."""
    found = api.call(doing, "DELETE", api.ns_path(kind, name), body={"gracePeriodSeconds": 0,
                                                                     "propagationPolicy": "Background"},
                     missing_ok=True)
    return found is not None


# --- reserve, step by step -------------------------------------------------------------------

@dataclass
class ReserveRequest:
    """A reserve the lab allows: what to ask for, for how long, and how long to wait for it."""

    device_class: str
    count: int
    memory: str | None
    selectors: list[str]
    lease_seconds: int
    wait_seconds: int | None  # None: in line until given a GPU
    in_line: bool = True  # without a free GPU, wait in line (False: --no-wait, answer at once)
    share: str | None = None  # --share: this much of one shared GPU's memory
    capacity: dict | None = None  # what the share asks of the card (objects.share_capacity, once the slices are read)


@dataclass
class Waited:
    """How waiting for a GPU ended: the allocated claim (None: no GPU), the explainer's last word, and what the
    scheduler said about the holder pod."""

    claim: dict | None
    answer: dict | None
    sentence: str | None
    scheduler_said: str | None = None


def reserve_request(settings: Settings, device_class: str | None, count: int, memory: str | None,
                    lease: str | None, wait: str | None, in_line: bool = True, share: str | None = None) -> ReserveRequest:
    """Step 1: the options checked against the lab's settings, before anything is asked of the API."""
    try:
        seconds = lease_seconds(lease, settings.lease_default, settings.lease_max)
    except LeaseError as exc:
        raise Refusal(str(exc), reason="lease_limit") from None
    try:
        wait_seconds = parse_duration(wait) if wait else (None if in_line else settings.wait_seconds)
    except ValueError:
        raise Refusal(f"--wait {wait} is not a duration: write it like 30s or 5m.", code=EXIT_USAGE,
                      reason="usage") from None
    if count < 1 or count > MOST_GPUS:
        raise Refusal(f"--count {count} is not possible: ask for 1 to {MOST_GPUS} GPUs.", reason="usage",
                      code=EXIT_USAGE)
    selectors = []
    if share is not None:
        if memory or count != 1:
            raise Refusal("--share asks for a part of one GPU: give it without --memory and --count.",
                          reason="usage", code=EXIT_USAGE)
        try:
            positive = parse_quantity(share) > 0
        except ValueError:
            positive = False
        if not positive:
            raise Refusal(f"--share {share} is not a quantity: write it like 20Gi.", reason="usage", code=EXIT_USAGE)
    if memory:
        try:
            selectors.append(memory_selector(settings.driver, memory))
        except ValueError as exc:
            raise Refusal(str(exc), reason="usage", code=EXIT_USAGE) from None
    default = SHARED_CLASS["name"] if share is not None else settings.default_class
    return ReserveRequest(device_class or default, count, memory, selectors, seconds, wait_seconds, in_line,
                          share.strip() if share is not None else None)


def check_class(api: Api, device_class: str) -> None:
    """Step 2: the GPU class exists; else the refusal names the ones that do."""
    if api.call("reading the GPU class", "GET", f"/apis/resource.k8s.io/v1/deviceclasses/{device_class}",
                missing_ok=True) is None:
        classes = sorted(c["metadata"]["name"] for c in api.items("listing the GPU classes",
                                                                  "/apis/resource.k8s.io/v1/deviceclasses"))
        raise Refusal(f"There is no GPU class {device_class}: choose one of {', '.join(classes) or 'none'} "
                      "(--class NAME).", reason="unknown_class")


def create_claim(api: Api, body: dict, patience: float = CLAIM_RETRY) -> dict:
    """POST the claim. The quota's usage lags a release by a moment: while the seat holds no live claim,
    a quota refusal is retried for a few seconds instead of blaming the seat."""
    deadline = time.monotonic() + patience
    while True:
        try:
            return api.call("creating your claim", "POST", api.ns_path("resourceclaims"), body)
        except Refusal as exc:
            if exc.reason != "quota" or time.monotonic() > deadline:
                raise
            live = [c for c in api.items("listing your claims", api.ns_path("resourceclaims"))
                    if not c["metadata"].get("deletionTimestamp")]
            if live:
                raise
            time.sleep(1)


def make_claim(api: Api, request: ReserveRequest, settings: Settings) -> str:
    """Step 3: the claim (its lease in its annotations) and the holder pod that gets it allocated now.
    When the holder pod cannot be made, the claim is taken back."""
    expires = format_time(now_utc() + datetime.timedelta(seconds=request.lease_seconds))
    body = claim_body(request.device_class, request.count, request.selectors, expires,
                      format_age(request.lease_seconds), request.capacity)
    name = create_claim(api, body)["metadata"]["name"]
    try:
        api.call("creating the holder pod", "POST", api.ns_path("pods"), holder_pod(name, settings.holder_image))
    except Refusal:
        delete(api, "resourceclaims", name, "taking your claim back")
        raise
    return name


def scheduler_gave_up(api: Api, name: str) -> str | None:
    """What the scheduler said when it tried the holder pod and found no GPU for it (PodScheduled False), or None."""
    pod = api.call("reading the holder pod", "GET", api.ns_path("pods", f"{name}-holder"), missing_ok=True)
    return scheduler_message(pod)


def wait_for_gpu(api: Api, settings: Settings, name: str, wait_seconds: int, started: float,
                 progress: Progress, patient: bool = False) -> Waited:
    """Step 4: poll until the claim is allocated, the explainer says it cannot be now, or the wait is over;
    each time the scheduler has given up, ask the explainer why (step 5). patient (a turn in line: the keeper saw
    the GPU free, the seat's occupancy may not show it yet): only the wait's end stops it."""
    answer, sentence = None, None
    while True:
        claim = api.call("reading your claim", "GET", api.ns_path("resourceclaims", name))
        if allocated_devices(claim):
            return Waited(claim, answer, sentence)
        gave_up = None if patient else scheduler_gave_up(api, name)
        waited = time.monotonic() - started
        if gave_up:
            answer, sentence = why_waiting(api, settings, name, claim)
            if answer is not None and not answer.get("allocatable", True):
                return Waited(None, answer, sentence, gave_up)
        if waited >= wait_seconds:
            return Waited(None, answer, sentence, gave_up)
        progress.progress(f"Waiting for a GPU for claim {name}: {int(waited)}s" + (f" ({sentence})" if sentence else ""))
        time.sleep(1)


def why_waiting(api: Api, settings: Settings, name: str, claim: dict) -> tuple[dict | None, str]:
    """Step 5: the explainer's answer for a claim the scheduler found no GPU for, on a fresh view of the lab."""
    view = seat_view(api, settings)
    return explain_sentence(view, view.claim(name) or claim, now_utc(), settings)


def memory_hint(view: SeatView, request: ReserveRequest, answer: dict) -> str | None:
    """The request's change in can-has-gpu's words, when --memory asks for more than any GPU has."""
    memories = [info["memory"] for info in view.device_info().values() if info.get("memory")]
    if not (request.memory and memories and answer.get("reason") == "no_matching_device"):
        return None
    largest = max(memories, key=parse_quantity)
    return f"With can-has-gpu: reserve --memory {largest} or less (or without --memory)."


def request_answer(api: Api, settings: Settings, request: ReserveRequest) -> tuple[SeatView, dict | None, str]:
    """Step 2b: the request explained before anything is made, on the seat's partial view of the lab (its own claims
    and the occupancy): the view, the explainer's answer and its sentence."""
    view = seat_view(api, settings)
    if request.share is not None:
        try:
            request.capacity = share_capacity(view.slices, settings.driver, request.share)
        except ValueError as exc:
            raise Refusal(str(exc), reason="no_shared_gpus", code=EXIT_NEVER_FITS) from None
    body = claim_body(request.device_class, request.count, request.selectors, "", "", request.capacity)
    body["metadata"].update(name="(new)", namespace=api.namespace)
    answer, sentence = explain_sentence(view, body, now_utc(), settings)
    return view, answer, sentence


def never_fits(api: Api, view: SeatView, request: ReserveRequest, answer: dict | None, sentence: str) -> dict | None:
    """The refusal (result data) when the request never fits the lab as asked, else None. The explainer's search
    ignores who holds what for this verdict, so the seat's partial view answers it as dra_health would."""
    if answer is None or answer.get("verdict") != "never_fits":
        return None
    return {"claim": None, "namespace": api.namespace, "allocated": False, **diagnosis_fields(answer),
            "sentence": sentence,
            "hint": memory_hint(view, request, answer), "explanation": answer, "scheduler_said": None,
            "waited_seconds": 0}


def goes_now(view: SeatView, request: ReserveRequest, answer: dict | None) -> bool:
    """Whether reserve asks the scheduler at once instead of joining the line: a GPU fits now and nobody waits for
    the class, or no keeper publishes a line (no occupancy: the lease reaper is not running)."""
    if not request.in_line or view.occupancy is None or view.line is None:
        return True
    waiting = [r for r in view.line if r.get("device_class") == request.device_class]
    return bool(answer and answer.get("reason") == "allocatable") and not waiting


def check_room(view: SeatView, request: ReserveRequest) -> None:
    """A place in line only for a seat below its claim quota, counting the places it has."""
    live = [c for c in view.claims if not c["metadata"].get("deletionTimestamp")]
    mine = places(view.pods)
    for quota in view.quotas:
        hard = ((quota.get("status") or {}).get("hard") or (quota.get("spec") or {}).get("hard") or {})
        limit = hard.get(CLAIM_COUNT_KEY)
        if limit is not None and len(live) + len(mine) + 1 > int(parse_quantity(limit)):
            raise Refusal(held_sentence(limit, len(live), len(mine)), reason="quota")


def in_line(api: Api, settings: Settings, request: ReserveRequest, view: SeatView, progress: Progress) -> dict:
    """Steps 3-6 through the line: a place, the wait for the turn, then the claim and its GPU."""
    check_room(view, request)
    outcome = join_line(api, settings, request, progress)
    if outcome.claim is None:
        return {"claim": None, "namespace": api.namespace, "allocated": False, "verdict": "waits",
                "headline": None, "action": "wait", "sentence": outcome.sentence, "hint": None, "explanation": None,
                "scheduler_said": None, "waited_seconds": round(outcome.waited, 1)}
    started = time.monotonic() - outcome.waited
    waited = wait_for_gpu(api, settings, outcome.claim, TURN_ALLOCATION, time.monotonic(), progress, patient=True)
    if waited.claim is not None:
        return reserved(api, settings, outcome.claim, waited.claim, started)
    take_back(api, outcome.claim)
    return {"claim": outcome.claim, "namespace": api.namespace, "allocated": False,
            "sentence": waited.sentence or "the GPU of your turn was taken by a claim outside the line.",
            **diagnosis_fields(waited.answer), "hint": None, "explanation": waited.answer,
            "scheduler_said": waited.scheduler_said, "waited_seconds": round(time.monotonic() - started, 1)}


def take_back(api: Api, name: str, timeout: float = GONE_WAIT) -> None:
    """Step 6 without a GPU: the holder pod and the claim deleted (the claim would hold the seat's quota),
    waited for until the claim is gone."""
    delete(api, "pods", f"{name}-holder", "taking the holder pod back")
    delete(api, "resourceclaims", name, "taking your claim back")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and api.call("checking", "GET", api.ns_path("resourceclaims", name),
                                                   missing_ok=True):
        time.sleep(0.5)


def reserved(api: Api, settings: Settings, name: str, claim: dict, started: float) -> dict:
    """Step 6 with a GPU: which GPU on which node, and the lease."""
    view = seat_view(api, settings)
    row = claim_row(view, view.claim(name) or claim, settings, now_utc())
    return {"claim": name, "namespace": api.namespace, "devices": row["devices"],
            "lease_expires": row["lease_expires"], "lease_left_seconds": row["lease_left_seconds"],
            "waited_seconds": round(time.monotonic() - started, 1), "allocated": True}


def reserve(kubeconfig: str | None, request: ReserveRequest, settings: Settings, progress: Progress) -> dict:
    """A GPU for the request's lease: the result says which (allocated) or why none (and nothing is held). Without
    a free GPU (or with seats waiting for the class) it waits in line, unless --no-wait."""
    api = Api.connect(kubeconfig)
    check_class(api, request.device_class)
    view, answer, sentence = request_answer(api, settings, request)
    refused = never_fits(api, view, request, answer, sentence)
    if refused is not None:
        return refused
    if not goes_now(view, request, answer):
        return in_line(api, settings, request, view, progress)
    name = make_claim(api, request, settings)
    progress.progress(f"Claim {name} made; waiting for a GPU ({request.count} x {request.device_class}"
                      + (f", memory >= {request.memory}" if request.memory else "")
                      + (f", a share of {request.share}" if request.share else "") + ")...")
    started = time.monotonic()
    patience = request.wait_seconds if request.wait_seconds is not None else settings.wait_seconds
    waited = wait_for_gpu(api, settings, name, patience, started, progress)
    if waited.claim is not None:
        return reserved(api, settings, name, waited.claim, started)
    take_back(api, name)
    if request.in_line and view.line is not None and (waited.answer or {}).get("verdict") in ("waits", "fits_now"):
        # Another seat took the GPU first: wait in line from now on.
        return in_line(api, settings, request, seat_view(api, settings), progress)
    sentence = waited.sentence or f"no GPU was allocated within {format_age(patience)}."
    return {"claim": name, "namespace": api.namespace, "allocated": False, "sentence": sentence,
            **diagnosis_fields(waited.answer), "hint": None, "explanation": waited.answer, "scheduler_said": waited.scheduler_said,
            "waited_seconds": round(time.monotonic() - started, 1)}


# --- status, why, release ----------------------------------------------------------------------

def free_gpus(view: SeatView, settings: Settings) -> dict | None:
    """The lab's free GPUs, in all and per node, and how many are in use outside the seats (outside_counted: False
    when an older reaper wrote the occupancy, which counts the seats' claims only); None when the occupancy is not
    published."""
    if view.occupancy is None:
        return None
    free_list = free_devices(view.slices, view.lab_claims(), settings.driver)
    by_node = {}
    for node, _device in free_list:
        by_node[node] = by_node.get(node, 0) + 1
    return {"free": len(free_list), "published": len(published_devices(view.slices, settings.driver)),
            "by_node": by_node, "outside": outside_devices(view.occupancy, settings.driver),
            "outside_counted": view.occupancy_outside}


def diagnosis_of(view: SeatView, claim: dict, settings: Settings, now: datetime.datetime) -> dict:
    """A claim without a GPU as status and why tell it: the explainer's verdict, headline and sentence, and what the
    scheduler said about its pod (apart)."""
    answer, sentence = explain_sentence(view, claim, now, settings)
    return {**diagnosis_fields(answer), "sentence": sentence, "scheduler_said": scheduler_said(view, claim)}


def status(kubeconfig: str | None, settings: Settings) -> dict:
    """The seat's claims (oldest first; one without a GPU with its diagnosis), the seat's pods that wait for a claim
    that does not exist, the lab's free GPUs, the lease settings and the GPU classes."""
    api = Api.connect(kubeconfig)
    view = seat_view(api, settings)
    now = now_utc()
    claims = sorted(view.claims, key=lambda c: c["metadata"].get("creationTimestamp") or "")
    rows = []
    for claim in claims:
        row = claim_row(view, claim, settings, now)
        if not row["devices"] and not claim["metadata"].get("deletionTimestamp"):
            row.update(diagnosis_of(view, claim, settings, now))
        rows.append(row)
    return {"namespace": api.namespace, "claims": rows, "pods_waiting": pods_waiting(view),
            "line": line_places(view, now),
            "free": free_gpus(view, settings), "lease_default": settings.lease_default,
            "lease_max": settings.lease_max, "classes": sorted(c["metadata"]["name"] for c in view.device_classes)}


def line_places(view: SeatView, now: datetime.datetime) -> list[dict]:
    """The seat's places in the GPU waitlist, first come first: the claim each will make, the class, since when,
    the position and estimate as the keeper published them, and the sentence."""
    rows = own_rows(view.line, view.namespace)
    found = []
    for pod in sorted(places(view.pods), key=lambda p: p["metadata"].get("creationTimestamp") or ""):
        row = rows.get(pod["metadata"]["name"])
        refs = pod["spec"].get("resourceClaims") or [{}]
        found.append({"claim": refs[0].get("resourceClaimName"), "pod": pod["metadata"]["name"],
                      "since": pod["metadata"].get("creationTimestamp"),
                      "device_class": (row or {}).get("device_class"), "position": (row or {}).get("position"),
                      "estimate": (row or {}).get("estimate"), "estimate_seat": (row or {}).get("estimate_seat"),
                      "sentence": position_text(row, now)})
    return found


def leave(kubeconfig: str | None) -> dict:
    """Every place of the seat in the GPU waitlist given up."""
    api = Api.connect(kubeconfig)
    return {"left": leave_line(api)}


def why(kubeconfig: str | None, settings: Settings, name: str | None) -> dict:
    """Which GPU a claim has, or the explainer's answer for why it has none (default: the newest pending claim);
    with no claim named and none made, the seat's pods that wait for a claim that does not exist."""
    api = Api.connect(kubeconfig)
    view = seat_view(api, settings)
    waiting = pods_waiting(view)
    queued = [p for p in line_places(view, now_utc()) if not name or p["claim"] == name]
    if queued and (name or not [c for c in view.claims if not allocated_devices(c)]):
        place = queued[0]
        return {"claim": place["claim"], "allocatable": False, "allocated": False, "reason": "in_line",
                "verdict": "waits", "headline": "in line", "action": "wait", "sentence": place["sentence"],
                "line": queued, "scheduler_said": None, "pods_waiting": waiting}
    if not name and not view.claims and waiting:
        first = waiting[0]
        return {"claim": None, "allocatable": False, "allocated": False, "reason": first["verdict"],
                **diagnosis_fields(first), "sentence": first["sentence"], "scheduler_said": None, "pods_waiting": waiting}
    claim = pick_claim(view, name, "explain", lambda c: not allocated_devices(c))
    now = now_utc()
    row = claim_row(view, claim, settings, now)
    if row["devices"]:
        sentence = (f"{row['name']} has its GPU: {devices_text(row['devices'])}, lease left "
                    f"{describe_left(row['lease_left_seconds'])}.")
        return {"claim": row["name"], "allocatable": True, "allocated": True, "reason": "allocated",
                "verdict": "allocated", "sentence": sentence, "devices": row["devices"], "pods_waiting": waiting}
    answer, sentence = explain_sentence(view, claim, now, settings)
    return dict(answer or {}, claim=row["name"], allocated=False, sentence=sentence,
                scheduler_said=scheduler_said(view, claim), pods_waiting=waiting)


def release_targets(view: SeatView, name: str | None, everything: bool) -> list[dict]:
    """The claims a release means: the one named, --all, or the seat's only one (none: nothing to do)."""
    if everything and name:
        raise Refusal("Give a claim name or --all, not both.", code=EXIT_USAGE, reason="usage")
    if everything:
        return list(view.claims)
    if name:
        return [pick_claim(view, name, "release", lambda c: True)]
    if len(view.claims) <= 1:
        return list(view.claims)
    names = ", ".join(sorted(c["metadata"]["name"] for c in view.claims))
    raise Refusal(f"You have {len(view.claims)} claims ({names}): name one, or use --all.", reason="ambiguous")


def release(kubeconfig: str | None, settings: Settings, name: str | None, everything: bool,
            progress: Progress) -> dict:
    """Give GPUs back: each claim's pods first, then the claim; waits (bounded) until the claims are gone."""
    api = Api.connect(kubeconfig)
    view = seat_view(api, settings, full=False)
    released = []
    for claim in release_targets(view, name, everything):
        claim_name = claim["metadata"]["name"]
        pods = sorted(p["metadata"]["name"] for p in users_of(view, claim))
        for pod in pods:
            delete(api, "pods", pod, f"deleting pod {pod}")
        delete(api, "resourceclaims", claim_name, f"deleting claim {claim_name}")
        released.append({"claim": claim_name, "pods": pods,
                         "devices": [r.get("device") for r in allocated_devices(claim)]})
    deadline = time.monotonic() + RELEASE_WAIT
    names = {r["claim"] for r in released}
    while names and time.monotonic() < deadline:
        left = {c["metadata"]["name"] for c in api.items("listing your claims", api.ns_path("resourceclaims"))}
        if not names & left:
            break
        progress.progress(f"Releasing {', '.join(sorted(names & left))}...")
        time.sleep(1)
    return {"released": released}


# --- run ---------------------------------------------------------------------------------------

def wait_started(api: Api, pod_name: str, claim: str, image: str, progress: Progress) -> dict:
    """The run's pod once it runs (or has already ended); an image that cannot be pulled is refused."""
    deadline = time.monotonic() + RUN_START
    while time.monotonic() < deadline:
        pod = api.call("reading your pod", "GET", api.ns_path("pods", pod_name))
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Running", "Succeeded", "Failed"):
            return pod
        waiting = [s.get("state", {}).get("waiting", {}) for s in (pod.get("status") or {}).get("containerStatuses")
                   or []]
        reason = next((w.get("reason") for w in waiting if w.get("reason")), phase)
        if reason in ("ErrImagePull", "ImagePullBackOff", "InvalidImageName"):
            delete(api, "pods", pod_name, "deleting your pod")
            raise Refusal(f"The image {image} cannot be pulled ({reason}): use an image the lab's registry "
                          "mirror holds, e.g. busybox:1.37.", reason="image")
        progress.progress(f"Pod {pod_name} on claim {claim}: {reason}...")
        time.sleep(1)
    raise Refusal(f"Pod {pod_name} did not start within 3m: kubectl describe pod {pod_name} says why.",
                  reason="timeout")


def wait_exit(api: Api, pod_name: str, pod: dict) -> tuple[int | None, dict]:
    """The exit code of the pod's container once it has ended (None if not within a minute), and the pod."""
    deadline = time.monotonic() + EXIT_WAIT
    while time.monotonic() < deadline:
        pod = api.call("reading your pod", "GET", api.ns_path("pods", pod_name))
        terminated = [s.get("state", {}).get("terminated") for s in (pod.get("status") or {}).get("containerStatuses")
                      or []]
        if terminated and terminated[0]:
            return terminated[0].get("exitCode"), pod
        time.sleep(1)
    return None, pod


def run(kubeconfig: str | None, settings: Settings, claim_name: str | None, image: str, command: list[str],
        remove: bool, progress: Progress, show_log: Callable[[str], None]) -> dict:
    """A pod on the seat's allocated claim; its log goes to show_log as it comes; the result has its exit code."""
    api = Api.connect(kubeconfig)
    view = seat_view(api, settings, full=False)
    claim = pick_claim(view, claim_name, "run on", lambda c: bool(allocated_devices(c)))
    name = claim["metadata"]["name"]
    if not allocated_devices(claim):
        raise Refusal(f"Claim {name} has no GPU yet: can-has-gpu why {name} says why.", code=EXIT_NO_GPU,
                      reason="pending")
    pod_name = f"{name}-run-{secrets.token_hex(3)}"
    api.call("creating your pod", "POST", api.ns_path("pods"), workload_pod(pod_name, name, image, command))
    progress.progress(f"Pod {pod_name} on claim {name}: starting...")
    pod = wait_started(api, pod_name, name, image, progress)
    progress.end_progress()
    chunks = []
    for chunk in api.logs(pod_name):
        text = chunk.decode("utf-8", "replace")
        chunks.append(text)
        show_log(text)
    exit_code, pod = wait_exit(api, pod_name, pod)
    if remove:
        delete(api, "pods", pod_name, "deleting your pod")
    return {"pod": pod_name, "claim": name, "node": (pod.get("spec") or {}).get("nodeName"),
            "exit_code": exit_code, "log": "".join(chunks)}
