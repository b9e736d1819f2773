"""One lab state, three tools, the same words: dra_health's report, the board's state and can-has-gpu as each seat
(its own claims and pods, the occupancy the reaper publishes) say the same verdict and sentence for a claim that
waits for GPUs in use, one that never fits as asked and a pod that waits for a claim that does not exist; what the
scheduler said stays a line of its own. Exit codes: 3 waits, 5 never fits / missing claim."""

from __future__ import annotations

import copy
import datetime
import json

import pytest

from can_has_gpu import cli, service
from can_has_gpu.lab import SeatView
from can_has_gpu.objects import claim_body, memory_selector
from can_has_gpu.occupancy import occupancy_claims, occupancy_data, occupancy_pods, read_board
from can_has_gpu.settings import load_settings
from ansible_collections.dralab.workshop.plugins.module_utils.board import build as board_build
from ansible_collections.dralab.workshop.plugins.module_utils.board import page as board_page
from ansible_collections.dralab.workshop.plugins.module_utils.dra import report as dra_report
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import managed_labels

NOW = datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
NODES = ("node-1", "node-2")
SAID = ("0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, preemption: 0/2 nodes are "
        "available: 2 Preemption is not helpful for scheduling.")
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}


def lab():
    """2 nodes x 2 GPUs of 80Gi, all held by seats user01-user04; user05 waits for one (its holder pod turned down),
    user06 asks for 100Gi, user07's pod names a claim with a typo."""
    slices = [{"metadata": {"name": f"{node}-gpu"},
               "spec": {"driver": "gpu.example.com", "nodeName": node,
                        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}},
                                     "capacity": {"memory": {"value": "80Gi"}}} for i in range(2)]}} for node in NODES]
    nodes = [{"metadata": {"name": n}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}} for n in NODES]
    namespaces = [{"metadata": {"name": f"user{n:02d}", "labels": managed_labels(f"user{n:02d}")}} for n in range(1, 8)]
    claims, pods = [], []
    for number, (node, index) in enumerate(((n, i) for n in NODES for i in range(2)), start=1):
        seat = f"user{number:02d}"
        held = claim_body("gpu.example.com", 1, [], f"2026-12-01T1{2 + number}:00:00Z", "2h")
        held["metadata"].update(name="gpu-held", namespace=seat, uid=f"uid-{seat}",
                                creationTimestamp=f"2026-12-01T{7 + number:02d}:30:00Z")
        held["status"] = {"allocation": {"devices": {"results": [
            {"driver": "gpu.example.com", "pool": node, "device": f"gpu-{index}", "request": "gpu"}]}},
            "reservedFor": [{"resource": "pods", "name": "gpu-held-holder", "uid": f"pod-{seat}"}]}
        claims.append(held)
        pods.append(pod(seat, "gpu-held-holder", "gpu-held", uid=f"pod-{seat}", node=node))
    for seat, selectors in (("user05", []), ("user06", [memory_selector("gpu.example.com", "100Gi")])):
        waiting = claim_body("gpu.example.com", 1, selectors, "2026-12-01T14:00:00Z", "2h")
        waiting["metadata"].update(name="gpu-wait", namespace=seat, uid=f"uid-{seat}",
                                   creationTimestamp="2026-12-01T11:58:00Z")
        claims.append(waiting)
        pods.append(pod(seat, "gpu-wait-holder", "gpu-wait", said=SAID))
    pods.append(pod("user07", "train", "gpu-claimm"))
    return {"device_classes": [CLASS], "slices": slices, "claims": claims, "pods": pods, "nodes": nodes,
            "namespaces": namespaces, "events": [], "device_taint_rules": [], "claim_templates": []}


def pod(namespace, name, claim, uid=None, node=None, said=None):
    status = {"phase": "Running" if node else "Pending"}
    if said:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": said}]
    spec = {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim}], "containers": [{"name": "main"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}"},
            "spec": spec, "status": status}


def seat_view_of(objects, seat):
    """What can-has-gpu sees as a seat: its own claims, pods and templates, the devices, and the reaper's occupancy
    of every seat's allocated claims."""
    seats = {ns["metadata"]["name"]: ns["metadata"]["name"] for ns in objects["namespaces"]}
    configmap = {"data": occupancy_data(occupancy_claims(seats, objects["claims"]),
                                        occupancy_pods(seats, objects["claims"], objects["pods"]))}
    own = [c for c in objects["claims"] if c["metadata"]["namespace"] == seat]
    pods = [p for p in objects["pods"] if p["metadata"]["namespace"] == seat]
    claims, occupancy_pods_read, _outside = read_board(configmap)
    return SeatView(seat, copy.deepcopy(own), copy.deepcopy(pods), objects["slices"], objects["device_classes"],
                    objects["nodes"], [], claims, [], occupancy_pods=occupancy_pods_read)


@pytest.fixture(name="tools")
def tools_fixture(monkeypatch):
    """dra_health's report and the board of the lab, and why(seat) as can-has-gpu runs it for that seat."""
    return tools_of(lab(), monkeypatch)


def tools_of(objects, monkeypatch):
    settings = load_settings()
    built = board_build.build(objects, now=NOW, board={"lease_max": settings.lease_max}, lease_max=settings.lease_max)
    seat = {}

    class Connected:
        namespace = property(lambda self: seat["name"])

    monkeypatch.setattr(service.Api, "connect", lambda *_args, **_kwargs: Connected())
    monkeypatch.setattr(service, "seat_view", lambda api, settings, full=True: seat_view_of(objects, seat["name"]))
    monkeypatch.setattr(service, "now_utc", lambda: NOW)

    def why(name):
        seat["name"] = name
        return service.why(None, settings, None)

    def main(name, *argv):
        seat["name"] = name
        return cli.main(list(argv))
    return built["report"], built["board"], why, main


def problem(report, obj):
    return next(p for p in report["problems"] if p["object"] == obj)


def told(tools, seat):
    """What dra_health, the board and can-has-gpu (as the seat) say of the seat's waiting claim gpu-wait."""
    report, board, why, _main = tools
    [row] = [p for p in board["pending"] if p["namespace"] == seat]
    return problem(report, f"ResourceClaim {seat}/gpu-wait"), row, why(seat)


def test_a_claim_that_waits_is_told_the_same_everywhere(tools, capsys):
    report, board, _why, main = tools
    health, row, answer = told(tools, "user05")
    assert health["verdict"] == row["verdict"] == answer["verdict"] == "waits"
    sentence = health["explain_sentence"]
    assert board_page.words(row["sentence"], board["generated"]) == answer["sentence"] == sentence
    assert sentence == (
        "4 GPUs match; all are in use: gpu-0 on node-1 by user01/gpu-held for 3h30m (lease until "
        "2026-12-01T13:00:00Z), gpu-1 on node-1 by user02/gpu-held for 2h30m (lease until 2026-12-01T14:00:00Z), "
        "gpu-0 on node-2 by user03/gpu-held for 1h30m (lease until 2026-12-01T15:00:00Z), and 1 more. Wait until "
        "one of them is released: the first of their leases ends at 2026-12-01T13:00:00Z (user01/gpu-held).")
    # The scheduler's words are evidence, apart, and the same in each.
    assert health["scheduler_said"] == row["scheduler_said"] == answer["scheduler_said"] == SAID
    assert SAID not in health["reason"] and "freed" not in health["reason"]
    assert health["reason"] == ("claim user05/gpu-wait is pending (pod user05/gpu-wait-holder cannot be scheduled) "
                                "and waits for a device in use: " + sentence)
    lines = dra_report.report_lines(report)
    assert lines[lines.index("  WARNING ResourceClaim user05/gpu-wait: " + health["reason"]) + 1] == \
        "      scheduler said: " + SAID
    assert main("user05", "why") == 3
    assert capsys.readouterr().out == (f"gpu-wait waits for a device in use: {sentence}\nscheduler said: {SAID}\n")


def test_a_claim_that_never_fits_is_told_the_same_everywhere(tools, capsys):
    _report, board, _why, main = tools
    health, row, answer = told(tools, "user06")
    assert health["verdict"] == row["verdict"] == answer["verdict"] == "never_fits"
    assert row["headline"] == answer["headline"] == "never fits as asked"
    sentence = ("no GPU has memory >= 100Gi (the largest has 80Gi). Change the request: ask for no more than the "
                "devices offer.")
    assert health["explain_sentence"] == board_page.words(row["sentence"], board["generated"]) == \
        answer["sentence"] == sentence
    assert main("user06", "why") == 5
    assert capsys.readouterr().out.startswith(f"gpu-wait never fits as asked: {sentence}\nscheduler said: ")
    assert main("user06", "status") == 0
    assert f"  gpu-wait never fits as asked: {sentence}" in capsys.readouterr().out.splitlines()


def test_a_pod_that_waits_for_a_missing_claim_is_told_the_same_everywhere(tools, capsys):
    report, board, why, main = tools
    health = problem(report, "Pod user07/train")
    [shown] = [p for p in board["problems"] if p["object"] == "Pod user07/train"]
    answer = why("user07")
    assert health["type"] == shown["type"] == "pod_claim_missing"
    assert health["verdict"] == shown["verdict"] == answer["verdict"] == "claim_missing"
    assert board_page.words(shown["reason"], board["generated"]) == health["reason"] == answer["sentence"]
    assert answer["sentence"].startswith("pod user07/train waits for ResourceClaim gpu-claimm (its resourceClaims "
                                         "entry gpu), which does not exist in namespace user07")
    assert main("user07", "why") == 5
    assert capsys.readouterr().out == "P" + answer["sentence"][1:] + "\n"
    assert main("user07", "status", "-o", "json") == 0
    assert [f["pod"] for f in json.loads(capsys.readouterr().out)["pods_waiting"]] == ["train"]


def test_why_exits_for_a_pod_that_waits_for_good_beside_a_claim_that_has_its_gpu(monkeypatch, capsys):
    """user01 holds its GPU, and its second pod names a claim with a typo: asked about nothing in particular, why
    tells both and exits 5 (change the pod), as for a seat with no claim at all; asked about the claim, 0."""
    objects = lab()
    objects["pods"].append(pod("user01", "train", "gpu-helt"))
    main = tools_of(objects, monkeypatch)[3]
    assert main("user01", "why") == 5
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gpu-held has its GPU: ") and lines[1].startswith(
        "Pod user01/train waits for ResourceClaim gpu-helt (its resourceClaims entry gpu), which does not exist"), lines
    assert main("user01", "why", "gpu-held") == 0
    # Its claim unallocated and used by no pod yet (it fits now): the waiting pod still decides.
    claim = next(c for c in objects["claims"] if c["metadata"]["namespace"] == "user01")
    claim["status"] = {}
    objects["pods"] = [p for p in objects["pods"] if p["metadata"]["name"] != "gpu-held-holder"
                       or p["metadata"]["namespace"] != "user01"]
    assert main("user01", "why") == 5
    assert "gpu-held fits now: " in capsys.readouterr().out
    assert main("user01", "why", "gpu-held") == 0
    objects["pods"] = [p for p in objects["pods"] if p["metadata"]["name"] != "train"]
    assert main("user01", "why") == 0


def test_a_holder_stuck_being_deleted_is_named_the_same_everywhere(monkeypatch):
    """user01's holder pod is being deleted on node-1, whose kubelet stopped answering: its GPU stays held until
    somebody forces the pod out, and no lease end frees it. A seat cannot read user01's pods: the reaper's occupancy
    carries that pod, so can-has-gpu tells user05 what dra_health and the board tell."""
    objects = lab()
    holder = next(p for p in objects["pods"] if p["metadata"]["namespace"] == "user01")
    holder["metadata"]["deletionTimestamp"] = "2026-12-01T11:50:00Z"
    objects["nodes"][0]["status"]["conditions"][0]["status"] = "Unknown"
    tools = tools_of(objects, monkeypatch)
    health, row, answer = told(tools, "user05")
    sentence = health["explain_sentence"]
    assert health["verdict"] == row["verdict"] == answer["verdict"]
    assert board_page.words(row["sentence"], tools[1]["generated"]) == answer["sentence"] == sentence
    assert "user01/gpu-held" in sentence and "being deleted on node-1" in sentence, sentence


def test_a_claim_waits_for_the_holders_on_nodes_its_pod_can_use(monkeypatch):
    """node-1 is NotReady: user01's and user02's GPUs there would not let user05's pod start when released, so the
    holders on node-2 are named first and user03's lease, not user01's, is the first one that helps."""
    objects = lab()
    objects["nodes"][0]["status"]["conditions"][0]["status"] = "False"
    tools = tools_of(objects, monkeypatch)
    health, row, answer = told(tools, "user05")
    sentence = health["explain_sentence"]
    assert health["verdict"] == row["verdict"] == answer["verdict"] == "waits"
    assert board_page.words(row["sentence"], tools[1]["generated"]) == answer["sentence"] == sentence
    assert sentence == (
        "4 GPUs match; all are in use: gpu-0 on node-2 by user03/gpu-held for 1h30m (lease until "
        "2026-12-01T15:00:00Z), gpu-1 on node-2 by user04/gpu-held for 30m (lease until 2026-12-01T16:00:00Z), "
        "gpu-0 on node-1 by user01/gpu-held for 3h30m (lease until 2026-12-01T13:00:00Z), on a node the pod cannot "
        "use now (node-1 is NotReady), and 1 more. Wait until one of them is released: the first of their leases "
        "ends at 2026-12-01T15:00:00Z (user03/gpu-held).")
