"""dralab-lease-reaper: ends expired GPU leases in the seat namespaces and publishes the lab's occupancy.

Every --interval seconds it reads the namespaces (a namespace is a seat's when
it carries the collection's seat labels, which seats cannot change), the
ResourceClaims and the pods, then for every claim in a seat namespace whose
lease has ended (the plan: plugins/module_utils/seat/reaper.py) deletes the
pods that use it, then the claim, and logs seat, claim and devices. With
--idle-after it also releases allocated claims no live pod has used for that
long. It never writes outside seat namespaces: its RBAC (participant_tool
role) grants writes only there, and it skips every other namespace itself.

It also writes the occupancy ConfigMap (can_has_gpu.occupancy) into every seat
namespace when the lab's allocations change, so can-has-gpu can name who holds
the GPUs: every allocated claim of the cluster, those of a namespace of no seat
anonymous (in use outside the seats, never by whom).

And it keeps the GPU waitlist (keeper.py, plugins/module_utils/seat/waitlist.py):
each pass gives the GPUs that are free to the seats in line, in arrival order,
and publishes the line with the occupancy. A watch of the claims starts the next
pass early when a claim is deleted, so a released GPU reaches the next seat in
about a second, not at the next interval.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import signal
import sys
import threading
import time

from ansible_collections.dralab.workshop.plugins.module_utils.values import SEAT_LABEL, parse_duration
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import SEAT_NAMESPACE_SELECTOR
from ansible_collections.dralab.workshop.plugins.module_utils.seat.reaper import reaper_plan
from ansible_collections.dralab.workshop.plugins.module_utils.seat.waitlist import DEFAULT_TURN_SECONDS, MIN_TURN_SECONDS

from . import __version__
from .api import Api, Refusal
from .keeper import ClaimWake, Keeper
from .occupancy import occupancy_claims, occupancy_data, occupancy_pods
from .settings import SettingsError, load_settings

LOG = logging.getLogger("dralab-lease-reaper")
OCCUPANCY_REFRESH = 60  # seconds between two rewrites of every occupancy ConfigMap, changed or not


def namespace_stubs(seats: dict[str, str]) -> list[dict]:
    """The seat namespaces as the explainer reads them (name and seat label)."""
    return [{"metadata": {"name": ns, "labels": {SEAT_LABEL: seat}}} for ns, seat in sorted(seats.items())]


class Reaper:
    def __init__(self, api: Api, lease_max: int, idle_after: int | None, occupancy: str, dry_run: bool = False,
                 turn_seconds: int = DEFAULT_TURN_SECONDS):
        self.api = api
        self.keeper = Keeper(api, lease_max, turn_seconds, dry_run)
        self.lease_max = lease_max
        self.idle_after = idle_after
        self.occupancy = occupancy
        self.dry_run = dry_run
        self.idle_since: dict = {}
        self.written: dict[str, dict] = {}  # namespace -> occupancy data last written
        self.refreshed = time.monotonic()

    def seat_namespaces(self) -> dict[str, str]:
        namespaces = self.api.items("listing the seat namespaces", "/api/v1/namespaces",
                                    {"labelSelector": SEAT_NAMESPACE_SELECTOR})
        return {ns["metadata"]["name"]: ns["metadata"]["labels"][SEAT_LABEL] for ns in namespaces
                if not ns["metadata"].get("deletionTimestamp")}

    def once(self) -> list[dict]:
        seats = self.seat_namespaces()
        claims = self.api.items("listing claims", "/apis/resource.k8s.io/v1/resourceclaims")
        pods = self.api.items("listing pods", "/api/v1/pods")
        now = datetime.datetime.now(datetime.timezone.utc)
        actions = reaper_plan(seats, claims, pods, now, self.lease_max, self.idle_after, self.idle_since)
        released = set()
        for action in actions:
            try:
                self.release(action)
            except Refusal as exc:  # one failure does not stop the others
                LOG.warning("seat=%s claim=%s not released: %s", action["seat"], action["claim"], exc.sentence)
                continue
            released.add((action["namespace"], action["claim"]))
        remaining = [c for c in claims if (c["metadata"].get("namespace"), c["metadata"]["name"]) not in released]
        line = self.keeper.once(seats, remaining, pods, namespace_stubs(seats))
        self.publish(seats, occupancy_claims(seats, remaining), occupancy_pods(seats, remaining, pods), line)
        return actions

    def release(self, action: dict) -> None:
        ns = action["namespace"]
        if ns not in self.seat_namespaces():
            # Re-read right before writing: a namespace that lost its seat labels is no seat's any more.
            return
        LOG.info("releasing seat=%s claim=%s devices=%s pods=%s: %s", action["seat"], action["claim"],
                 ",".join(action["devices"]) or "-", ",".join(action["pods"]) or "-", action["reason"])
        if self.dry_run:
            return
        body = {"gracePeriodSeconds": 0, "propagationPolicy": "Background"}
        for pod in action["pods"]:
            self.api.call(f"deleting pod {ns}/{pod}", "DELETE", self.api.ns_path("pods", pod, ns), body,
                          missing_ok=True)
        self.api.call(f"deleting claim {ns}/{action['claim']}", "DELETE",
                      self.api.ns_path("resourceclaims", action["claim"], ns), body, missing_ok=True)

    def publish(self, seats: dict[str, str], rows: list[dict], pods: list[dict] | None = None,
                line: list[dict] | None = None) -> None:
        data = occupancy_data(rows, pods, line)
        if time.monotonic() - self.refreshed > OCCUPANCY_REFRESH:
            # Rewrite every occupancy ConfigMap now and then: one a seat edited or a reset deleted comes back.
            self.written.clear()
            self.refreshed = time.monotonic()
        for ns in sorted(seats):
            if self.written.get(ns) == data or self.dry_run:
                continue
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": self.occupancy, "namespace": ns,
                                 "labels": {"app.kubernetes.io/managed-by": "dralab-lease-reaper"}},
                    "data": data}
            try:
                found = self.api.call("updating the occupancy", "PUT",
                                      self.api.ns_path("configmaps", self.occupancy, ns), body, missing_ok=True)
                if found is None:
                    self.api.call("creating the occupancy", "POST", self.api.ns_path("configmaps", namespace=ns), body)
            except Refusal as exc:
                LOG.warning("occupancy in %s not written: %s", ns, exc.sentence)
                continue
            self.written[ns] = data
        for ns in list(self.written):
            if ns not in seats:
                del self.written[ns]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dralab-lease-reaper", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--kubeconfig", required=True, help="the reaper's own kubeconfig (least privilege)")
    parser.add_argument("--interval", default="5s", help="seconds between passes (default 5s)")
    parser.add_argument("--lease-max", help="maximum lease (default: the settings file's lease_max)")
    parser.add_argument("--idle-after", default="", help="also release allocated claims unused this long (default: off)")
    parser.add_argument("--turn", default=f"{DEFAULT_TURN_SECONDS}s",
                        help="how long a seat in line has to take the GPU it is given (default %(default)s)")
    parser.add_argument("--once", action="store_true", help="one pass, then exit")
    parser.add_argument("--dry-run", action="store_true", help="log what would be released; change nothing")
    parser.add_argument("--version", action="version", version=f"dralab-lease-reaper {__version__}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    try:
        settings = load_settings()
        lease_max = parse_duration(args.lease_max or settings.lease_max)
        interval = max(parse_duration(args.interval), 1)
        idle_after = parse_duration(args.idle_after) if args.idle_after else None
        turn_seconds = parse_duration(args.turn)
        if turn_seconds < MIN_TURN_SECONDS:
            raise ValueError(f"--turn {args.turn} is shorter than {MIN_TURN_SECONDS}s: a seat given a GPU needs "
                             "the time to make its claim")
        api = Api.connect(args.kubeconfig, need_namespace=False)
    except (SettingsError, ValueError) as exc:
        LOG.error("%s", exc)
        return 2
    except Refusal as exc:
        LOG.error("%s", exc.sentence)
        return 2
    reaper = Reaper(api, lease_max, idle_after, settings.occupancy, args.dry_run, turn_seconds)
    LOG.info("dralab-lease-reaper %s: lease max %ss, idle release %s, every %ss", __version__, lease_max,
             f"{idle_after}s" if idle_after else "off", interval)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    wake = threading.Event()
    if not args.once:
        ClaimWake(api, wake).start()
    while not stop:
        started = time.monotonic()
        wake.clear()
        try:
            reaper.once()
        except Refusal as exc:
            LOG.warning("pass failed: %s", exc.sentence)
        if args.once:
            break
        deadline = started + interval
        # A claim deleted (a GPU may be free for the line) starts the next pass early, at most one per second.
        while not stop and time.monotonic() < deadline and not (wake.is_set() and time.monotonic() - started >= 1):
            time.sleep(0.1)
    LOG.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
