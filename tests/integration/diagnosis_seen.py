"""What each tool says about a situation of the diagnosis table (docs/diagnosis.md), read back at one moment:
dra_health's report, the board's state (dra_health's snapshot JSON) and can-has-gpu why run as each seat with its own
kubeconfig; and the record of it, per situation, written as diagnosis-table-<module>.json and .md in the lab's
directory (workshop.dir) so that a person can read the whole table after a run: the sentences actually read back."""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

import pytest
from kubernetes import client

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.board import page as board_page
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import DEFAULT_DRIVER
from can_has_gpu_runner import Reaper, Tool
from k8s_helpers import (allocated, api_from_kubeconfig, clear_namespaces, delete_namespace, pod_body, resource_api,
                         wait_for)


# Where the tables are kept after the run (the lab's directory goes with its control plane).
KEPT = Path(os.environ.get("DRALAB_CACHE") or Path.home() / ".cache" / "dralab") / "diagnosis-tables"


def ageless(sentence: str) -> str:
    """The sentence without the holders' ages ("for 7s"): the tools read the lab seconds apart."""
    return re.sub(r" for (?:\d+[smhd])+\b", " for AGE", sentence)


SETTINGS = {"lease_default": "2h", "lease_max": "8h", "wait": "120s", "holder_image": "busybox:1.37",
            "default_class": lab_settings.default("dralab_device_classes")[0]["name"], "driver": DEFAULT_DRIVER}


@contextlib.contextmanager
def seat_tools(control_plane, workshop, tmp_path_factory, name, seats):
    """can-has-gpu installed for the seats (their namespaces cleared first) and the lease reaper running (the
    occupancy board can-has-gpu reads) while the situations are built; the seats cleared afterwards, and the reaper
    must stop cleanly."""
    admin = control_plane.api_client
    clear_namespaces(admin, seats)
    tool = Tool(tmp_path_factory.mktemp(name), workshop, SETTINGS)
    reaper = Reaper(tool, workshop.artifacts / "dralab-lease-reaper.kubeconfig", "--interval", "1s")
    try:
        yield tool
    finally:
        try:
            clear_namespaces(admin, seats)
        finally:
            assert reaper.stop() == 0, reaper.text()


@contextlib.contextmanager
def instructor_holding(admin, namespace, claims):
    """A namespace of the instructor's (no seat's) with the claims and a pod using each, every claim allocated
    before it yields their names; the namespace deleted afterwards."""
    core, resource = client.CoreV1Api(admin), resource_api(admin)
    core.create_namespace({"metadata": {"name": namespace}})
    try:
        wait_for("the default service account", lambda: core.read_namespaced_service_account("default", namespace))
        names = [claim["metadata"]["name"] for claim in claims]
        for claim, name in zip(claims, names):
            resource.create_namespaced_resource_claim(namespace, claim)
            core.create_namespaced_pod(namespace, pod_body(name, claim=name))
        for name in names:
            wait_for(f"{name} allocated", lambda name=name: allocated(
                resource.read_namespaced_resource_claim(name, namespace)))
        yield names
    finally:
        delete_namespace(admin, namespace)


def create_as(workshop, seat, claims=(), templates=(), pods=()):
    """Create claims, claim templates and pods as the seat (its own kubeconfig), as a participant would."""
    api = api_from_kubeconfig(workshop.seat_kubeconfig(seat))
    try:
        for claim in claims:
            resource_api(api).create_namespaced_resource_claim(seat, claim)
        for template in templates:
            resource_api(api).create_namespaced_resource_claim_template(seat, template)
        for pod in pods:
            client.CoreV1Api(api).create_namespaced_pod(seat, pod)
    finally:
        api.close()


class Seen:
    """What each tool said at one moment: dra_health's report, the board's state, can-has-gpu why per seat."""

    def __init__(self, workshop, tool, name, seats):
        dest = workshop.dir / f"diagnosis-table-{name}.html"
        self.report = workshop.health(snapshot_dest=str(dest))
        self.board = json.loads(dest.with_suffix(".json").read_text())
        self.why = {seat: tool.run(seat, "why", "-o", "json") for seat in seats}

    def problem(self, obj):
        found = [p for p in self.report["problems"] if p["object"] == obj]
        assert found, f"dra_health reports nothing for {obj}: {[p['object'] for p in self.report['problems']]}"
        return found[0]

    def board_problem(self, obj):
        [row] = [p for p in self.board["problems"] if p["object"] == obj]
        return dict(row, text=board_page.words(row["reason"], self.board["generated"]))


class Record:
    """The rows of the table as the tools told them; written when the module's tests are done."""

    def __init__(self, directory: Path, module: str):
        self.path = Path(directory) / f"diagnosis-table-{module}"
        self.rows: list[dict] = []

    def add(self, situation, seen, obj, seat=None, pod=None, outcome=None):
        """One situation: dra_health's and the board's sentence for obj, can-has-gpu why's of the seat (its claim's,
        or the sentence of its waiting pod), the scheduler's message and what the scheduler finally did."""
        health = seen.problem(obj)
        row = {"situation": situation, "object": obj, "verdict": health.get("verdict") or health["type"],
               "dra_health": health.get("explain_sentence") or health.get("reason"),
               "board": seen.board_problem(obj)["text"], "scheduler_said": health.get("scheduler_said"),
               "outcome": outcome}
        if seat:
            answer = seen.why[seat]
            told = answer.json()
            if pod:
                told = {f["pod"]: f for f in told.get("pods_waiting") or []}.get(pod, {})
            row["can_has_gpu"] = {"seat": seat, "sentence": told.get("sentence"), "verdict": told.get("verdict"),
                                  "exit": answer.rc}
        self.rows.append(row)
        return row

    def write(self):
        """The table as JSON and Markdown beside the lab, and a copy in KEPT that outlives the run."""
        KEPT.mkdir(parents=True, exist_ok=True)
        for path in (self.path, KEPT / self.path.name):
            self._write(path)

    def _write(self, path: Path):
        path.with_suffix(".json").write_text(json.dumps(self.rows, indent=2) + "\n")
        lines = ["| Situation | Verdict | dra_health | board | can-has-gpu why (exit) | scheduler said | outcome |",
                 "|---|---|---|---|---|---|---|"]
        for row in self.rows:
            tool = row.get("can_has_gpu")
            cells = [row["situation"], row["verdict"], row["dra_health"], row["board"],
                     f"{tool['sentence']} (exit {tool['exit']}, as {tool['seat']})" if tool else "-",
                     row["scheduler_said"] or "-", row["outcome"] or "-"]
            lines.append("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
        path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def record_fixture(module: str):
    """The module's `record` fixture: a Record, written to diagnosis-table-<module>.json and .md in workshop.dir
    when the module's tests are done (`record = record_fixture("lab")` in the module)."""
    @pytest.fixture(scope="module", name="record")
    def record(workshop):
        rec = Record(workshop.dir, module)
        yield rec
        rec.write()
    return record
