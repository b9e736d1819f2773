"""What a seat learns from the lab's occupancy and the explainer, on recorded-like objects: the full lab names its
holders, a >= 100Gi request names the largest memory, a free GPU is allocatable, GPUs held outside the seats are in
use (and their holder unnamed), an older reaper's occupancy still reads."""

from __future__ import annotations

import datetime
import json
import re

from can_has_gpu import render, service
from can_has_gpu.lab import SeatView, claim_state, explain
from can_has_gpu.objects import claim_body, memory_selector
from can_has_gpu.occupancy import OLD_OCCUPANCY, occupancy_claims, occupancy_data, read_board
from can_has_gpu.settings import load_settings

NOW = datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
NODES = ("cp1", "worker1", "worker2")
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}


def slices():
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpu"},
             "spec": {"driver": "gpu.example.com", "nodeName": node,
                      "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                      "devices": [{"name": f"gpu-{i}",
                                   "attributes": {"index": {"int": i}, "model": {"string": "LATEST-GPU-MODEL"}},
                                   "capacity": {"memory": {"value": "80Gi"}, "compute": {"value": "100"}}}
                                  for i in range(8)]}} for node in NODES]


def nodes():
    return [{"metadata": {"name": n}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}} for n in NODES]


def held(seat, node, index):
    claim = claim_body("gpu.example.com", 1, [], "2026-12-01T14:00:00Z", "2h")
    claim["metadata"].update(name=f"gpu-{seat}", namespace=seat, uid=f"uid-{seat}",
                             creationTimestamp="2026-12-01T10:00:00Z")
    claim["status"] = {"allocation": {"devices": {"results": [
        {"driver": "gpu.example.com", "pool": node, "device": f"gpu-{index}", "request": "gpu"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": [{"resource": "pods", "name": f"gpu-{seat}-holder", "uid": f"pod-{seat}"}]}
    return claim


def mine(selectors=()):
    claim = claim_body("gpu.example.com", 1, list(selectors), "2026-12-01T14:00:00Z", "2h")
    claim["metadata"].update(name="gpu-mine", namespace="user72", uid="uid-mine",
                             creationTimestamp="2026-12-01T11:59:00Z")
    return claim


def view(holders, own):
    seats = {f"user{i:02d}": f"user{i:02d}" for i in range(1, 73)}
    occupancy = read_board({"data": occupancy_data(occupancy_claims(seats, holders))})[0]
    return SeatView("user72", [own], [], slices(), [CLASS], nodes(), [], occupancy)


def test_a_full_lab_names_who_holds_the_gpus():
    holders = [held(f"user{n * 8 + i + 1:02d}", node, i) for n, node in enumerate(NODES) for i in range(8)]
    answer = explain(view(holders, mine()), mine(), NOW)
    assert answer["allocatable"] is False, answer
    named = set(re.findall(r"\buser\d{2}\b", answer["sentence"]))
    assert named and named <= {f"user{i:02d}" for i in range(1, 25)}, answer["sentence"]


def test_one_free_gpu_is_allocatable():
    holders = [held(f"user{n * 8 + i + 1:02d}", node, i) for n, node in enumerate(NODES) for i in range(8)][:-1]
    assert explain(view(holders, mine()), mine(), NOW)["allocatable"] is True


def test_no_gpu_has_100gi():
    own = mine([memory_selector("gpu.example.com", "100Gi")])
    answer = explain(view([], own), own, NOW)
    assert answer["allocatable"] is False
    assert "100Gi" in answer["sentence"] and "80Gi" in answer["sentence"], answer["sentence"]


def holder(seat, phase="Running"):
    """The pod held(seat, ...) is reserved for."""
    return {"metadata": {"name": f"gpu-{seat}-holder", "namespace": seat, "uid": f"pod-{seat}"},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": f"gpu-{seat}"}]}, "status": {"phase": phase}}


def test_claim_state_in_the_participants_words():
    assert claim_state(mine(), []) == "pending"
    held_claim = held("user01", "worker1", 0)
    assert claim_state(held_claim, [holder("user01")]) == "in use"
    assert claim_state(held_claim, [holder("user01", phase="Failed")]) == "allocated"  # reserved for a finished pod
    not_reserved = dict(held_claim, status=dict(held_claim["status"], reservedFor=[]))
    assert claim_state(not_reserved, [holder("user01")]) == "allocated"  # named by a pod, but not reserved for it yet
    deleting = dict(held_claim, metadata=dict(held_claim["metadata"], deletionTimestamp="2026-12-01T12:00:00Z"))
    assert claim_state(deleting, [holder("user01")]) == "releasing"


def lab_held_outside(old_reaper=False):
    """Every GPU held by claims of a namespace of no seat (an instructor's demos); what seat user72 sees of it
    through the occupancy (an older reaper's: the seats' claims only, no scope)."""
    holders = [held("instructor-demos", node, i) for node in NODES for i in range(8)]
    for number, claim in enumerate(holders):
        claim["metadata"]["name"] = f"demo-train-{number}"
    seats = {f"user{i:02d}": f"user{i:02d}" for i in range(1, 73)}
    rows = occupancy_claims(seats, holders)
    data = ({"claims.json": json.dumps({"format": 1, "claims": [r for r in rows if r["metadata"]["namespace"] in seats]})}
            if old_reaper else occupancy_data(rows))
    configmap = {"data": data}
    return SeatView("user72", [mine()], [], slices(), [CLASS], nodes(), [], read_board(configmap)[0],
                    occupancy_outside=read_board(configmap)[2])


def test_gpus_held_outside_the_seats_are_in_use_for_a_seat_and_their_holder_is_not_named():
    seat = lab_held_outside()
    answer, sentence = service.explain_sentence(seat, mine(), NOW, load_settings())
    assert answer["verdict"] == "waits" and answer["allocatable"] is False, sentence
    assert sentence.startswith("24 GPUs match; all are in use: gpu-0 on cp1 in use outside the seats for 2h, "
                               "gpu-1 on cp1 in use outside the seats for 2h, "), sentence
    assert "Wait until one of them is released (no lease ends theirs by itself)." in sentence, sentence
    free = service.free_gpus(seat, load_settings())
    assert (free["free"], free["published"], free["outside"], free["outside_counted"]) == (0, 24, 24, True)
    told = json.dumps(answer) + sentence + render.free_text(free)
    assert "instructor-demos" not in told and "demo-train" not in told, told
    assert render.free_text(free) == "Free GPUs in the lab: 0 of 24; 24 in use outside the seats."


def test_an_older_reapers_occupancy_reads_and_can_has_gpu_says_what_it_does_not_count():
    seat = lab_held_outside(old_reaper=True)
    assert seat.occupancy == [] and not seat.occupancy_outside
    answer, sentence = service.explain_sentence(seat, mine(), NOW, load_settings())
    assert answer["verdict"] == "fits_now" and sentence.endswith(f"({OLD_OCCUPANCY})"), sentence
    text = render.free_text(service.free_gpus(seat, load_settings()))
    assert text == f"Free GPUs in the lab: 24 of 24 (cp1 8, worker1 8, worker2 8). {OLD_OCCUPANCY}"
