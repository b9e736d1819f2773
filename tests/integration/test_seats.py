"""workshop_users role (playbooks/users.yml), Kubernetes side, with 72 seats: the objects, the
kubeconfig files, what a seat's token may and may not do, and credential rotation by
playbooks/reset.yml (-e lab_reset_rotate_credentials=true)."""

from __future__ import annotations

import csv
import stat

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from k8s_helpers import (DRIVER, MANAGED, SEAT_LABEL, api_from_kubeconfig, claim_body, clear_namespaces,
                         expect_api_error, expect_no_access, pod_body, seat_account, wait_for, wait_pod_running)
from playbook import SEATS, seat_names

SEATS_ALL = seat_names(SEATS)
QUOTA_NAME = "dralab-seat-quota"
TOKEN_SECRET = "dralab-seat-token"
READER = "dralab-seat-dra-reader"
ADMIN_ACCESS = "resource.kubernetes.io/admin-access"
DEVICE_KEY = f"{DRIVER}.deviceclass.resource.k8s.io/devices"
EXPECTED_QUOTA = {
    DEVICE_KEY: "1",
    "gpu-40gi.example.com.deviceclass.resource.k8s.io/devices": "1",
    "count/resourceclaims.resource.k8s.io": "1",
    "pods": "10", "requests.cpu": "4", "limits.cpu": "4", "requests.memory": "8Gi", "limits.memory": "8Gi",
    "requests.ephemeral-storage": "10Gi", "limits.ephemeral-storage": "10Gi",
    # Every other kind the edit role lets a seat create (workshop_users_quota_objects 5; finished pods count too).
    **{f"count/{kind}": "5" for kind in (
        "configmaps", "secrets", "serviceaccounts", "services", "persistentvolumeclaims", "replicationcontrollers",
        "daemonsets.apps", "deployments.apps", "replicasets.apps", "statefulsets.apps", "cronjobs.batch", "jobs.batch",
        "horizontalpodautoscalers.autoscaling", "poddisruptionbudgets.policy", "ingresses.networking.k8s.io",
        "networkpolicies.networking.k8s.io", "leases.coordination.k8s.io", "resourceclaimtemplates.resource.k8s.io")},
    "count/pods": "10",
}
FULL = ("this seat already holds 1 of 1 GPU claim(s); list them with kubectl get resourceclaims and delete one "
        "to free it")


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def seats(control_plane, workshop):
    """72 seats; their workloads are removed afterwards (whatever the tests left)."""
    yield workshop
    clear_namespaces(control_plane.api_client, ["user01", "user02"])


@pytest.fixture
def seat_api(seats, seat_api):
    """conftest's seat_api, with this module's cleanup of user01 and user02 (the seats fixture) afterwards."""
    return seat_api


def test_seat_objects_exist(control_plane, seats):
    api = control_plane.api_client
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)

    namespaces = {ns.metadata.name: ns for ns in core.list_namespace(label_selector=MANAGED).items}
    assert set(SEATS_ALL) <= set(namespaces)
    for seat in SEATS_ALL:
        labels = namespaces[seat].metadata.labels
        assert labels[SEAT_LABEL] == seat
        assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
        assert ADMIN_ACCESS not in labels

    accounts = {(sa.metadata.namespace, sa.metadata.name)
                for sa in core.list_service_account_for_all_namespaces(label_selector=MANAGED).items}
    # Each seat's account its Namespace records (user01, or user01-g1-<random> after a rotating reset).
    current = {seat: seat_account(api, seat) for seat in SEATS_ALL}
    assert {(s, current[s]) for s in SEATS_ALL} <= accounts

    secrets = {s.metadata.namespace: s for s in core.list_secret_for_all_namespaces(label_selector=MANAGED).items
               if s.metadata.name == TOKEN_SECRET}
    assert set(SEATS_ALL) <= set(secrets)
    assert all(secrets[s].type == "Opaque" for s in SEATS_ALL)

    bindings = {rb.metadata.namespace: rb
                for rb in rbac.list_role_binding_for_all_namespaces(label_selector=MANAGED).items}
    for seat in SEATS_ALL:
        rb = bindings[seat]
        assert (rb.role_ref.kind, rb.role_ref.name) == ("ClusterRole", "edit")
        assert [(s.kind, s.namespace, s.name) for s in rb.subjects] == [("ServiceAccount", seat, current[seat])]

    quotas = {q.metadata.namespace: q for q in core.list_resource_quota_for_all_namespaces(label_selector=MANAGED).items}
    for seat in SEATS_ALL:
        assert quotas[seat].metadata.name == QUOTA_NAME
        assert quotas[seat].spec.hard == EXPECTED_QUOTA, seat
    limits = {lr.metadata.namespace: lr for lr in core.list_limit_range_for_all_namespaces(label_selector=MANAGED).items}
    for seat in SEATS_ALL:
        [limit] = limits[seat].spec.limits
        assert (limit.type, limit.default, limit.default_request) == (
            "Container", {"cpu": "500m", "memory": "512Mi", "ephemeral-storage": "1Gi"},
            {"cpu": "100m", "memory": "128Mi", "ephemeral-storage": "64Mi"}), seat

    role = rbac.read_cluster_role(READER)
    granted = {(g, r) for rule in role.rules for g in rule.api_groups for r in rule.resources}
    assert {("resource.k8s.io", "deviceclasses"), ("resource.k8s.io", "resourceslices"), ("", "nodes")} <= granted
    binding = rbac.read_cluster_role_binding(READER)
    assert sorted(s.namespace for s in binding.subjects) == SEATS_ALL


def test_seat_kubeconfigs_are_private_files(control_plane, seats):
    artifacts = seats.artifacts
    assert mode(artifacts) == 0o700 and mode(artifacts / "seats") == 0o700
    files = sorted(p.name for p in (artifacts / "seats").iterdir())
    assert files == [f"{s}.kubeconfig" for s in SEATS_ALL]
    admin = yaml.safe_load(control_plane.kubeconfig.read_text())
    admin_server = admin["clusters"][0]["cluster"]["server"]
    for seat in SEATS_ALL:
        path = seats.seat_kubeconfig(seat)
        assert mode(path) == 0o600, path
        config = yaml.safe_load(path.read_text())
        assert config["clusters"][0]["cluster"]["server"] == admin_server
        [context] = config["contexts"]
        assert context["context"]["namespace"] == seat
        assert config["users"][0]["user"]["token"]
    sheet = artifacts / "credentials.csv"
    assert mode(sheet) == 0o600
    rows = list(csv.DictReader(sheet.read_text().splitlines()))
    assert [r["seat"] for r in rows] == SEATS_ALL
    assert all(r["kubeconfig"] == str(seats.seat_kubeconfig(r["seat"])) for r in rows)
    # No login hosts in this lab: no seat has one.
    assert all(r["login_host"] == "" and r["login_address"] == "" for r in rows)


def test_seat_can_use_a_gpu_in_its_namespace(control_plane, seat_api):
    api = seat_api("user01")
    resource, core = client.ResourceV1Api(api), client.CoreV1Api(api)
    # Reading the menu and the inventory is allowed (the reader ClusterRole).
    assert {dc.metadata.name for dc in resource.list_device_class().items} >= {DRIVER}
    assert len(resource.list_resource_slice().items) == len(control_plane.nodes)

    resource.create_namespaced_resource_claim("user01", claim_body("my-gpu"))
    core.create_namespaced_pod("user01", pod_body("my-pod", claim="my-gpu"))
    pod = wait_pod_running(api, "user01", "my-pod")
    claim = resource.read_namespaced_resource_claim("my-gpu", "user01")
    [result] = claim.status.allocation.devices.results
    assert result.driver == DRIVER and result.pool == pod.spec.node_name
    assert [r.name for r in claim.status.reserved_for] == ["my-pod"]


def test_second_device_is_refused_with_what_the_seat_holds(control_plane, seat_api):
    resource = client.ResourceV1Api(seat_api("user01"))
    wait_for("user01 holding one GPU claim", lambda: resource.read_namespaced_resource_claim("my-gpu", "user01"))
    exc = expect_api_error(403, resource.create_namespaced_resource_claim, "user01", claim_body("second-gpu"))
    assert FULL in exc.body, exc.body
    quota = client.CoreV1Api(control_plane.api_client).read_namespaced_resource_quota(QUOTA_NAME, "user01")
    assert quota.status.used["count/resourceclaims.resource.k8s.io"] == "1"


def test_seat_cannot_touch_another_seats_claims(control_plane, seat_api):
    theirs = client.ResourceV1Api(seat_api("user02"))
    theirs.create_namespaced_resource_claim("user02", claim_body("their-gpu"))

    mine = client.ResourceV1Api(seat_api("user01"))
    expect_api_error(403, mine.read_namespaced_resource_claim, "their-gpu", "user02")
    expect_api_error(403, mine.list_namespaced_resource_claim, "user02")
    expect_api_error(403, mine.list_resource_claim_for_all_namespaces)
    expect_api_error(403, mine.patch_namespaced_resource_claim, "their-gpu", "user02",
                     {"metadata": {"labels": {"taken": "yes"}}})
    expect_api_error(403, mine.delete_namespaced_resource_claim, "their-gpu", "user02")
    expect_api_error(403, mine.create_namespaced_resource_claim, "user02", claim_body("sneaky"))
    expect_api_error(403, client.CoreV1Api(seat_api("user01")).delete_collection_namespaced_pod, "user02")
    still = client.ResourceV1Api(control_plane.api_client).read_namespaced_resource_claim("their-gpu", "user02")
    assert not (still.metadata.labels or {}).get("taken")


def test_seat_cannot_create_device_classes(control_plane, seat_api):
    resource = client.ResourceV1Api(seat_api("user01"))
    exc = expect_api_error(403, resource.create_device_class, {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "mine.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "true"}}]}})
    assert "deviceclasses" in exc.body
    expect_api_error(403, resource.delete_device_class, DRIVER)
    expect_api_error(403, resource.patch_device_class, DRIVER, {"metadata": {"labels": {"x": "y"}}})


def test_seat_cannot_grant_itself_admin_access(control_plane, seat_api):
    core = client.CoreV1Api(seat_api("user01"))
    expect_api_error(403, core.patch_namespace, "user01", {"metadata": {"labels": {ADMIN_ACCESS: "true"}}})
    # So a claim asking for admin access (every device, even allocated ones) is refused.
    body = claim_body("admin-gpu")
    body["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    exc = expect_api_error(422, client.ResourceV1Api(seat_api("user01")).create_namespaced_resource_claim,
                           "user01", body)
    assert f"admin access to devices requires the `{ADMIN_ACCESS}: true` label" in exc.body
    expect_api_error(403, core.create_namespace, {"metadata": {"name": "user01-admin",
                                                               "labels": {ADMIN_ACCESS: "true"}}})
    ns = client.CoreV1Api(control_plane.api_client).read_namespace("user01")
    assert ADMIN_ACCESS not in ns.metadata.labels


def test_rotation_revokes_old_tokens(control_plane, seats, tmp_path):
    admin = control_plane.api_client
    old = {seat: seats.seat_kubeconfig(seat).read_text() for seat in ("user01", "user72")}
    for seat, text in old.items():
        (tmp_path / seat).write_text(text)
    # Someone gave seat user03 admin access by hand: the seats' baseline takes it away again.
    client.CoreV1Api(admin).patch_namespace("user03", {"metadata": {"labels": {ADMIN_ACCESS: "true"}}})

    run = seats.converge("playbooks/reset.yml", extra_vars={"lab_reset_rotate_credentials": True})
    assert run.changed > 0

    for seat in old:
        new_text = seats.seat_kubeconfig(seat).read_text()
        assert new_text != old[seat], f"{seat}: the kubeconfig was not rewritten"
        assert mode(seats.seat_kubeconfig(seat)) == 0o600
        stale = api_from_kubeconfig(tmp_path / seat)
        try:
            # At once, with no wait in the reset: unknown (401) or an account without rights (403).
            expect_no_access(client.ResourceV1Api(stale).list_namespaced_resource_claim, seat)
            expect_no_access(client.CoreV1Api(stale).create_namespaced_config_map, seat,
                             {"metadata": {"name": "left-by-the-last-group"}})
        finally:
            stale.close()
        fresh = api_from_kubeconfig(seats.seat_kubeconfig(seat))
        try:
            client.ResourceV1Api(fresh).list_namespaced_resource_claim(seat)
            client.CoreV1Api(fresh).list_namespaced_pod(seat)
        finally:
            fresh.close()
    # The reset also emptied the seats: the claims and pods of the tests above are gone.
    resource, core = client.ResourceV1Api(admin), client.CoreV1Api(admin)
    assert not resource.list_namespaced_resource_claim("user01").items
    assert not resource.list_namespaced_resource_claim("user02").items
    assert not core.list_namespaced_pod("user01").items
    assert ADMIN_ACCESS not in core.read_namespace("user03").metadata.labels
    wait_for("user01's quota to show no device in use", lambda: (
        core.read_namespaced_resource_quota(QUOTA_NAME, "user01").status.used.get(DEVICE_KEY) == "0"))


def test_rotated_kubeconfig_works_for_every_seat(control_plane, seats):
    """Every seat's new kubeconfig authenticates (the tests that follow use them)."""
    for seat in SEATS_ALL:
        api = api_from_kubeconfig(seats.seat_kubeconfig(seat))
        try:
            client.ResourceV1Api(api).list_namespaced_resource_claim(seat)
        except ApiException as exc:
            pytest.fail(f"{seat}: the rotated kubeconfig does not work: {exc.status} {exc.reason}")
        finally:
            api.close()
