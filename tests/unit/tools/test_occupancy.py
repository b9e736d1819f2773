"""The lab's occupancy: what the reaper publishes to every seat and how can-has-gpu reads it back."""

from __future__ import annotations

import json

from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import LEASE_EXPIRES
from can_has_gpu.occupancy import (
    OCCUPANCY_KEY,
    OUTSIDE_NAMESPACE,
    free_devices,
    occupancy_claims,
    occupancy_data,
    occupancy_pods,
    outside_devices,
    published_devices,
    read_board,
)


def claim(name, ns, device=None, annotations=None):
    status = {"reservedFor": [{"resource": "pods", "name": f"{name}-holder", "uid": "u1"}]}
    if device:
        status["allocation"] = {"devices": {"results": [{"driver": "gpu.example.com", "pool": device[0],
                                                         "device": device[1], "request": "gpu"}]}}
    return {"metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "creationTimestamp": "2026-12-01T10:00:00Z",
                         "annotations": annotations or {}, "labels": {"secret-label": "x"}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
            "status": status}


def slice_of(node, count=8):
    return {"spec": {"driver": "gpu.example.com", "nodeName": node, "pool": {"name": node},
                     "devices": [{"name": f"gpu-{i}"} for i in range(count)]}}


def test_occupancy_holds_every_allocated_claim_the_seats_trimmed_the_others_anonymous():
    claims = [claim("a", "user01", ("worker1", "gpu-3"), {LEASE_EXPIRES: "2026-12-01T12:00:00Z", "other": "x"}),
              claim("b", "user02"),  # pending
              claim("c", "instructor-demos", ("worker1", "gpu-4")),  # not a seat
              claim("d", "kube-system", ("worker2", "gpu-0"))]
    claims[2]["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {"memory": "10Gi"}
    admin = claim("e", "kube-system", ("worker2", "gpu-1"))  # admin access holds no device
    admin["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    rows = occupancy_claims({"user01": "user01", "user02": "user02"}, claims + [admin])
    assert [(r["metadata"]["namespace"], r["metadata"]["name"]) for r in rows] == [
        ("user01", "a"), (OUTSIDE_NAMESPACE, "outside-1"), (OUTSIDE_NAMESPACE, "outside-2")]
    meta = rows[0]["metadata"]
    assert meta["labels"] == {"dralab.workshop/seat": "user01"}
    assert meta["annotations"] == {LEASE_EXPIRES: "2026-12-01T12:00:00Z"}
    assert rows[0]["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-3"
    # Outside the seats: the devices and the creation time, nothing that names the holder.
    assert [r["status"]["allocation"]["devices"]["results"] for r in rows[1:]] == [
        [{"driver": "gpu.example.com", "pool": "worker1", "device": "gpu-4", "consumedCapacity": {"memory": "10Gi"}}],
        [{"driver": "gpu.example.com", "pool": "worker2", "device": "gpu-0"}]]
    published = json.dumps(rows[1:])
    for secret in ("instructor-demos", "kube-system", "uid-", "-holder", "secret-label", '"gpu"', "deviceClassName"):
        assert secret not in published, secret
    assert rows[1]["metadata"]["creationTimestamp"] == "2026-12-01T10:00:00Z"


def test_a_seat_counts_the_gpus_in_use_outside_the_seats_and_names_no_holder():
    slices = [slice_of("worker1", count=2)]
    claims = [claim("c", "instructor-demos", ("worker1", "gpu-0")), claim("d", "instructor-demos", ("worker1", "gpu-1"))]
    occupancy = read_board({"data": occupancy_data(occupancy_claims({"user01": "user01"}, claims))})[0]
    assert free_devices(slices, occupancy, "gpu.example.com") == []
    assert outside_devices(occupancy, "gpu.example.com") == 2


def test_the_occupancy_says_it_counts_the_gpus_outside_the_seats_and_an_older_one_still_reads():
    rows = occupancy_claims({"user01": "user01"}, [claim("a", "user01", ("worker1", "gpu-3"))])
    assert read_board({"data": occupancy_data(rows)})[2]
    old = {"data": {OCCUPANCY_KEY: json.dumps({"format": 1, "claims": rows})}}  # an older reaper: no scope
    assert read_board(old)[0] == json.loads(json.dumps(rows)) and not read_board(old)[2]
    assert not read_board(None)[2] and not read_board({"data": {OCCUPANCY_KEY: "not json"}})[2]


def test_occupancy_round_trip_and_unreadable_ones():
    rows = occupancy_claims({"user01": "user01"}, [claim("a", "user01", ("worker1", "gpu-3"))])
    data = occupancy_data(rows)
    assert occupancy_data(rows) == data  # stable: an unchanged occupancy is not rewritten
    assert read_board({"data": data})[0] == json.loads(json.dumps(rows))
    assert read_board(None)[0] is None
    assert read_board({"data": {OCCUPANCY_KEY: "not json"}})[0] is None
    assert read_board({"data": {OCCUPANCY_KEY: json.dumps({"format": 99, "claims": []})}})[0] is None


def test_free_devices_subtracts_every_allocation():
    slices = [slice_of("worker1"), slice_of("worker2")]
    assert len(published_devices(slices, "gpu.example.com")) == 16
    claims = [claim("a", "user01", ("worker1", "gpu-3")), claim("b", "user02", ("worker2", "gpu-0"))]
    free = free_devices(slices, claims, "gpu.example.com")
    assert len(free) == 14 and ("worker1", "gpu-3") not in free and ("worker1", "gpu-2") in free


def test_only_the_newest_generation_of_a_pool_is_published():
    # The plugin republished worker1 with 6 devices: the old slice (8 devices) is still listed for a moment,
    # but the scheduler allocates only from the newest generation (dra/objects.py build_pools).
    old, new = slice_of("worker1"), slice_of("worker1", count=6)
    old["spec"]["pool"].update(generation=1, resourceSliceCount=1)
    new["spec"]["pool"].update(generation=2, resourceSliceCount=1)
    assert [d for _n, _p, d in published_devices([old, new], "gpu.example.com")] == [f"gpu-{i}" for i in range(6)]
    assert len(free_devices([old, new], [claim("a", "user01", ("worker1", "gpu-7"))], "gpu.example.com")) == 6


def pod(name, ns, uid, deleting=True, node="worker1"):
    meta = {"name": name, "namespace": ns, "uid": uid, "labels": {"secret-label": "x"}, "annotations": {"a": "b"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T11:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node, "containers": [{"name": "main", "image": "secret-image"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}}


def test_occupancy_carries_the_pods_being_deleted_that_hold_a_seats_claim_trimmed():
    held = claim("a", "user01", ("worker1", "gpu-3"))  # reserved for uid u1
    outside = claim("c", "instructor-demos", ("worker1", "gpu-4"))
    outside["status"]["reservedFor"][0]["uid"] = "u3"
    pending = claim("b", "user02")
    pending["status"]["reservedFor"][0]["uid"] = "u2"
    pods = [pod("a-holder", "user01", "u1"), pod("b-holder", "user02", "u2"), pod("c-holder", "instructor-demos", "u3"),
            pod("live", "user01", "u4", deleting=False)]
    seats = {"user01": "user01", "user02": "user02"}
    found = occupancy_pods(seats, [held, outside, pending], pods)
    assert found == [{"metadata": {"name": "a-holder", "namespace": "user01", "uid": "u1",
                                   "deletionTimestamp": "2026-12-01T11:00:00Z"},
                      "spec": {"nodeName": "worker1"}, "status": {"phase": "Running"}}]
    configmap = {"data": occupancy_data(occupancy_claims(seats, [held]), found)}
    assert read_board(configmap)[1] == found
    # An occupancy of an older reaper has no pods; one without any reads as none.
    assert read_board({"data": {OCCUPANCY_KEY: json.dumps({"format": 1, "claims": []})}})[1] == []
    assert read_board(None)[1] == [] and read_board({"data": {OCCUPANCY_KEY: "{"}})[1] == []
