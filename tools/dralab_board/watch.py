"""One list-then-watch per resource kind, in a thread each, feeding a shared cache.

A Watcher lists its kind (KubeClient's one paging loop), hands the items to
the cache, then watches from the list's resourceVersion (KubeClient.watch) and
hands on every change. When the server ends a watch it watches again from the
last version seen; when the version is too old (HTTP 410) it lists again; on
any other error it waits (1 s, doubling up to 30 s) and carries on. The cache
is only changed on the event loop's thread (call_soon_threadsafe), so the
board is always built from a consistent copy.
"""

from __future__ import annotations

import logging
import threading
import time

from ansible_collections.dralab.workshop.plugins.module_utils.dra.collect import CLAIM_EVENTS_QUERY, EVENTS_PATH, EVENTS_QUERY, LIST_PATHS
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import (
    K8sError,
    KubeClient,
    list_pages_with_version,
)

LOG = logging.getLogger("dralab-board")

# (kind, path, query): what the board reads, as dra_health reads it.
KINDS = tuple((kind, path, None) for kind, path in LIST_PATHS) + (
    ("events", EVENTS_PATH, EVENTS_QUERY), ("claim_events", EVENTS_PATH, CLAIM_EVENTS_QUERY))
# Changes in a seat namespace that count as the seat's activity (a deletion leaves no timestamp behind).
ACTIVITY_KINDS = ("claims", "pods")
GONE = 410


def _key(obj: dict) -> tuple:
    meta = obj.get("metadata") or {}
    return meta.get("namespace"), meta.get("name")


def _slim(obj: dict) -> dict:
    """The object without its managedFields (the board never reads them; they are half of a pod)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj = dict(obj, metadata={k: v for k, v in meta.items() if k != "managedFields"})
    return obj


class Cache:
    """The objects of every kind, as the watches last reported them. Only touched on the loop's thread."""

    def __init__(self, on_change):
        self.items = {kind: {} for kind, _path, _query in KINDS}
        self.synced = set()
        self.relists = {kind: 0 for kind, _path, _query in KINDS}
        self.activity: dict[str, float] = {}  # namespace -> time (epoch seconds) of the last change seen there
        self.on_change = on_change

    def replace(self, kind: str, items: list[dict]) -> None:
        if kind in self.synced:
            self.relists[kind] += 1
        self.items[kind] = {_key(o): _slim(o) for o in items}
        self.synced.add(kind)
        self.on_change()

    def apply(self, kind: str, event_type: str, obj: dict) -> None:
        key = _key(obj)
        if event_type == "DELETED":
            self.items[kind].pop(key, None)
        else:
            self.items[kind][key] = _slim(obj)
        if kind in ACTIVITY_KINDS and event_type in ("ADDED", "DELETED") and key[0]:
            self.activity[key[0]] = time.time()
        self.on_change()

    def ready(self) -> bool:
        return len(self.synced) == len(self.items)

    def objects(self) -> dict[str, list[dict]]:
        """A copy of the lists (the objects themselves are replaced, never changed, by events)."""
        return {kind: list(store.values()) for kind, store in self.items.items()}


class Watcher(threading.Thread):
    """List, then watch, one kind for ever (a daemon thread)."""

    def __init__(self, kubeconfig: str, kind: str, path: str, query: dict | None, loop, cache: Cache):
        super().__init__(name=f"watch-{kind}", daemon=True)
        self.client = KubeClient.from_params({"kubeconfig": kubeconfig})
        self.kind, self.path, self.query = kind, path, query
        self.loop, self.cache = loop, cache
        self.watches = 0  # watch requests made (each relist or re-watch is one more)

    def hand(self, method, *args) -> None:
        self.loop.call_soon_threadsafe(method, self.kind, *args)

    def run(self) -> None:
        version = None
        backoff = 1.0
        while True:
            try:
                if version is None:
                    items, version = list_pages_with_version(self.client, self.path, self.query)
                    self.hand(self.cache.replace, items)
                self.watches += 1
                for event in self.client.watch(self.path, version, self.query):
                    obj = event.get("object") or {}
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        self.hand(self.cache.apply, event["type"], obj)
                    backoff = 1.0
            except K8sError as exc:
                if exc.status == GONE:
                    LOG.info("%s: resourceVersion %s is too old; listing again", self.kind, version)
                    version = None
                    continue
                LOG.warning("%s: %s; retrying in %.0fs", self.kind, exc, backoff)
                time.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
