"""What a seat's pods take from the nodes, and where they may run, attacked with the seat's own kubeconfig.

- Placement: a pod (or a controller's pod template) that names its node (spec.nodeName, past the scheduler and
  every taint), tolerates the control plane's taint or every taint (a toleration without a key), or a DaemonSet
  (whose controller makes its pods tolerate cordoned and pressured nodes) is refused by the policies of
  seat/placement.py; the tolerations Kubernetes itself adds to every pod (DefaultTolerationSeconds: not-ready and
  unreachable, NoExecute, 300 s) pass, and such a pod is scheduled.
- Ephemeral storage: a container that names none gets the LimitRange's defaults; a pod asking more than the seat's
  quota (requests/limits.ephemeral-storage) is refused.
- Pod Security: the seat namespaces enforce baseline. The workshop's own pods (the blog's demos, the driver's
  examples, docs/demos, can-has-gpu's) pass a server-side dry run as the seat; a privileged, hostPath or
  hostNetwork pod is refused; and restricted, the next level, would refuse the demos (so baseline is the
  strictest that admits them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from k8s_helpers import (IMAGE, clear_namespaces, core_api, delete_namespace, expect_api_error, pod_body,
                         wait_default_service_account, wait_for)

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from can_has_gpu.objects import holder_pod, workload_pod  # noqa: E402  (tools/can_has_gpu: the tool's own pods)

SEAT = "user47"
CONTROL_PLANE_TAINT = "node-role.kubernetes.io/control-plane"
NODE_NAME = "may not set spec.nodeName"
TOLERATE = "may tolerate only the taints the instructor allows"
DEFAULT_TOLERATIONS = {("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute")}
EPHEMERAL_QUOTA = "10Gi"  # workshop_users_quota_ephemeral_storage (the default)
DEFAULT_LIMITS = {"cpu": "500m", "memory": "512Mi", "ephemeral-storage": "1Gi"}  # workshop_users_container_default_*
DEFAULT_REQUESTS = {"cpu": "100m", "memory": "128Mi", "ephemeral-storage": "64Mi"}
DRY_RUN = "All"
# docs/demos files that are the instructor's, or that seats are refused by design (admin access).
NOT_FOR_SEATS = {"admin-access", "instructor-namespace.yaml", "instructor-taint-rule.yaml"}


def plain_pod(name: str, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"terminationGracePeriodSeconds": 0, "containers": [{"name": "ctr", "image": IMAGE}], **spec}}


def deployment(name: str, **spec) -> dict:
    template = {"metadata": {"labels": {"app": name}}, "spec": plain_pod(name, **spec)["spec"]}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template}}


def cron_job(name: str, **spec) -> dict:
    pod_spec = dict(plain_pod(name, restartPolicy="Never", **spec)["spec"])
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": "0 0 1 1 *", "jobTemplate": {"spec": {"template": {"spec": pod_spec}}}}}


@pytest.fixture
def seat(control_plane, seat_api):
    api = seat_api(SEAT)
    yield api
    clear_namespaces(control_plane.api_client, [SEAT])


# --- Placement --------------------------------------------------------------------------------------

def test_a_seat_pod_may_not_name_its_node(control_plane, seat):
    node = control_plane.nodes[0]
    exc = expect_api_error(403, core_api(seat).create_namespaced_pod, SEAT, plain_pod("pinned", nodeName=node))
    assert NODE_NAME in exc.body, exc.body
    exc = expect_api_error(403, client.AppsV1Api(seat).create_namespaced_deployment, SEAT,
                           deployment("pinned", nodeName=node))
    assert NODE_NAME in exc.body, exc.body
    # Nor can the seat bind a pod to a node itself (what the scheduler does).
    for resource, subresource in (("pods", "binding"), ("bindings", "")):
        review = client.AuthorizationV1Api(seat).create_self_subject_access_review({"spec": {"resourceAttributes": {
            "namespace": SEAT, "verb": "create", "resource": resource, "subresource": subresource}}})
        assert not review.status.allowed, (resource, subresource, review.status)


@pytest.mark.parametrize("toleration", [
    {"key": CONTROL_PLANE_TAINT, "operator": "Exists", "effect": "NoSchedule"},
    {"operator": "Exists"},  # every taint
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},  # cordoned nodes
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists"},  # every effect, NoSchedule too
], ids=["control-plane", "everything", "cordoned", "not-ready-any-effect"])
def test_a_seat_pod_may_not_tolerate_what_the_instructor_did_not_allow(control_plane, seat, toleration):
    core, apps, batch = core_api(seat), client.AppsV1Api(seat), client.BatchV1Api(seat)
    for call, body in ((core.create_namespaced_pod, plain_pod("tolerant", tolerations=[toleration])),
                       (apps.create_namespaced_deployment, deployment("tolerant", tolerations=[toleration])),
                       (batch.create_namespaced_cron_job, cron_job("tolerant", tolerations=[toleration]))):
        exc = expect_api_error(403, call, SEAT, body)
        assert TOLERATE in exc.body, exc.body
    # Nor added to a running pod (a pod's tolerations may be added to).
    core.create_namespaced_pod(SEAT, plain_pod("plain"))
    exc = expect_api_error(403, core.patch_namespaced_pod, "plain", SEAT, {"spec": {"tolerations": [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}, toleration]}})
    assert TOLERATE in exc.body, exc.body


def test_a_seat_may_not_create_a_daemon_set(control_plane, seat):
    template = deployment("everywhere")["spec"]
    body = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "everywhere"},
            "spec": {"selector": template["selector"], "template": template["template"]}}
    exc = expect_api_error(403, client.AppsV1Api(seat).create_namespaced_daemon_set, SEAT, body)
    assert "may not create DaemonSets" in exc.body, exc.body


def test_the_tolerations_kubernetes_adds_pass_and_the_scheduler_places_the_pod(control_plane, seat):
    core = core_api(seat)
    created = core.create_namespaced_pod(SEAT, plain_pod("scheduled"))
    added = {(t.key, t.effect) for t in created.spec.tolerations or []}
    assert DEFAULT_TOLERATIONS <= added, f"DefaultTolerationSeconds added {added}"
    assert all(t.toleration_seconds == 300 for t in created.spec.tolerations), created.spec.tolerations
    pod = wait_for("the seat's pod scheduled", lambda: (p := core.read_namespaced_pod("scheduled", SEAT)).spec.node_name
                   and p)
    print(f"[placement] the scheduler put {SEAT}/scheduled on {pod.spec.node_name}", file=sys.stderr)
    # The same tolerations written by the seat pass too (explicit, with a time limit).
    explicit = [{"key": key, "operator": "Exists", "effect": effect, "tolerationSeconds": 60}
                for key, effect in sorted(DEFAULT_TOLERATIONS)]
    core.create_namespaced_pod(SEAT, plain_pod("explicit", tolerations=explicit), dry_run=DRY_RUN)


# --- Ephemeral storage ------------------------------------------------------------------------------

def test_a_container_that_names_no_storage_gets_the_default_limit(control_plane, seat):
    created = core_api(seat).create_namespaced_pod(SEAT, plain_pod("plain"))
    resources = created.spec.containers[0].resources
    assert resources.limits == DEFAULT_LIMITS and resources.requests == DEFAULT_REQUESTS, resources


def test_a_pod_that_would_fill_the_node_disk_is_refused(control_plane, seat):
    body = plain_pod("disk-hog")
    body["spec"]["containers"][0]["resources"] = {"requests": {"ephemeral-storage": "100Gi"},
                                                  "limits": {"ephemeral-storage": "100Gi"}}
    body["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    exc = expect_api_error(403, core_api(seat).create_namespaced_pod, SEAT, body)
    assert "exceeded quota" in exc.body and "ephemeral-storage" in exc.body and EPHEMERAL_QUOTA in exc.body, exc.body


# --- Pod Security -----------------------------------------------------------------------------------

def blog_pods() -> list[dict]:
    """The seed blog's three demos (their pods: a template's GPU each, one shared claim, a CEL-selected GPU), as
    the post writes them: plain pods, no securityContext."""
    def pod(name, claim=None, template=None):
        body = pod_body(name, claim=claim, template=template)
        body["spec"]["containers"][0].update(image="ubuntu:24.04", command=["bash", "-c", "nvidia-smi -L; sleep 600"])
        return body
    return [pod("pod-a", template="single-gpu"), pod("shared-1", claim="shared-gpu"), pod("big-gpu", template="gpu-40gi")]


def driver_example_pods() -> list[dict]:
    """The dra-example-driver's demo/examples pods, written here the same way: ubuntu:22.04 containers that print
    their GPU, two containers sharing a claim, an init container, no securityContext."""
    command = ["bash", "-c", "export; trap 'exit 0' TERM; sleep 9999 & wait"]
    ctr = {"image": "ubuntu:22.04", "command": command, "resources": {"claims": [{"name": "gpu"}]}}
    claims = [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]
    return [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod0"},
         "spec": {"containers": [dict(ctr, name="ctr0"), dict(ctr, name="ctr1")], "resourceClaims": claims}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod1"},
         "spec": {"initContainers": [dict(ctr, name="init", command=["bash", "-c", "export"])],
                  "containers": [dict(ctr, name="ctr")], "resourceClaims": claims}},
    ]


def docs_demo_pods() -> list[dict]:
    pods = []
    for path in sorted((REPO / "docs" / "demos").glob("*/*.yaml")):
        if path.parent.name in NOT_FOR_SEATS or path.name in NOT_FOR_SEATS:
            continue
        pods += [doc for doc in yaml.safe_load_all(path.read_text()) if doc and doc.get("kind") == "Pod"]
    assert len(pods) >= 7, pods
    return pods


def material() -> list[dict]:
    return (blog_pods() + driver_example_pods() + docs_demo_pods()
            + [holder_pod("cain-x", IMAGE), workload_pod("cain-x-run", "cain-x", "ubuntu:24.04", ["nvidia-smi"])])


def test_the_workshops_own_pods_pass_pod_security_in_a_seat_namespace(control_plane, seat):
    core = core_api(seat)
    labels = core_api(control_plane.api_client).read_namespace(SEAT).metadata.labels
    assert labels.get("pod-security.kubernetes.io/enforce") == "baseline", labels
    for body in material():
        created = core.create_namespaced_pod(SEAT, body, dry_run=DRY_RUN)
        assert created.metadata.name == body["metadata"]["name"]


@pytest.mark.parametrize("spec,violation", [
    ({"containers": [{"name": "ctr", "image": IMAGE, "securityContext": {"privileged": True}}]}, "privileged"),
    ({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, "hostPath"),
    ({"hostNetwork": True}, "host namespaces"),
    ({"hostPID": True}, "host namespaces"),
], ids=["privileged", "hostPath", "hostNetwork", "hostPID"])
def test_a_pod_that_reaches_into_the_node_is_refused(control_plane, seat, spec, violation):
    body = plain_pod("escape")
    body["spec"].update({key: value for key, value in spec.items() if key != "containers"})
    if "containers" in spec:
        body["spec"]["containers"] = spec["containers"]
    message = json.loads(expect_api_error(403, core_api(seat).create_namespaced_pod, SEAT, body).body)["message"]
    assert 'violates PodSecurity "baseline:latest"' in message and violation in message, message


def test_restricted_would_refuse_the_workshops_own_pods(control_plane):
    """Why baseline: the next level refuses the demos as they are written (no runAsNonRoot, no seccomp profile,
    capabilities not dropped), in a namespace of the instructor's labelled restricted."""
    admin = core_api(control_plane.api_client)
    name = "dralab-psa-restricted"
    admin.create_namespace({"metadata": {"name": name, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}})
    try:
        wait_default_service_account(control_plane.api_client, name)
        refused = []
        for body in material():
            try:
                admin.create_namespaced_pod(name, body, dry_run=DRY_RUN)
            except client.ApiException as exc:
                message = json.loads(exc.body)["message"]
                assert exc.status == 403 and 'violates PodSecurity "restricted:latest"' in message, message
                refused.append(body["metadata"]["name"])
        print(f"[pod security] restricted refuses {len(refused)} of {len(material())} of the workshop's pods",
              file=sys.stderr)
        assert len(refused) == len(material()), refused
    finally:
        delete_namespace(control_plane.api_client, name)
