"""A seat cannot hog the cluster's pods, CPU or memory: its quota refuses the pod over the limit, and a
container that asks for nothing gets the LimitRange's defaults (roles/workshop_users: quota and LimitRange
sized from workshop_users_quota_* and workshop_users_container_default_*)."""

from __future__ import annotations

from k8s_helpers import IMAGE, clear_namespaces, core_api, expect_api_error

SEAT = "user61"
PODS = 10  # workshop_users_quota_pods (the default)
CPU = "4"  # workshop_users_quota_cpu
DEFAULT_LIMITS = {"cpu": "500m", "memory": "512Mi"}  # workshop_users_container_default_limits
DEFAULT_REQUESTS = {"cpu": "100m", "memory": "128Mi"}  # workshop_users_container_default_requests


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


def test_the_pod_over_the_quota_is_refused(control_plane, seat_api):
    core = core_api(seat_api(SEAT))
    # Small pods, so that the pod count (not CPU or memory) is what runs out.
    small = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "10m", "memory": "16Mi"}}
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
