"""What a seat can learn about the lab: its claims, templates and pods, the devices, the occupancy, the explainer's
answer (with its diagnosis, plugins/module_utils/dra/diagnosis.py), its pods that wait for a claim no pending claim
tells of (one that does not exist, one the API refused to make, one on a node the pod cannot go to)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from ansible_collections.dralab.workshop.plugins.module_utils.dra import objects as dra_objects
from ansible_collections.dralab.workshop.plugins.module_utils.dra.collect import TAINT_RULES_PATH
from ansible_collections.dralab.workshop.plugins.module_utils.dra.diagnosis import scheduler_message
from ansible_collections.dralab.workshop.plugins.module_utils.dra.pod_claims import pods_waiting as waiting_pods
from ansible_collections.dralab.workshop.plugins.module_utils.values import SEAT_LABEL

from .api import Api, Refusal
from .occupancy import read_board, read_line
from .settings import Settings


@dataclass
class SeatView:
    namespace: str
    claims: list[dict]
    pods: list[dict]
    slices: list[dict] = field(default_factory=list)
    device_classes: list[dict] = field(default_factory=list)
    nodes: list[dict] = field(default_factory=list)
    quotas: list[dict] = field(default_factory=list)
    occupancy: list[dict] | None = None  # None: no occupancy published (the reaper is not running)
    templates: list[dict] | None = None  # the seat's ResourceClaimTemplates (None: not read)
    # Whether the occupancy counts the devices in use outside the seats (False: an older reaper wrote it).
    occupancy_outside: bool = True
    events: list[dict] = field(default_factory=list)  # the seat's Events (why a claim from a template was refused)
    device_taint_rules: list[dict] = field(default_factory=list)  # the instructor's DeviceTaintRules (v1alpha3)
    # From the occupancy: the pods being deleted that other seats' claims are reserved for (stuck holders).
    occupancy_pods: list[dict] = field(default_factory=list)
    # From the occupancy: the GPU waitlist as the keeper published it (None: no line published).
    line: list[dict] | None = None

    def claim(self, name: str) -> dict | None:
        return next((c for c in self.claims if c["metadata"]["name"] == name), None)

    def lab_claims(self) -> list[dict]:
        """Every claim the seat knows of: its own (live), and from the occupancy the other seats' and the anonymous
        ones outside the seats."""
        own = {(self.namespace, c["metadata"]["name"]) for c in self.claims}
        others = [c for c in self.occupancy or []
                  if (c["metadata"].get("namespace"), c["metadata"].get("name")) not in own]
        return list(self.claims) + others

    def lab_pods(self) -> list[dict]:
        """The seat's own pods, and from the occupancy the other seats' pods being deleted that hold a claim."""
        own = {p["metadata"].get("uid") for p in self.pods}
        return list(self.pods) + [p for p in self.occupancy_pods if p["metadata"].get("uid") not in own]

    def seat_namespaces(self) -> list[dict]:
        """Namespace stubs that name the seat of every namespace in the occupancy (the seat cannot read them)."""
        seats = {}
        for claim in self.occupancy or []:
            meta = claim["metadata"]
            seat = (meta.get("labels") or {}).get(SEAT_LABEL)
            if meta.get("namespace") and seat:
                seats[meta["namespace"]] = seat
        return [{"metadata": {"name": ns, "labels": {SEAT_LABEL: seat}}} for ns, seat in sorted(seats.items())]

    def device_info(self) -> dict[tuple[str, str], dict]:
        """(pool, device) -> {node, memory} of the devices published (dra_objects.build_pools: newest generation)."""
        info = {}
        for pool in dra_objects.build_pools(self.slices).values():
            for name, device in pool["devices"].items():
                memory = next((v.get("value") for k, v in (device.get("capacity") or {}).items()
                               if k.endswith("memory")), None)
                info[(pool["pool"], name)] = {"node": pool["node"] or pool["pool"], "memory": memory}
        return info


def seat_view(api: Api, settings: Settings, full: bool = True) -> SeatView:
    """The seat's claims and pods; with full, also its templates, devices, classes, nodes, quotas and the lab's
    occupancy."""
    view = SeatView(api.namespace,
                    api.items("listing your claims", api.ns_path("resourceclaims")),
                    api.items("listing your pods", api.ns_path("pods")))
    if full:
        view.slices = api.items("listing the lab's devices", "/apis/resource.k8s.io/v1/resourceslices")
        view.device_classes = api.items("listing the GPU classes", "/apis/resource.k8s.io/v1/deviceclasses")
        view.nodes = api.items("listing the nodes", "/api/v1/nodes")
        view.quotas = api.items("reading your quota", api.ns_path("resourcequotas"))
        view.templates = api.items("listing your claim templates", api.ns_path("resourceclaimtemplates"))
        try:  # not served without DRADeviceTaintRules (v1alpha3), or not readable with an older reader role
            view.device_taint_rules = api.items("listing the device taint rules", TAINT_RULES_PATH)
        except Refusal:
            view.device_taint_rules = []
        try:
            view.events = api.items("reading your events", api.ns_path("events"))
        except Refusal:
            view.events = []  # only the refusal's words are lost: the pod is reported without them
        configmap = api.call("reading the lab's occupancy board", "GET",
                             api.ns_path("configmaps", settings.occupancy), missing_ok=True)
        view.occupancy, view.occupancy_pods, view.occupancy_outside = read_board(configmap)
        view.line = read_line(configmap)
    return view


def claim_state(claim: dict, pods: list[dict]) -> str:
    """dra_objects.claim_state in the participant's words: releasing, pending, in use (a live pod holds the
    reservation) or allocated (held by no live pod)."""
    if claim["metadata"].get("deletionTimestamp"):
        return "releasing"
    if dra_objects.claim_state(claim) == "pending":
        return "pending"
    return "in use" if dra_objects.in_use(claim, pods) else "allocated"


def explain(view: SeatView, claim: dict, now: datetime.datetime, lease_max: int | None = None) -> dict:
    """The explainer's answer for one of the seat's claims (plugins/module_utils/dra/explain.py), with its diagnosis;
    lease_max: the lab's longest lease (the lease end of the holders it names)."""
    from ansible_collections.dralab.workshop.plugins.module_utils.dra.explain import (  # pylint: disable=import-outside-toplevel
        explain_claim,
    )
    return explain_claim(claim, device_classes=view.device_classes, slices=view.slices, claims=view.lab_claims(),
                         pods=view.lab_pods(), nodes=view.nodes, quotas=view.quotas, namespaces=view.seat_namespaces(),
                         now=now, lease_max=lease_max, device_taint_rules=view.device_taint_rules)


def scheduler_said(view: SeatView, claim: dict) -> str | None:
    """What the scheduler said about the pod of a claim it could not schedule (evidence, apart from the sentence)."""
    return next((m for m in (scheduler_message(p) for p in users_of(view, claim)) if m), None)


def pods_waiting(view: SeatView) -> list[dict]:
    """The seat's pods that wait for a claim that does not exist, that the API refused to make, or that is on a node
    they cannot go to (dra/pod_claims.py findings)."""
    return waiting_pods(view.pods, view.claims, view.templates, view.nodes, view.events)


def users_of(view: SeatView, claim: dict) -> list[dict]:
    return dra_objects.claim_pods(claim, view.pods)
