"""can-has-gpu: reserve an emulated GPU of the DRA lab, use it, see why you wait, give it back.

Runs as your seat with your own kubeconfig (~/.kube/config) and only in your
namespace. Every refusal is one sentence with what to do and a non-zero exit
status: 1 refused, 2 bad usage, 3 no GPU can be allocated now, 4 the API
cannot be reached or refuses your credentials.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import secrets
import sys
import time

from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import allocated_devices
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration

from . import __version__, render
from .api import Api, Refusal
from .lab import claim_state, explain, seat_view, users_of
from .lease import (
    LeaseError,
    age_seconds,
    describe_left,
    now_utc,
    seconds_left,
    stamp,
)
from .lease import expiry as lease_expiry
from .lease import lease_seconds
from .objects import claim_body, holder_pod, memory_selector, workload_pod
from .settings import SettingsError, load_settings
from . import board as board_mod

EXAMPLES = """\
examples:
  can-has-gpu reserve                      a GPU of the default class for the default lease
  can-has-gpu reserve --memory 40Gi --for 1h
  can-has-gpu run -- busybox:1.37 sh -c 'env | grep ^GPU_DEVICE_'
  can-has-gpu status                       your claims, their GPUs and leases; the lab's free GPUs
  can-has-gpu why                          why your newest claim has no GPU (or which one it has)
  can-has-gpu release --all                pods first, then the claims
  can-has-gpu status --output json         every command speaks JSON too
"""

EXIT_REFUSED, EXIT_USAGE, EXIT_NO_GPU, EXIT_API = 1, 2, 3, 4


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        raise Refusal(f"{message} (can-has-gpu --help shows examples).", code=EXIT_USAGE, reason="usage")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--output", "-o", choices=("text", "json"), default=argparse.SUPPRESS,
                        help="text (default) or json")
    common.add_argument("--kubeconfig", default=argparse.SUPPRESS,
                        help="kubeconfig to use (default: $KUBECONFIG or ~/.kube/config, your seat's)")
    parser = _Parser(prog="can-has-gpu", description=__doc__.split("\n\n", maxsplit=1)[0], epilog=EXAMPLES,
                     formatter_class=argparse.RawDescriptionHelpFormatter, parents=[common])
    parser.add_argument("--version", action="version", version=f"can-has-gpu {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("reserve", parents=[common], help="reserve GPU(s) now, for a lease",
                       description="Make a claim and a small holder pod so a GPU is allocated now; wait (bounded) "
                                   "until it is, then print which GPU on which node. When none can be allocated, "
                                   "say why instead of waiting forever, and take the claim back.",
                       epilog="example: can-has-gpu reserve --class gpu-40gi.example.com --for 1h",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--class", dest="device_class", help="GPU class (DeviceClass); default: the lab's default")
    p.add_argument("--memory", help="at least this much GPU memory, e.g. 40Gi")
    p.add_argument("--count", type=int, default=1, help="number of GPUs (default 1)")
    p.add_argument("--for", dest="lease", metavar="DURATION", help="lease, e.g. 30m, 2h (default and maximum: the lab's settings)")
    p.add_argument("--wait", metavar="DURATION", help="give up after this long (default: the lab's setting)")

    p = sub.add_parser("run", parents=[common], help="run a container on your reserved GPU, logs streamed",
                       description="Start a pod that shares your reserved claim and stream its log; the exit "
                                   "status is the container's.",
                       epilog="example: can-has-gpu run -- busybox:1.37 sh -c 'env | grep ^GPU_DEVICE_'",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--claim", help="which claim (default: your only allocated one)")
    p.add_argument("--rm", action="store_true", help="delete the pod when it has finished")
    p.add_argument("image", metavar="IMAGE")
    p.add_argument("cmd", metavar="CMD", nargs=argparse.REMAINDER)

    sub.add_parser("status", parents=[common], help="your claims (state, GPU, node, age, lease left) and free GPUs",
                   epilog="example: can-has-gpu status -o json")
    p = sub.add_parser("why", parents=[common], help="why a claim of yours has no GPU (default: the newest)",
                       epilog="example: can-has-gpu why gpu-x7k2p")
    p.add_argument("claim", nargs="?")
    p = sub.add_parser("release", parents=[common], help="give GPU(s) back: the pods, then the claim",
                       epilog="examples: can-has-gpu release gpu-x7k2p; can-has-gpu release --all")
    p.add_argument("claim", nargs="?")
    p.add_argument("--all", action="store_true", help="every claim of yours")
    return parser


class Out:
    """Progress on stderr (text mode only); results on stdout as text or JSON."""

    def __init__(self, fmt: str):
        self.json = fmt == "json"
        self.tty = sys.stderr.isatty()
        self._line = False
        self._last = -100.0

    def progress(self, text: str) -> None:
        if self.json:
            return
        if not self.tty:  # a log, not a terminal: one line every 10 seconds is enough
            if time.monotonic() - self._last < 10:
                return
            self._last = time.monotonic()
        if self.tty:
            sys.stderr.write("\r\033[K" + text)
            self._line = True
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def end_progress(self) -> None:
        if self._line:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self._line = False

    def result(self, data: dict, text: str) -> None:
        self.end_progress()
        print(json.dumps(data, indent=2, sort_keys=True) if self.json else text, flush=True)


# --- helpers ---------------------------------------------------------------------------------

def _devices(view, claim) -> list[dict]:
    info = view.device_info() if view is not None else {}
    data = {(d.get("pool"), d.get("device")): d.get("data") or {}
            for d in (claim.get("status") or {}).get("devices") or []}
    return [{"device": r.get("device"), "pool": r.get("pool"), "driver": r.get("driver"),
             "node": info.get((r.get("pool"), r.get("device")), {}).get("node") or r.get("pool"),
             "memory": info.get((r.get("pool"), r.get("device")), {}).get("memory"),
             "data": data.get((r.get("pool"), r.get("device")), {})} for r in allocated_devices(claim)]


def _claim_row(view, claim, settings, now) -> dict:
    meta = claim["metadata"]
    left = seconds_left(claim, settings.lease_max_seconds, now)
    end = lease_expiry(claim, settings.lease_max_seconds)
    return {"name": meta["name"], "state": claim_state(claim, view.pods), "devices": _devices(view, claim),
            "age_seconds": age_seconds(claim, now), "lease_expires": stamp(end) if end else None,
            "lease_left_seconds": left, "pods": sorted(p["metadata"]["name"] for p in users_of(view, claim))}


def _pick_claim(view, name: str | None, purpose: str, prefer) -> dict:
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


def _explain_sentence(view, claim, now) -> tuple[dict | None, str]:
    try:
        answer = explain(view, claim, now)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # never lose the claim over it
        return None, f"no explanation available ({type(exc).__name__}: {exc})"
    sentence = answer.get("sentence") or answer.get("reason") or "no explanation"
    if view.board is None:
        sentence += (" (The lab's occupancy board is not published, so other seats' GPUs are not counted: "
                     "tell the instructor that dralab-lease-reaper is not running.)")
    return answer, sentence


def _delete(api, kind, name, doing) -> bool:
    found = api.call(doing, "DELETE", api.ns_path(kind, name), body={"gracePeriodSeconds": 0,
                                                                     "propagationPolicy": "Background"},
                     missing_ok=True)
    return found is not None


def _create_claim(api, body, patience: float = 15) -> dict:
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


def _wait_gone(api, kind, name, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and api.call("checking", "GET", api.ns_path(kind, name), missing_ok=True):
        time.sleep(0.5)


# --- commands --------------------------------------------------------------------------------

def cmd_reserve(args, settings, out) -> int:
    try:
        seconds = lease_seconds(args.lease, settings.lease_default, settings.lease_max)
    except LeaseError as exc:
        raise Refusal(str(exc), reason="lease_limit") from None
    try:
        wait = parse_duration(args.wait) if args.wait else settings.wait_seconds
    except ValueError:
        raise Refusal(f"--wait {args.wait} is not a duration: write it like 30s or 5m.", code=EXIT_USAGE,
                      reason="usage") from None
    if args.count < 1 or args.count > 8:
        raise Refusal(f"--count {args.count} is not possible: ask for 1 to 8 GPUs.", reason="usage",
                      code=EXIT_USAGE)
    selectors = []
    if args.memory:
        try:
            selectors.append(memory_selector(settings.driver, args.memory))
        except ValueError as exc:
            raise Refusal(str(exc), reason="usage", code=EXIT_USAGE) from None
    api = Api.connect(args.kubeconfig)
    device_class = args.device_class or settings.default_class
    if api.call("reading the GPU class", "GET", f"/apis/resource.k8s.io/v1/deviceclasses/{device_class}",
                missing_ok=True) is None:
        classes = sorted(c["metadata"]["name"] for c in api.items("listing the GPU classes",
                                                                  "/apis/resource.k8s.io/v1/deviceclasses"))
        raise Refusal(f"There is no GPU class {device_class}: choose one of {', '.join(classes) or 'none'} "
                      "(--class NAME).", reason="unknown_class")
    now = now_utc()
    lease_text = format_age(seconds)
    body = claim_body(device_class, args.count, selectors, stamp(now + datetime.timedelta(seconds=seconds)),
                      lease_text)
    claim = _create_claim(api, body)
    name = claim["metadata"]["name"]
    try:
        api.call("creating the holder pod", "POST", api.ns_path("pods"), holder_pod(name, settings.holder_image))
    except Refusal:
        _delete(api, "resourceclaims", name, "taking your claim back")
        raise
    out.progress(f"Claim {name} made; waiting for a GPU ({args.count} x {device_class}"
                 + (f", memory >= {args.memory}" if args.memory else "") + ")...")
    started = time.monotonic()
    last_sentence, answer = None, None
    while True:
        claim = api.call("reading your claim", "GET", api.ns_path("resourceclaims", name))
        if allocated_devices(claim):
            view = seat_view(api, settings)
            claim = view.claim(name) or claim
            row = _claim_row(view, claim, settings, now_utc())
            result = {"claim": name, "namespace": api.namespace, "devices": row["devices"],
                      "lease_expires": row["lease_expires"], "lease_left_seconds": row["lease_left_seconds"],
                      "waited_seconds": round(time.monotonic() - started, 1), "allocated": True}
            out.result(result, render.reserved_text(result))
            return 0
        pod = api.call("reading the holder pod", "GET", api.ns_path("pods", f"{name}-holder"), missing_ok=True)
        scheduled = next((c for c in ((pod or {}).get("status") or {}).get("conditions") or []
                          if c.get("type") == "PodScheduled"), None)
        waited = time.monotonic() - started
        if scheduled and scheduled.get("status") == "False" and scheduled.get("message"):
            # The scheduler has tried and found nothing: ask the explainer why.
            view = seat_view(api, settings)
            answer, last_sentence = _explain_sentence(view, view.claim(name) or claim, now_utc())
            if answer is not None and not answer.get("allocatable", True):
                break
        if waited >= wait:
            break
        out.progress(f"Waiting for a GPU for claim {name}: {int(waited)}s"
                     + (f" ({last_sentence})" if last_sentence else ""))
        time.sleep(1)
    # No GPU now: take the claim back (it would hold the seat's quota) and say why.
    _delete(api, "pods", f"{name}-holder", "taking the holder pod back")
    _delete(api, "resourceclaims", name, "taking your claim back")
    _wait_gone(api, "resourceclaims", name)
    sentence = last_sentence or f"no GPU was allocated within {format_age(wait)}."
    result = {"claim": name, "namespace": api.namespace, "allocated": False, "sentence": sentence,
              "explanation": answer, "waited_seconds": round(time.monotonic() - started, 1)}
    out.result(result, f"No GPU for you right now: {sentence}\nNothing is held for you; try again later "
                       "(can-has-gpu status shows the free GPUs).")
    return EXIT_NO_GPU


def cmd_status(args, settings, out) -> int:
    api = Api.connect(args.kubeconfig)
    view = seat_view(api, settings)
    now = now_utc()
    claims = sorted(view.claims, key=lambda c: c["metadata"].get("creationTimestamp") or "")
    rows = [_claim_row(view, c, settings, now) for c in claims]
    free = None
    if view.board is not None:
        free_list = board_mod.free_devices(view.slices, view.lab_claims(), settings.driver)
        by_node = {}
        for node, _device in free_list:
            by_node[node] = by_node.get(node, 0) + 1
        free = {"free": len(free_list), "published": len(board_mod.published_devices(view.slices, settings.driver)),
                "by_node": by_node}
    report = {"namespace": api.namespace, "claims": rows, "free": free,
              "lease_default": settings.lease_default, "lease_max": settings.lease_max,
              "classes": sorted(c["metadata"]["name"] for c in view.device_classes)}
    out.result(report, render.status_text(report))
    return 0


def cmd_why(args, settings, out) -> int:
    api = Api.connect(args.kubeconfig)
    view = seat_view(api, settings)
    claim = _pick_claim(view, args.claim, "explain", lambda c: not allocated_devices(c))
    now = now_utc()
    row = _claim_row(view, claim, settings, now)
    if row["devices"]:
        sentence = (f"{row['name']} has its GPU: {render.devices_text(row['devices'])}, lease left "
                    f"{describe_left(row['lease_left_seconds'])}.")
        out.result({"claim": row["name"], "allocatable": True, "allocated": True, "reason": "allocated",
                    "sentence": sentence, "devices": row["devices"]}, sentence)
        return 0
    answer, sentence = _explain_sentence(view, claim, now)
    data = dict(answer or {}, claim=row["name"], allocated=False, sentence=sentence)
    out.result(data, f"{row['name']}: {sentence}")
    return 0 if (answer or {}).get("allocatable") else EXIT_NO_GPU


def cmd_release(args, settings, out) -> int:
    api = Api.connect(args.kubeconfig)
    view = seat_view(api, settings, full=False)
    if args.all and args.claim:
        raise Refusal("Give a claim name or --all, not both.", code=EXIT_USAGE, reason="usage")
    if args.all:
        targets = list(view.claims)
        if not targets:
            out.result({"released": []}, "You hold no claims: nothing to release.")
            return 0
    elif args.claim:
        targets = [_pick_claim(view, args.claim, "release", lambda c: True)]
    elif len(view.claims) == 1:
        targets = list(view.claims)
    elif not view.claims:
        out.result({"released": []}, "You hold no claims: nothing to release.")
        return 0
    else:
        names = ", ".join(sorted(c["metadata"]["name"] for c in view.claims))
        raise Refusal(f"You have {len(view.claims)} claims ({names}): name one, or use --all.", reason="ambiguous")
    released = []
    for claim in targets:
        name = claim["metadata"]["name"]
        pods = sorted(p["metadata"]["name"] for p in users_of(view, claim))
        for pod in pods:
            _delete(api, "pods", pod, f"deleting pod {pod}")
        _delete(api, "resourceclaims", name, f"deleting claim {name}")
        released.append({"claim": name, "pods": pods,
                         "devices": [r.get("device") for r in allocated_devices(claim)]})
    deadline = time.monotonic() + 60
    names = {r["claim"] for r in released}
    while names and time.monotonic() < deadline:
        left = {c["metadata"]["name"] for c in api.items("listing your claims", api.ns_path("resourceclaims"))}
        if not names & left:
            break
        out.progress(f"Releasing {', '.join(sorted(names & left))}...")
        time.sleep(1)
    lines = [f"Released {r['claim']}" + (f" ({', '.join(r['devices'])})" if r["devices"] else "")
             + (f"; deleted pod(s) {', '.join(r['pods'])}" if r["pods"] else "") + "." for r in released]
    out.result({"released": released}, "\n".join(lines))
    return 0


def cmd_run(args, settings, out) -> int:
    if args.cmd and args.cmd[0] == "--":
        args.cmd = args.cmd[1:]
    api = Api.connect(args.kubeconfig)
    view = seat_view(api, settings, full=False)
    claim = _pick_claim(view, args.claim, "run on", lambda c: bool(allocated_devices(c)))
    name = claim["metadata"]["name"]
    if not allocated_devices(claim):
        raise Refusal(f"Claim {name} has no GPU yet: can-has-gpu why {name} says why.", code=EXIT_NO_GPU,
                      reason="pending")
    pod_name = f"{name}-run-{secrets.token_hex(3)}"
    api.call("creating your pod", "POST", api.ns_path("pods"), workload_pod(pod_name, name, args.image, args.cmd))
    out.progress(f"Pod {pod_name} on claim {name}: starting...")
    deadline = time.monotonic() + 180
    pod = None
    while time.monotonic() < deadline:
        pod = api.call("reading your pod", "GET", api.ns_path("pods", pod_name))
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Running", "Succeeded", "Failed"):
            break
        waiting = [s.get("state", {}).get("waiting", {}) for s in (pod.get("status") or {}).get("containerStatuses")
                   or []]
        reason = next((w.get("reason") for w in waiting if w.get("reason")), phase)
        if reason in ("ErrImagePull", "ImagePullBackOff", "InvalidImageName"):
            _delete(api, "pods", pod_name, "deleting your pod")
            raise Refusal(f"The image {args.image} cannot be pulled ({reason}): use an image the lab's registry "
                          "mirror holds, e.g. busybox:1.37.", reason="image")
        out.progress(f"Pod {pod_name} on claim {name}: {reason}...")
        time.sleep(1)
    else:
        raise Refusal(f"Pod {pod_name} did not start within 3m: kubectl describe pod {pod_name} says why.",
                      reason="timeout")
    out.end_progress()
    chunks = []
    for chunk in api.logs(pod_name):
        text = chunk.decode("utf-8", "replace")
        chunks.append(text)
        if not out.json:
            sys.stdout.write(text)
            sys.stdout.flush()
    exit_code = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pod = api.call("reading your pod", "GET", api.ns_path("pods", pod_name))
        terminated = [s.get("state", {}).get("terminated") for s in (pod.get("status") or {}).get("containerStatuses")
                      or []]
        if terminated and terminated[0]:
            exit_code = terminated[0].get("exitCode")
            break
        time.sleep(1)
    if args.rm:
        _delete(api, "pods", pod_name, "deleting your pod")
    node = (pod.get("spec") or {}).get("nodeName")
    data = {"pod": pod_name, "claim": name, "node": node, "exit_code": exit_code, "log": "".join(chunks)}
    if out.json:
        out.result(data, "")
    else:
        sys.stderr.write(f"[pod {pod_name} on {node} exited with {exit_code}]\n")
    return exit_code if isinstance(exit_code, int) and exit_code < 256 else (0 if exit_code == 0 else 1)


COMMANDS = {"reserve": cmd_reserve, "run": cmd_run, "status": cmd_status, "why": cmd_why, "release": cmd_release}


def _wants_json(args_list: list[str]) -> bool:
    """Whether the command line asks for JSON, read before parsing so that a usage error is JSON too."""
    for i, arg in enumerate(args_list):
        if arg in ("-o=json", "--output=json", "-ojson"):
            return True
        if arg in ("-o", "--output") and args_list[i + 1:i + 2] == ["json"]:
            return True
    return False


def _fail(out: Out, reason: str, sentence: str, code: int) -> int:
    """Every failure the same way: {"error": reason, "sentence": ...} on stdout with -o json, else one line on stderr."""
    out.end_progress()
    if out.json:
        print(json.dumps({"error": reason, "sentence": sentence}, indent=2), flush=True)
    else:
        print(f"can-has-gpu: {sentence}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    out = Out("json" if _wants_json(args_list) else "text")
    try:
        args = build_parser().parse_args(args_list)
        args.output = getattr(args, "output", "text")
        args.kubeconfig = getattr(args, "kubeconfig", None)
        out = Out(args.output)
        settings = load_settings()
        return COMMANDS[args.command](args, settings, out)
    except Refusal as exc:
        return _fail(out, exc.reason, exc.sentence, exc.code)
    except SettingsError as exc:
        return _fail(out, "settings", f"{exc}: tell the instructor.", EXIT_REFUSED)
    except Exception as exc:  # pylint: disable=broad-exception-caught
        if os.environ.get("CAN_HAS_GPU_DEBUG"):
            raise
        return _fail(out, "unexpected", f"unexpected error ({type(exc).__name__}: {exc}): tell the instructor; "
                                        "CAN_HAS_GPU_DEBUG=1 shows the details.", EXIT_REFUSED)
    except KeyboardInterrupt:
        return _fail(out, "interrupted", "interrupted (a claim made by reserve stays until released or its lease "
                                         "ends: can-has-gpu status).", 130)


if __name__ == "__main__":
    sys.exit(main())
