"""A seat cannot hog the cluster's pods, CPU or memory: its quota refuses the pod over the limit, and a
container that asks for nothing gets the LimitRange's defaults (roles/workshop_users: quota and LimitRange
sized from workshop_users_quota_* and workshop_users_container_default_*).

Nor can it fill etcd, which every seat shares: every namespaced kind its RBAC lets it create is counted by its
quota (count/<kind>, workshop_users_quota_objects), so a seat stores at most that many objects of 1.5 MiB, and it
may not write Events, which no quota counts. The seat finds out what it may create itself
(SelfSubjectRulesReview), so a kind the lab forgot to count fails the test."""

from __future__ import annotations

import datetime
import sys

from kubernetes import client

from k8s_helpers import IMAGE, clear_namespaces, core_api, expect_api_error, raw_get, wait_for

SEAT = "user61"
PODS = 10  # workshop_users_quota_pods (the default)
CPU = "4"  # workshop_users_quota_cpu
DEFAULT_LIMITS = {"cpu": "500m", "memory": "512Mi", "ephemeral-storage": "1Gi"}  # workshop_users_container_default_limits
DEFAULT_REQUESTS = {"cpu": "100m", "memory": "128Mi", "ephemeral-storage": "64Mi"}  # ..._container_default_requests


def plain_pod(name: str, resources: dict | None = None) -> dict:
    container = {"name": "ctr", "image": IMAGE}
    if resources:
        container["resources"] = resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"terminationGracePeriodSeconds": 0, "containers": [container]}}


def test_a_container_without_resources_gets_the_defaults(control_plane, seat_api):
    core = core_api(seat_api(SEAT))
    try:
        created = core.create_namespaced_pod(SEAT, plain_pod("plain"))
        resources = created.spec.containers[0].resources
        assert resources.limits == DEFAULT_LIMITS, resources
        assert resources.requests == DEFAULT_REQUESTS, resources
    finally:
        clear_namespaces(control_plane.api_client, [SEAT])


def pods_counted(api, seat) -> int:
    """The pods the seat's quota counts as used, pods or count/pods (the quota controller updates it a moment after
    a deletion)."""
    used = core_api(api).read_namespaced_resource_quota("dralab-seat-quota", seat).status.used or {}
    return max(int(used.get(key, "0")) for key in ("pods", "count/pods"))


def test_the_pod_over_the_quota_is_refused(control_plane, seat_api):
    core = core_api(seat_api(SEAT))
    # Small pods, so that the pod count (not CPU or memory) is what runs out.
    small = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "10m", "memory": "16Mi"}}
    # The quota counts no pod of the test before: under load its usage lags the clearing of the namespace.
    wait_for(f"{SEAT}'s quota to count no pod", lambda: pods_counted(control_plane.api_client, SEAT) == 0,
             timeout=60)
    try:
        for i in range(PODS):
            core.create_namespaced_pod(SEAT, plain_pod(f"p{i}", small))
        exc = expect_api_error(403, core.create_namespaced_pod, SEAT, plain_pod(f"p{PODS}", small))
        assert "exceeded quota" in exc.body and "pods" in exc.body, exc.body
    finally:
        clear_namespaces(control_plane.api_client, [SEAT])


def test_a_pod_asking_more_cpu_than_the_seat_has_is_refused(control_plane, seat_api):
    core = core_api(seat_api(SEAT))
    try:
        greedy = {"requests": {"cpu": "5", "memory": "128Mi"}, "limits": {"cpu": "5", "memory": "128Mi"}}
        exc = expect_api_error(403, core.create_namespaced_pod, SEAT, plain_pod("greedy", greedy))
        assert "exceeded quota" in exc.body and "cpu" in exc.body, exc.body
        assert CPU in exc.body, exc.body
    finally:
        clear_namespaces(control_plane.api_client, [SEAT])


QUOTA = "dralab-seat-quota"
FILLER = 930_000  # bytes of data per ConfigMap (the API server allows 1 MiB of data)
ATTEMPTS = 30  # far above any count the lab gives a seat (the seat stored 150)
EVENT_KINDS = {("", "events"), ("events.k8s.io", "events")}  # no quota counts them: refused by a policy


def seat_may_create(api, seat):
    """(group, resource) of every namespaced kind the seat may create, as the API server tells the seat itself."""
    review = client.AuthorizationV1Api(api).create_self_subject_rules_review({"spec": {"namespace": seat}})
    served = {}
    groups = [(g["name"], "/apis/" + g["preferredVersion"]["groupVersion"]) for g in raw_get(api, "/apis")["groups"]]
    for group, path in [("", "/api/v1")] + groups:
        for resource in raw_get(api, path)["resources"]:
            if resource["namespaced"] and "/" not in resource["name"] and "create" in resource["verbs"]:
                served[(group, resource["name"])] = True
    kinds = set()
    for rule in review.status.resource_rules:
        if rule.resource_names or not {"create", "*"} & set(rule.verbs):
            continue
        for group, resource in served:
            if {group, "*"} & set(rule.api_groups or []) and {resource, "*"} & set(rule.resources or []):
                kinds.add((group, resource))
    return kinds


def test_every_kind_the_seat_may_create_is_counted_by_its_quota(control_plane, seat_api):
    api = seat_api(SEAT)
    kinds = seat_may_create(api, SEAT)
    assert {("", "configmaps"), ("apps", "deployments"), ("resource.k8s.io", "resourceclaims")} <= kinds, kinds
    hard = core_api(control_plane.api_client).read_namespaced_resource_quota(QUOTA, SEAT).spec.hard
    uncounted = sorted(f"{resource}.{group}" if group else resource for group, resource in kinds - EVENT_KINDS
                       if (f"count/{resource}.{group}" if group else f"count/{resource}") not in hard)
    assert not uncounted, f"{SEAT} may create these kinds without any count in its quota: {uncounted}"
    bytes_max = sum(int(value) for key, value in hard.items() if key.startswith("count/")) * 1536 * 1024
    print(f"[limits] {SEAT} may create {len(kinds)} kinds; its quota counts them: at most {bytes_max / 2 ** 20:.1f} "
          "MiB in etcd", file=sys.stderr)


def test_filling_etcd_with_configmaps_stops_at_the_count(control_plane, seat_api):
    """The attack of issue 27: ConfigMaps of 0.93 MB, one after the other, as long as the API server takes them."""
    core = core_api(seat_api(SEAT))
    admin = core_api(control_plane.api_client)
    quota = admin.read_namespaced_resource_quota(QUOTA, SEAT)
    hard = int(quota.spec.hard.get("count/configmaps", ATTEMPTS))  # (no count: the attack runs its course)
    used = int((quota.status.used or {}).get("count/configmaps", 0))
    made = []
    try:
        for number in range(ATTEMPTS):
            try:
                core.create_namespaced_config_map(SEAT, {"metadata": {"name": f"fill-{number}"},
                                                         "data": {"blob": "x" * FILLER}})
            except client.ApiException as exc:
                assert exc.status == 403, exc.body
                assert "exceeded quota: dralab-seat-quota" in exc.body and "count/configmaps" in exc.body, exc.body
                break
            made.append(f"fill-{number}")
        print(f"[limits] {SEAT} stored {len(made)} ConfigMaps of {FILLER} bytes before its quota refused one "
              f"(count/configmaps {hard}, {used} of them the lab's)", file=sys.stderr)
        assert made and len(made) == hard - used < ATTEMPTS, f"{SEAT} stored {len(made)} ConfigMaps of {FILLER} bytes"
        # Secrets (the other kind built to hold data) stop at their count as well.
        secret_hard = int(admin.read_namespaced_resource_quota(QUOTA, SEAT).spec.hard.get("count/secrets", ATTEMPTS))
        for number in range(secret_hard + 1):
            try:
                core.create_namespaced_secret(SEAT, {"metadata": {"name": f"fill-{number}"},
                                                     "stringData": {"blob": "x" * FILLER}})
            except client.ApiException as exc:
                assert exc.status == 403 and "count/secrets" in exc.body, exc.body
                break
        else:
            raise AssertionError(f"{SEAT} stored {secret_hard + 1} Secrets: count/secrets {secret_hard} did not hold")
    finally:
        admin.delete_collection_namespaced_config_map(SEAT, field_selector=",".join(
            f"metadata.name!={name}" for name in ("kube-root-ca.crt", "dralab-gpu-occupancy")))
        admin.delete_collection_namespaced_secret(SEAT, field_selector="metadata.name!=dralab-seat-token")


def test_a_seat_cannot_write_events(control_plane, seat_api):
    """No quota counts Events, so a seat may not write any (policy dralab-seat-events)."""
    api = seat_api(SEAT)
    event = {"metadata": {"name": "big-news"}, "involvedObject": {"kind": "Pod", "name": "x", "namespace": SEAT},
             "reason": "Filler", "message": "x" * FILLER, "type": "Normal"}
    exc = expect_api_error(403, core_api(api).create_namespaced_event, SEAT, event)
    assert "workshop seats may not write Events" in exc.body, exc.body
    new_style = {"metadata": {"name": "big-news-2"},
                 "eventTime": datetime.datetime(2026, 1, 1, microsecond=1, tzinfo=datetime.timezone.utc),
                 "reportingController": "example.com/x", "reportingInstance": "x", "action": "Fill",
                 "reason": "Filler", "note": "x" * 100, "type": "Normal",
                 "regarding": {"kind": "Pod", "name": "x", "namespace": SEAT}}
    exc = expect_api_error(403, client.EventsV1Api(api).create_namespaced_event, SEAT, new_style)
    assert "workshop seats may not write Events" in exc.body, exc.body
