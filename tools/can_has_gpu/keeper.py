"""The waitlist's keeper, one pass of the lease reaper: it gives the next free GPUs to the seats in line.

The plan is plugins/module_utils/seat/waitlist.py keeper_plan; this file reads what it needs (only when a seat
is in line or a turn is open) and carries it out: a turn is given by removing the pod's scheduling gate, a seat
that left or let its turn pass loses its pod. The turns given and
not yet taken live in the keeper's memory: nothing a seat writes can open a turn.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time

from ansible_collections.dralab.workshop.plugins.module_utils.dra.collect import TAINT_RULES_PATH
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, list_pages_with_version
from ansible_collections.dralab.workshop.plugins.module_utils.seat.waitlist import (
    DEFAULT_TURN_SECONDS,
    gated,
    keeper_plan,
    line_rows,
)

from ansible_collections.dralab.workshop.plugins.module_utils.values import WAITLIST_GATE

from .api import RESOURCE, Api, Refusal

LOG = logging.getLogger("dralab-lease-reaper")
JSON_PATCH = "application/json-patch+json"


class Keeper:
    def __init__(self, api: Api, lease_max: int, turn_seconds: int = DEFAULT_TURN_SECONDS, dry_run: bool = False):
        self.api = api
        self.lease_max = lease_max
        self.turn_seconds = turn_seconds
        self.dry_run = dry_run
        self.turns: dict = {}

    def read(self, seats: dict[str, str], claims: list[dict], pods: list[dict],
             namespaces: list[dict]) -> dict | None:
        """The objects the plan needs; None when no seat is in line and no turn is open (nothing more is read)."""
        if not self.turns and not any(gated(p) and p["metadata"].get("namespace") in seats for p in pods):
            return None
        objects = {"seat_namespaces": seats, "claims": claims, "pods": pods, "namespaces": namespaces,
                   "slices": self.api.items("listing the devices", f"{RESOURCE}/resourceslices"),
                   "device_classes": self.api.items("listing the device classes", f"{RESOURCE}/deviceclasses"),
                   "nodes": self.api.items("listing the nodes", "/api/v1/nodes"),
                   "quotas": self.api.items("listing the quotas", "/api/v1/resourcequotas")}
        try:  # not served without DRADeviceTaintRules
            objects["device_taint_rules"] = self.api.items("listing the device taint rules", TAINT_RULES_PATH)
        except Refusal:
            objects["device_taint_rules"] = []
        return objects

    def once(self, seats: dict[str, str], claims: list[dict], pods: list[dict], namespaces: list[dict],
             now: datetime.datetime | None = None) -> list[dict]:
        """One pass: give the turns that have come, drop who left; returns the line (rows every seat may read)."""
        objects = self.read(seats, claims, pods, namespaces)
        if objects is None:
            return []
        plan = keeper_plan(objects, now or datetime.datetime.now(datetime.timezone.utc), self.turns,
                           self.lease_max, self.turn_seconds)
        by_key = {(p["metadata"].get("namespace"), p["metadata"].get("name")): p for p in pods}
        for entry in plan["give"]:
            self.give(entry, by_key.get((entry["namespace"], entry["pod"])))
        for entry in plan["drop"]:
            self.drop(entry)
        return line_rows(plan["line"])

    def give(self, entry: dict, pod: dict | None) -> None:
        LOG.info("turn for seat=%s pod=%s class=%s devices=%s", entry["seat"], entry["pod"], entry["device_class"],
                 ",".join(d[2] for d in entry["devices"]))
        if self.dry_run or pod is None:
            return
        gates = [g for g in pod["spec"].get("schedulingGates") or [] if g.get("name") != WAITLIST_GATE]
        patch = [{"op": "test", "path": "/metadata/uid", "value": pod["metadata"]["uid"]},
                 {"op": "replace", "path": "/spec/schedulingGates", "value": gates}]
        try:
            self.api.call(f"giving {entry['namespace']}/{entry['pod']} its turn", "PATCH",
                          self.api.ns_path("pods", entry["pod"], entry["namespace"]), patch,
                          content_type=JSON_PATCH)
        except Refusal as exc:
            LOG.warning("seat=%s pod=%s not given its turn: %s", entry["seat"], entry["pod"], exc.sentence)
            self.turns.pop((entry["namespace"], entry["pod"]), None)

    def drop(self, entry: dict) -> None:
        LOG.info("seat=%s pod=%s leaves the line: %s", entry["seat"], entry["pod"], entry["reason"])
        if self.dry_run:
            return
        body = {"gracePeriodSeconds": 0, "propagationPolicy": "Background"}
        ns = entry["namespace"]
        try:
            self.api.call(f"deleting pod {ns}/{entry['pod']}", "DELETE", self.api.ns_path("pods", entry["pod"], ns),
                          body, missing_ok=True)
        except Refusal as exc:
            LOG.warning("seat=%s pod=%s not removed from the line: %s", entry["seat"], entry["pod"], exc.sentence)


class ClaimWake(threading.Thread):
    """Wakes the reaper's loop (wake, a threading.Event) when a claim of the cluster is deleted: a GPU may have come
    free for the first seat in line, and the next pass gives it at once instead of at the next interval. One watch
    of the claims; listed again when its version is too old, retried after any other error."""

    def __init__(self, api: Api, wake: threading.Event):
        super().__init__(name="claim-wake", daemon=True)
        self.api, self.wake = api, wake

    def run(self) -> None:
        path, version = f"{RESOURCE}/resourceclaims", None
        while True:
            try:
                if version is None:
                    version = list_pages_with_version(self.api.client, path, {"limit": 1})[1]
                for event in self.api.client.watch(path, version):
                    version = (event.get("object") or {}).get("metadata", {}).get("resourceVersion") or version
                    if event.get("type") == "DELETED":
                        self.wake.set()
            except K8sError as exc:
                if exc.status == 410:
                    version = None
                    continue
                LOG.warning("watching the claims failed (%s): passes every interval only, retrying", exc)
                time.sleep(5)
