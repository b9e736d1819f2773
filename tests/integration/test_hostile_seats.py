"""Seats are hostile: each test attacks the lab with a seat's own kubeconfig, as a participant could, and checks
that the lab holds. The reset tests then hand the seats over (playbooks/reset.yml, credential rotation by default)
and check that nothing the seat did survives: not its objects, not a finalizer, not a token it minted, not a label
it removed, not what it kept writing during the reset, not the account it prepared for the next group; and that a
pod holding a GPU gets the reset's grace period, not its own, and its claim stays until the pod is gone. A per-seat
reset touches only that seat."""

from __future__ import annotations

import datetime
import itertools
import sys
import threading
import time

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from ansible_collections.dralab.workshop.plugins.module_utils.seat.tokens import kubeconfig_token
from k8s_helpers import (DRIVER, IMAGE, MANAGED_BY, MANAGED_BY_LABEL, SEAT_LABEL, api_from_kubeconfig, claim_body,
                         clear_namespaces, core_api, expect_api_error, expect_no_access, namespaced_kinds, pod_body,
                         raw_get, resource_api, seat_account, template_body, wait_for, wait_pod_running)

OTHER_CLASS = "gpu-40gi.example.com"
FULL = ("this seat already holds 1 of 1 GPU claim(s); list them with kubectl get resourceclaims and delete one "
        "to free it")
YEAR = 365 * 24 * 3600
EXTERNAL_IPS_DENIED = "Use of external IPs is denied by admission control"
EVENT = 8 * 3600  # dralab_event_duration of this tier (the default)
POD_GRACE_MAX = 30  # workshop_users_pod_grace_max (the default)
RESET_GRACE = 10  # lab_reset_grace_period_seconds (the default)
# What the instructor leaves in a seat namespace (kind -> names); a reset leaves nothing else.
BASELINE = {
    "serviceaccounts": {"default", "{account}"}, "secrets": {"dralab-seat-token"}, "configmaps": {"kube-root-ca.crt", "dralab-gpu-occupancy"},
    "rolebindings": {"dralab-seat-edit", "dralab-lease-reaper"}, "resourcequotas": {"dralab-seat-quota"},
    "limitranges": {"dralab-seat-limits"},
}


def token_api(api, token):
    """An API client for the same server as `api`, authenticating with a bare bearer token."""
    config = client.Configuration()
    config.host = api.configuration.host
    config.ssl_ca_cert = api.configuration.ssl_ca_cert
    config.verify_ssl = api.configuration.verify_ssl
    config.api_key = {"BearerToken": "Bearer " + token}
    return client.ApiClient(config)


def request_token(api, seat, account, seconds):
    """A TokenRequest made by the seat itself, or None when RBAC refuses it (403)."""
    try:
        return core_api(api).create_namespaced_service_account_token(
            account, seat, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                            "spec": {"expirationSeconds": seconds}})
    except ApiException as exc:
        if exc.status == 403:
            return None
        raise


def namespace_contents(admin, namespace):
    """{kind: {names}} of every namespaced kind the API server serves (events excepted) in a namespace."""
    found = {}
    for _group, path, resource in namespaced_kinds(admin):
        listing = raw_get(admin, f"{path}/namespaces/{namespace}/{resource}")
        names = {item["metadata"]["name"] for item in listing.get("items") or []}
        if names:
            found[resource] = names
    return found


def assert_only_baseline(admin, seat):
    contents = namespace_contents(admin, seat)
    account = seat_account(admin, seat)
    baseline = {kind: {n.format(account=account) for n in names} for kind, names in BASELINE.items()}
    extra = {kind: sorted(names - baseline.get(kind, set())) for kind, names in contents.items()
             if names - baseline.get(kind, set())}
    assert not extra, f"{seat} still holds objects after the reset: {extra}"


def service(name, **spec):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}], **spec}}


# --- Services (CVE-2020-8554) ---------------------------------------------------------------------

def test_seat_cannot_create_external_ip_node_port_or_load_balancer_services(control_plane, seat_api):
    core = core_api(seat_api("user10"))
    exc = expect_api_error(403, core.create_namespaced_service, "user10",
                           service("mitm", externalIPs=["10.96.0.1"]))
    # Two layers refuse it: the API server's DenyServiceExternalIPs (first) and the seats' policy.
    assert EXTERNAL_IPS_DENIED in exc.body or "may not set externalIPs" in exc.body, exc.body
    for kind in ("NodePort", "LoadBalancer"):
        exc = expect_api_error(403, core.create_namespaced_service, "user10", service(kind.lower(), type=kind))
        assert f"must be of type ClusterIP, not {kind}" in exc.body, exc.body
    # Turning an allowed Service into one of those is refused too.
    core.create_namespaced_service("user10", service("web"))
    exc = expect_api_error(403, core.patch_namespaced_service, "web", "user10", {"spec": {"type": "NodePort"}})
    assert "must be of type ClusterIP, not NodePort" in exc.body, exc.body


def test_api_server_refuses_external_ips_in_every_namespace(control_plane):
    """DenyServiceExternalIPs (kubeadm config / harness flags), the layer below the seats' policy."""
    exc = expect_api_error(403, core_api(control_plane.api_client).create_namespaced_service, "default",
                           service("admin-mitm", externalIPs=["10.96.0.1"]))
    assert EXTERNAL_IPS_DENIED in exc.body, exc.body


# --- Tokens ----------------------------------------------------------------------------------------

def test_seat_token_request_for_a_year_is_capped_at_the_event(control_plane, seat_api):
    api = seat_api("user10")
    before = datetime.datetime.now(datetime.timezone.utc)
    token = request_token(api, "user10", seat_account(control_plane.api_client, "user10"), YEAR)
    if token is None:
        return  # refused outright (RBAC): no token at all is fine too
    lifetime = (token.status.expiration_timestamp - before).total_seconds()
    print(f"[hostile] a seat asked for a {YEAR} s token and got {lifetime:.0f} s", file=sys.stderr)
    assert lifetime <= EVENT + 60, f"the seat got a token for {lifetime:.0f} s"


def test_seat_cannot_create_a_legacy_service_account_token_secret(control_plane, seat_api):
    core = core_api(seat_api("user10"))
    body = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": "forever", "annotations": {"kubernetes.io/service-account.name": "user10"}}}
    exc = expect_api_error(403, core.create_namespaced_secret, "user10", body)
    assert "kubernetes.io/service-account-token" in exc.body and "not allowed in workshop seats" in exc.body, exc.body


# --- GPUs ------------------------------------------------------------------------------------------

def test_second_gpu_is_refused_through_any_class_with_what_the_seat_holds(control_plane, seat_api):
    resource = resource_api(seat_api("user11"))
    resource.create_namespaced_resource_claim("user11", claim_body("first", device_class=DRIVER))
    for name, device_class in (("second", DRIVER), ("other-class", OTHER_CLASS)):
        # The claim-count policy reads the seat's quota from an informer: until its status shows the first claim
        # the quota itself refuses (a 403 too). Every attempt is refused; the seat soon gets the policy's words.
        deadline = time.monotonic() + 15
        while True:
            exc = expect_api_error(403, resource.create_namespaced_resource_claim, "user11",
                                   claim_body(name, device_class=device_class))
            if FULL in exc.body or time.monotonic() > deadline:
                break
            assert "exceeded quota: dralab-seat-quota" in exc.body, exc.body
            time.sleep(0.5)
        assert FULL in exc.body, exc.body
    # A pod whose template would make a second claim gets the same answer from the controller; the seat holds 1.
    assert len(resource.list_namespaced_resource_claim("user11").items) == 1


@pytest.mark.parametrize("shape", ["count-2", "all", "two-requests", "first-available-2", "template-count-2"])
def test_one_claim_asking_more_than_one_gpu_is_refused(control_plane, seat_api, shape):
    resource = resource_api(seat_api("user12"))
    body = claim_body(f"big-{shape}")
    requests = body["spec"]["devices"]["requests"]
    if shape in ("count-2", "template-count-2"):
        requests[0]["exactly"]["count"] = 2
    elif shape == "all":
        requests[0]["exactly"]["allocationMode"] = "All"
    elif shape == "two-requests":
        requests.append({"name": "gpu2", "exactly": {"deviceClassName": OTHER_CLASS}})
    else:
        requests[0] = {"name": "gpu", "firstAvailable": [
            {"name": "big", "deviceClassName": OTHER_CLASS, "count": 2},
            {"name": "small", "deviceClassName": DRIVER}]}
    if shape == "template-count-2":
        template = template_body(f"big-{shape}")
        template["spec"]["spec"] = body["spec"]
        exc = expect_api_error(403, resource.create_namespaced_resource_claim_template, "user12", template)
    else:
        exc = expect_api_error(403, resource.create_namespaced_resource_claim, "user12", body)
    expected = "allocationMode All" if shape == "all" else "asks for at most 1 device(s) per claim"
    assert expected in exc.body, exc.body


def long_grace(body, seconds=86400):
    """A pod (or the pod template of a controller) that takes `seconds` to stop: one that ignores SIGTERM."""
    spec = body["spec"]
    for step in {"Deployment": ("template",), "CronJob": ("jobTemplate", "spec", "template")}.get(body["kind"], ()):
        spec = spec[step]["spec"] if step == "template" else spec[step]
    spec["terminationGracePeriodSeconds"] = seconds
    return body


def test_a_pod_that_would_keep_its_gpu_for_a_day_is_refused(control_plane, seat_api):
    """A pod with a claim and terminationGracePeriodSeconds 86400 that ignores SIGTERM would keep its GPU a day after
    any deletion, the reset's too: the seats' grace policies refuse it, and every controller's pod template."""
    api = seat_api("user17")
    core, resource = core_api(api), resource_api(api)
    resource.create_namespaced_resource_claim("user17", claim_body("held"))
    try:
        exc = expect_api_error(403, core.create_namespaced_pod, "user17", long_grace(pod_body("sticky", claim="held")))
        assert f"may take at most {POD_GRACE_MAX} s to stop (terminationGracePeriodSeconds), not 86400 s" in exc.body, \
            exc.body
        template = {"metadata": {"labels": {"app": "sticky"}}, "spec": pod_body("x", claim="held")["spec"]}
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sticky"},
                      "spec": {"selector": {"matchLabels": {"app": "sticky"}}, "template": template}}
        exc = expect_api_error(403, client.AppsV1Api(api).create_namespaced_deployment, "user17", long_grace(deployment))
        assert "The pod template of a workshop seat may take at most" in exc.body, exc.body
        cronjob = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "sticky"},
                   "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
                       "spec": dict(pod_body("x", claim="held")["spec"], restartPolicy="Never")}}}}}
        exc = expect_api_error(403, client.BatchV1Api(api).create_namespaced_cron_job, "user17", long_grace(cronjob))
        assert "The pod template of a workshop seat may take at most" in exc.body, exc.body
        # The maximum itself, and a pod that names none (30 s), are fine.
        core.create_namespaced_pod("user17", long_grace(pod_body("patient", claim="held"), POD_GRACE_MAX))
    finally:
        clear_namespaces(control_plane.api_client, ["user17"])


def test_a_one_device_first_available_claim_is_allowed(control_plane, seat_api):
    resource = resource_api(seat_api("user13"))
    body = claim_body("choice")
    body["spec"]["devices"]["requests"][0] = {"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": OTHER_CLASS}, {"name": "any", "deviceClassName": DRIVER}]}
    resource.create_namespaced_resource_claim("user13", body)


# --- Handover ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def handover(control_plane, workshop, tmp_path_factory):
    """user14 does everything it can to outlive the reset; then the whole lab is reset (rotation by default)."""
    admin = control_plane.api_client
    seat = "user14"
    api = api_from_kubeconfig(workshop.seat_kubeconfig(seat))
    core, resource = core_api(api), resource_api(api)
    tokens = {"kubeconfig": kubeconfig_token(workshop.seat_kubeconfig(seat).read_text())}
    assert tokens["kubeconfig"], f"no token in {workshop.seat_kubeconfig(seat)}"
    account = seat_account(admin, seat)
    try:
        # Label tampering: the instructor's ServiceAccount and token Secret no longer look managed.
        patch = {"metadata": {"labels": {MANAGED_BY_LABEL: None, SEAT_LABEL: None}}}
        core.patch_namespaced_service_account(account, seat, patch)
        core.patch_namespaced_secret("dralab-seat-token", seat, patch)
        # A finalizer on the token Secret, whose name the next group's Secret takes: kept, it would hold the old
        # Secret, the new token would be bound to it, and its removal would revoke that token.
        core.patch_namespaced_secret("dralab-seat-token", seat, {"metadata": {"finalizers": [TOKEN_FINALIZER]}})
        # Tokens of its own: for its account, for the default account, for a new account.
        core.create_namespaced_service_account(seat, {"metadata": {"name": "backdoor",
                                                                   "labels": {MANAGED_BY_LABEL: MANAGED_BY}}})
        for name in (account, "default", "backdoor"):
            minted = request_token(api, seat, name, EVENT)
            if minted is not None:
                tokens[name] = minted.status.token
        # Objects of every sort, some with finalizers that nobody will remove.
        core.create_namespaced_config_map(seat, {"metadata": {"name": "notes"}, "data": {"a": "b"}})
        core.create_namespaced_secret(seat, {"metadata": {"name": "stash"}, "stringData": {"k": "v"}})
        core.create_namespaced_service(seat, service("web"))
        client.AppsV1Api(api).create_namespaced_deployment(seat, {
            "metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                                                  "template": {"metadata": {"labels": {"app": "web"}},
                                                               "spec": {"containers": [{"name": "c", "image": IMAGE}]}}}})
        client.PolicyV1Api(api).create_namespaced_pod_disruption_budget(seat, {
            "metadata": {"name": "keep-web"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
        resource.create_namespaced_resource_claim_template(seat, template_body("single"))
        claim = claim_body("mine")
        claim["metadata"]["finalizers"] = ["example.com/keep-my-gpu"]
        resource.create_namespaced_resource_claim(seat, claim)
        pod = pod_body("stubborn", claim="mine")
        pod["metadata"]["finalizers"] = ["example.com/keep-me"]
        core.create_namespaced_pod(seat, pod)
        wait_pod_running(api, seat, "stubborn")
    finally:
        api.close()
    before = namespace_contents(admin, seat)
    assert {"configmaps", "services", "deployments", "poddisruptionbudgets", "resourceclaims"} <= set(before)
    prepared = prepare_next_account(workshop, PREPARER)
    holder = hold_a_gpu(workshop, HOLDER)
    # All through the reset, the seat keeps writing with every token it has (from outside the lab, so the
    # handover's end of its sessions does not stop it): kube-apiserver accepts a token it accepted in the last
    # 10 s even after its Secret is gone. PREPARER writes with the token of the account it made for the next group.
    done, writes = threading.Event(), []
    writers = [threading.Thread(target=keep_writing, args=(admin, token, seat, name, done, writes))
               for name, token in tokens.items()]
    writers.append(threading.Thread(target=keep_writing, args=(admin, prepared["token"], PREPARER, "prepared", done,
                                                               writes)))
    seen = []
    watchers = [threading.Thread(target=record_events, args=(admin, HOLDER, kind, done, seen))
                for kind in ("pods", "claims")]
    for thread in writers + watchers:
        thread.start()
    time.sleep(1)  # the watches are open (they start from the listed resourceVersion anyway)
    try:
        run = workshop.converge("playbooks/reset.yml")
    finally:
        done.set()
        for thread in writers + watchers:
            thread.join()
    print(f"[hostile] reset.yml (every seat, rotation by default): {run.seconds:.1f}s; the seat's writes during it: "
          f"{sum(1 for w in writes if w[1] == 201)} created, {sum(1 for w in writes if w[1] != 201)} refused",
          file=sys.stderr)
    return {"seat": seat, "tokens": tokens, "run": run, "writes": writes, "prepared": prepared, "holder": holder,
            "seen": seen}


TOKEN_FINALIZER = "example.com/keep-my-token"
PREPARER = "user15"  # makes the ServiceAccount it expects the rotation to give the next group, and a token for it
HOLDER = "user16"  # holds a GPU with a pod that does not stop by itself


def prepare_next_account(workshop, seat):
    """The seat reads its Namespace (it may), guesses the account of the next credential generation as the lab
    named them (NAME-gN), makes that ServiceAccount and a token for it."""
    api = api_from_kubeconfig(workshop.seat_kubeconfig(seat))
    try:
        namespace = core_api(api).read_namespace(seat)
        generation = int((namespace.metadata.annotations or {}).get("dralab.workshop/credential-generation", "0"))
        guess = f"{seat}-g{generation + 1}"
        core_api(api).create_namespaced_service_account(seat, {"metadata": {"name": guess}})
        token = request_token(api, seat, guess, EVENT)
        assert token is not None, f"{seat} could not mint a token for {guess}"
        return {"account": guess, "token": token.status.token}
    finally:
        api.close()


def hold_a_gpu(workshop, seat):
    """A claim and a pod that uses it, with the longest grace period the seats may ask for and a finalizer: in this
    tier (kwok, no kubelet) the finalizer is what keeps the pod in the API after its deletion, as a pod that ignores
    SIGTERM stays until its grace period ends."""
    api = api_from_kubeconfig(workshop.seat_kubeconfig(seat))
    try:
        resource_api(api).create_namespaced_resource_claim(seat, claim_body("held"))
        pod = pod_body("sticky", claim="held")
        pod["spec"]["terminationGracePeriodSeconds"] = POD_GRACE_MAX
        pod["metadata"]["finalizers"] = ["example.com/still-running"]
        core_api(api).create_namespaced_pod(seat, pod)
        wait_pod_running(api, seat, "sticky")
        wait_for("the held claim allocated", lambda: resource_api(api).read_namespaced_resource_claim(
            "held", seat).status.allocation)
        return {"pod": "sticky", "claim": "held"}
    finally:
        api.close()


def record_events(admin, namespace, kind, done, seen):
    """Watch the pods or claims of a namespace until done; record (time, kind, event type, name, deleting, grace)."""
    if kind == "pods":
        method, path = core_api(admin).list_namespaced_pod, f"/api/v1/namespaces/{namespace}/pods"
    else:
        method = resource_api(admin).list_namespaced_resource_claim
        path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"

    def listing(**kwargs):  # no docstring: the watch hands over the objects as plain dicts
        return method(namespace, **kwargs)
    version = raw_get(admin, path)["metadata"]["resourceVersion"]
    while not done.is_set():
        stream = watch.Watch()
        for event in stream.stream(listing, resource_version=version, timeout_seconds=2):
            meta = event["object"]["metadata"]
            version = meta["resourceVersion"]
            seen.append((time.monotonic(), kind, event["type"], meta["name"], "deletionTimestamp" in meta,
                         meta.get("deletionGracePeriodSeconds")))
            if done.is_set():
                stream.stop()


def keep_writing(admin, token, seat, name, done, writes):
    """Create ConfigMaps in the seat's namespace with one token until done; record (token name, HTTP status)."""
    api = token_api(admin, token)
    try:
        for number in itertools.count():
            if done.is_set():
                return
            try:
                core_api(api).create_namespaced_config_map(seat, {"metadata": {"name": f"during-{name}-{number}"}})
                writes.append((name, 201))
            except ApiException as exc:
                writes.append((name, exc.status))
            time.sleep(0.05)
    finally:
        api.close()


def test_reset_rotates_by_default_and_label_tampering_keeps_no_token_alive(control_plane, handover):
    admin = control_plane.api_client
    for name, token in handover["tokens"].items():
        stale = token_api(admin, token)
        try:
            expect_no_access(core_api(stale).list_namespaced_pod, handover["seat"])
        except AssertionError as exc:
            raise AssertionError(f"the {name} token of {handover['seat']} still works after the reset: {exc}") from None
        finally:
            stale.close()
    assert "Credentials revoked:" in handover["run"].flat, handover["run"].describe()


def test_a_finalizer_does_not_stop_the_reset(control_plane, handover):
    run = handover["run"]
    assert "Finalizers removed:" in run.flat and "example.com/keep-me" in run.flat, run.describe()
    seat = handover["seat"]
    expect_api_error(404, core_api(control_plane.api_client).read_namespaced_pod, "stubborn", seat)
    expect_api_error(404, resource_api(control_plane.api_client).read_namespaced_resource_claim, "mine", seat)


def test_a_finalizer_on_the_token_secret_cannot_revoke_the_next_groups_token(control_plane, workshop, handover):
    """The old token Secret loses the seat's finalizer as the reset starts (the finish, which runs while the new
    credentials are issued, never deletes a Secret): the new kubeconfig works after the reset."""
    run, seat = handover["run"], handover["seat"]
    assert f"secrets {seat}/dralab-seat-token: {TOKEN_FINALIZER}" in run.flat, run.describe()
    secret = core_api(control_plane.api_client).read_namespaced_secret("dralab-seat-token", seat)
    assert not secret.metadata.deletion_timestamp and not secret.metadata.finalizers
    fresh = api_from_kubeconfig(workshop.seat_kubeconfig(seat))
    try:
        assert core_api(fresh).list_namespaced_config_map(seat).items is not None
    finally:
        fresh.close()


def test_after_the_reset_the_namespace_holds_none_of_the_seats_objects(control_plane, workshop, handover):
    seat = handover["seat"]
    assert_only_baseline(control_plane.api_client, seat)
    # What the seat wrote during the reset did not outlive it either (assert_only_baseline), but it did write.
    assert any(status == 201 for _name, status in handover["writes"]), handover["writes"][:10]
    # The instructor's objects are back, labelled, and the new kubeconfig works.
    sa = core_api(control_plane.api_client).read_namespaced_service_account(
        seat_account(control_plane.api_client, seat), seat)
    assert sa.metadata.labels[MANAGED_BY_LABEL] == MANAGED_BY
    fresh = api_from_kubeconfig(workshop.seat_kubeconfig(seat))
    try:
        assert core_api(fresh).list_namespaced_pod(seat).items == []
    finally:
        fresh.close()


def test_an_account_prepared_for_the_next_group_gets_no_right(control_plane, workshop, handover):
    """The seat made the ServiceAccount it expected the rotation to give the next group, and a token for it. The
    rotation names an account nobody could guess, so that token never writes into the namespace: not while the
    reset clears it (the seat wrote all through it), not afterwards, in the next group's namespace."""
    prepared, seat = handover["prepared"], PREPARER
    attempts = [status for name, status in handover["writes"] if name == "prepared"]
    assert attempts and not [s for s in attempts if s == 201], (
        f"{seat}'s token for {prepared['account']} created {attempts.count(201)} object(s) during the reset")
    stale = token_api(control_plane.api_client, prepared["token"])
    try:
        expect_no_access(core_api(stale).create_namespaced_config_map, seat, {"metadata": {"name": "next-group"}})
    finally:
        stale.close()
    account = seat_account(control_plane.api_client, seat)
    assert account != prepared["account"] and account.startswith(f"{seat}-g")
    assert_only_baseline(control_plane.api_client, seat)


def test_a_pod_holding_a_gpu_gets_the_resets_grace_and_keeps_its_claim_until_it_is_gone(control_plane, handover):
    """The reset deletes the pod with its own grace period (not the pod's 30 s, nor a day), and deletes its claim only
    once the pod is gone: the device is never given to another seat while the pod may still use it."""
    seen = handover["seen"]
    pod = [entry for entry in seen if entry[1] == "pods" and entry[3] == handover["holder"]["pod"]]
    claim = [entry for entry in seen if entry[1] == "claims" and entry[3] == handover["holder"]["claim"]]
    deleting = [entry for entry in pod if entry[4]]
    assert deleting, f"the reset never deleted the pod: {pod}"
    assert deleting[0][5] <= RESET_GRACE, f"the reset gave the pod {deleting[0][5]} s to stop: {pod}"
    gone = [entry[0] for entry in pod if entry[2] == "DELETED"]
    released = [entry[0] for entry in claim if entry[4] or entry[2] == "DELETED"]
    assert gone and released, (pod, claim)
    assert released[0] > gone[0], (
        f"the claim was deleted {gone[0] - released[0]:.1f} s before its pod was gone: pod {pod}, claim {claim}")
    expect_api_error(404, resource_api(control_plane.api_client).read_namespaced_resource_claim, "held", HOLDER)


def test_per_seat_reset_touches_only_that_seat(control_plane, workshop, handover):
    admin = control_plane.api_client
    clear_namespaces(admin, ["user20", "user21"])
    for seat in ("user20", "user21"):
        api = api_from_kubeconfig(workshop.seat_kubeconfig(seat))
        try:
            wait_for(f"{seat}'s default ServiceAccount", lambda s=seat: core_api(admin).read_namespaced_service_account(
                "default", s))
            resource_api(api).create_namespaced_resource_claim(seat, claim_body("gpu"))
            core_api(api).create_namespaced_pod(seat, pod_body("work", claim="gpu"))
            wait_pod_running(api, seat, "work")
        finally:
            api.close()
    old = {seat: workshop.seat_kubeconfig(seat).read_text() for seat in ("user20", "user21", "user22")}

    refused = workshop.run("playbooks/reset.yml", extra_vars={"lab_reset_seats": ["user20", "user99"]})
    assert refused.rc != 0 and "lab_reset_seats names user99, which is not a seat of this lab" in refused.flat, \
        refused.describe()
    core_api(admin).read_namespaced_pod("work", "user20")  # nothing changed

    run = workshop.converge("playbooks/reset.yml", extra_vars={"lab_reset_seats": ["user20"]})
    print(f"[hostile] reset.yml -e lab_reset_seats=[user20]: {run.seconds:.1f}s", file=sys.stderr)
    assert "1 seat namespace(s), 2 object(s) deleted." in run.flat, run.describe()
    expect_api_error(404, core_api(admin).read_namespaced_pod, "work", "user20")
    assert_only_baseline(admin, "user20")
    assert workshop.seat_kubeconfig("user20").read_text() != old["user20"]
    # The other seats keep their claim, pod and credentials.
    assert resource_api(admin).read_namespaced_resource_claim("gpu", "user21").status.allocation is not None
    assert core_api(admin).read_namespaced_pod("work", "user21").metadata.deletion_timestamp is None
    for seat in ("user21", "user22"):
        assert workshop.seat_kubeconfig(seat).read_text() == old[seat]
    api = api_from_kubeconfig(workshop.seat_kubeconfig("user21"))
    try:
        assert [p.metadata.name for p in core_api(api).list_namespaced_pod("user21").items] == ["work"]
    except ApiException as exc:
        pytest.fail(f"user21's kubeconfig stopped working after a reset of user20: {exc.status}")
    finally:
        api.close()
    clear_namespaces(admin, ["user21"])
