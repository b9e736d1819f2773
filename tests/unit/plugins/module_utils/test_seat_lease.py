# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seat/lease.py and seat/reaper.py: lease maths and the reaper's plan: what ends when, and nothing outside
seat namespaces."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import in_use
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_time
from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import (
    LEASE_EXPIRES,
    LeaseError,
    age_seconds,
    describe_left,
    lease_end,
    lease_seconds,
    seconds_left,
)
from ansible_collections.dralab.workshop.plugins.module_utils.seat.reaper import reaper_plan

NOW = datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
HOUR = 3600
MAX = 8 * HOUR


def at(hours_ago: float) -> str:
    return format_time(NOW - datetime.timedelta(hours=hours_ago))


def claim(name="gpu-a", ns="user01", created_hours_ago=1.0, expires=None, devices=("gpu-0",), reserved=(),
          deleting=False):
    meta = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "creationTimestamp": at(created_hours_ago)}
    if expires is not None:
        meta["annotations"] = {LEASE_EXPIRES: expires}
    if deleting:
        meta["deletionTimestamp"] = at(0)
    status = {}
    if devices:
        status["allocation"] = {"devices": {"results": [
            {"driver": "gpu.example.com", "pool": "worker1", "device": d, "request": "gpu"} for d in devices]}}
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": n, "uid": f"pod-{n}"} for n in reserved]
    return {"metadata": meta, "spec": {}, "status": status}


def pod(name, ns="user01", claim_name="gpu-a", phase="Running"):
    return {"metadata": {"name": name, "namespace": ns, "uid": f"pod-{name}"},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}]},
            "status": {"phase": phase}}


SEATS = {"user01": "user01", "user02": "user02"}


def test_lease_seconds_default_and_limits():
    assert lease_seconds(None, "2h", "8h") == 2 * HOUR
    assert lease_seconds("90m", "2h", "8h") == 90 * 60
    assert lease_seconds("8h", "2h", "8h") == MAX
    assert lease_seconds(None, "10h", "8h") == MAX  # a default above the maximum is capped
    with pytest.raises(LeaseError, match="the longest lease is 8h; ask for --for 8h or less"):
        lease_seconds("9h", "2h", "8h")
    with pytest.raises(LeaseError, match="not a duration"):
        lease_seconds("soon", "2h", "8h")
    with pytest.raises(LeaseError, match="at least 1m"):
        lease_seconds("10s", "2h", "8h")


def test_expiry_is_the_annotation_unless_past_the_maximum():
    assert lease_end(claim(created_hours_ago=1, expires=at(-1)), MAX) == NOW + datetime.timedelta(hours=1)
    # A seat that writes a far-future expiry still ends at creation + maximum.
    tampered = claim(created_hours_ago=1, expires=at(-100))
    assert lease_end(tampered, MAX) == NOW + datetime.timedelta(hours=7)
    # No annotation (made with kubectl): creation + maximum.
    assert seconds_left(claim(created_hours_ago=2), MAX, NOW) == 6 * HOUR
    assert describe_left(seconds_left(claim(created_hours_ago=9), MAX, NOW)) == "expired"
    assert describe_left(90 * 60) == "1h30m"


def test_age_is_whole_seconds_since_creation_and_never_negative():
    assert age_seconds(claim(created_hours_ago=1.5), NOW) == 90 * 60
    assert age_seconds(claim(created_hours_ago=-1), NOW) == 0  # a clock behind the API server's
    assert age_seconds({"metadata": {"name": "not-created-yet"}}, NOW) is None
    assert age_seconds(None, NOW) is None


def test_plan_releases_expired_leases_with_their_pods():
    expired = claim("gpu-old", expires=at(0.5), reserved=("gpu-old-holder",))
    live = claim("gpu-new", ns="user02", expires=at(-1))
    pods = [pod("gpu-old-holder", claim_name="gpu-old"), pod("gpu-old-run-1", claim_name="gpu-old"),
            pod("other", claim_name="gpu-x")]
    plan = reaper_plan(SEATS, [expired, live], pods, NOW, MAX)
    assert plan == [{"seat": "user01", "namespace": "user01", "claim": "gpu-old", "devices": ["gpu-0"],
                     "pods": ["gpu-old-holder", "gpu-old-run-1"], "reason": f"lease ended {at(0.5)}"}]


def test_plan_never_touches_namespaces_that_are_not_seats():
    foreign = claim("gpu-old", ns="kube-system", created_hours_ago=100, expires=at(50))
    assert reaper_plan(SEATS, [foreign], [pod("p", ns="kube-system", claim_name="gpu-old")], NOW, MAX) == []


def test_plan_skips_claims_being_deleted_and_maps_namespace_to_seat():
    assert reaper_plan(SEATS, [claim(expires=at(1), deleting=True)], [], NOW, MAX) == []
    plan = reaper_plan({"team-a": "alice"}, [claim(ns="team-a", expires=at(1))], [], NOW, MAX)
    assert [(a["seat"], a["namespace"]) for a in plan] == [("alice", "team-a")]


def test_idle_release_is_off_by_default_and_counts_from_first_seen():
    idle = claim("gpu-idle", expires=at(-5), reserved=("gone",))  # reserved for a pod that no longer exists
    assert reaper_plan(SEATS, [idle], [], NOW, MAX) == []
    since = {}
    assert reaper_plan(SEATS, [idle], [], NOW, MAX, idle_after=1800, idle_since=since) == []
    assert since == {"uid-user01-gpu-idle": NOW}
    later = NOW + datetime.timedelta(minutes=31)
    plan = reaper_plan(SEATS, [idle], [], later, MAX, idle_after=1800, idle_since=since)
    assert [a["claim"] for a in plan] == ["gpu-idle"] and plan[0]["reason"].startswith("allocated and unused for 31m")


def test_a_live_pod_keeps_a_claim_in_use():
    used = claim("gpu-a", expires=at(-5), reserved=("holder",))
    assert in_use(used, [pod("holder")])
    assert not in_use(used, [pod("holder", phase="Succeeded")])
    since = {"uid-user01-gpu-a": NOW - datetime.timedelta(hours=3)}
    assert reaper_plan(SEATS, [used], [pod("holder")], NOW, MAX, idle_after=60, idle_since=since) == []
    assert since == {}  # in use again: the idle clock starts over


def test_the_pods_of_a_claim_include_the_ones_it_is_reserved_for():
    from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import claim_pods

    held = claim("gpu-a", reserved=("by-template",))
    named, other = pod("named"), pod("other", claim_name="gpu-b")
    reserving = {"metadata": {"name": "by-template", "namespace": "user01", "uid": "pod-by-template"},
                 "spec": {}, "status": {"phase": "Running"}}
    elsewhere = dict(pod("named-elsewhere", ns="user02"))
    assert [p["metadata"]["name"] for p in claim_pods(held, [reserving, other, named, elsewhere])] == \
        ["by-template", "named"]
