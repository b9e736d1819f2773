"""The Kubernetes API as a seat (or the reaper) sees it, with refusals as one readable sentence.

Every call goes through the collection's KubeClient (plugins/module_utils/k8s/client.py):
objects are plain dicts, errors are K8sError with the HTTP status. Here they
become Refusal: what went wrong and what to do, never a traceback.
"""

from __future__ import annotations

import os
import re

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import (
    K8sError,
    KubeClient,
    kubeconfig_namespace,
    kubeconfig_path,
)

RESOURCE = "/apis/resource.k8s.io/v1"

_QUOTA_PART = re.compile(r"\b(requested|used|limited): (\S+)")
# The seat's ValidatingAdmissionPolicies (plugins/module_utils/seat/policies.py) answer "... denied request: MESSAGE".
_POLICY_DENIAL = "denied request: "
_HELD = re.compile(r"already holds (\d+) of (\d+) GPU claim")

# can-has-gpu's exit statuses (cli.py documents them): refused, bad usage, no GPU can be allocated now, the API
# unreachable or refusing the seat, the request never fits the lab as asked (change it).
EXIT_REFUSED, EXIT_USAGE, EXIT_NO_GPU, EXIT_API, EXIT_NEVER_FITS = 1, 2, 3, 4, 5

# The verdicts (plugins/module_utils/dra/diagnosis.py) that only a changed request mends: exit EXIT_NEVER_FITS.
CHANGE_VERDICTS = ("never_fits", "claim_missing", "claim_elsewhere", "refused", "other_scheduler", "pod_unschedulable")


class Refusal(Exception):
    """One sentence for the participant, and the exit code of the command."""

    def __init__(self, sentence: str, code: int = EXIT_REFUSED, reason: str = "refused"):
        super().__init__(sentence)
        self.sentence = sentence
        self.code = code
        self.reason = reason


def quota_sentence(message: str) -> str:
    """The participant's sentence for an 'exceeded quota' refusal."""
    parts = {label: value.rstrip(",.") for label, value in _QUOTA_PART.findall(message)}

    def amounts(text):
        pairs = (item.split("=", 1) for item in (text or "").split(",") if "=" in item)
        return {key.strip(): value.strip().rstrip(".") for key, value in pairs}
    requested, used, limited = (amounts(parts.get(k)) for k in ("requested", "used", "limited"))

    def exceeded(key):
        try:
            return int(used.get(key, 0)) + int(requested[key]) > int(limited[key])
        except (KeyError, ValueError):
            return key in requested
    over = [key for key in limited if key in requested and exceeded(key)]
    for key in over:
        if key.endswith(".deviceclass.resource.k8s.io/devices"):
            cls = key.split(".deviceclass.", 1)[0]
            return (f"Your seat may hold {limited[key]} GPU(s) of class {cls} and already uses "
                    f"{used.get(key, limited[key])}: release one first (can-has-gpu status lists them, "
                    "can-has-gpu release NAME frees one).")
    for key in over:
        if key == "count/resourceclaims.resource.k8s.io":
            return (f"Your seat may have {limited[key]} claim(s) and already has {used.get(key, limited[key])}: "
                    "release one first (can-has-gpu status lists them, can-has-gpu release NAME frees one).")
        return (f"Your seat's quota for {key} ({limited[key]}) is used up: release what you do not need "
                "(can-has-gpu release --all) and try again.")
    return f"Your seat's quota refuses this: {message}. Release what you do not need and try again."


def held_sentence(limit, held, waiting: int = 0) -> str:
    """What a seat at its GPU limit is told (the claim-count policy's refusal, a place in line refused)."""
    places = f" and waits in line for {waiting}" if waiting else ""
    leave = ", can-has-gpu leave gives up your place in line" if waiting else ""
    return (f"Your seat may hold {limit} GPU(s) and already holds {held}{places}: release one first (can-has-gpu "
            f"status lists them, can-has-gpu release NAME frees one{leave}).")


def policy_refusal(message: str, doing: str) -> Refusal:
    """The participant's sentence for a refusal by one of the seat namespace's admission policies."""
    message = message.split(" The user lacks RBAC permission", 1)[0].strip().rstrip(".")
    held = _HELD.search(message)
    if held:
        return Refusal(held_sentence(held.group(2), held.group(1)), reason="quota")
    return Refusal(f"The lab does not allow this ({doing}): {message}.", reason="policy")


def refusal_from(exc: K8sError, doing: str) -> Refusal:
    status = exc.status
    text = str(exc)
    if status is None:
        return Refusal(f"Cannot reach the lab's Kubernetes API while {doing}: the lab may be restarting; "
                       "try again in a minute, or tell the instructor if it persists.", code=EXIT_API, reason="api_down")
    if status == 401:
        return Refusal("The API refused your seat's credentials (expired or rotated): log in again, or ask the "
                       "instructor for a fresh kubeconfig.", code=EXIT_API, reason="unauthorized")
    if status == 403 and "exceeded quota" in text:
        return Refusal(quota_sentence(text), reason="quota")
    if status == 403 and _POLICY_DENIAL in text:
        return policy_refusal(text.split(_POLICY_DENIAL, 1)[1], doing)
    if status == 403:
        return Refusal(f"Your seat is not allowed to do this ({doing}): can-has-gpu only works in your own "
                       "namespace; ask the instructor if you think you should be.", reason="forbidden")
    message = text.split("failed (HTTP %s): " % status, 1)[-1]
    return Refusal(f"The API refused {doing}: {message}", reason="api_error")


class Api:
    """KubeClient for one kubeconfig, with the namespace of its current context."""

    def __init__(self, client: KubeClient, namespace: str):
        self.client = client
        self.namespace = namespace

    @classmethod
    def connect(cls, kubeconfig: str | None = None, need_namespace: bool = True) -> "Api":
        """The API of a kubeconfig: --kubeconfig, else $KUBECONFIG, else ~/.kube/config (k8s_client.kubeconfig_path)."""
        path = kubeconfig_path({"kubeconfig": kubeconfig})
        if not os.path.isfile(path):
            raise Refusal(f"No kubeconfig at {path}: can-has-gpu runs as your seat on the lab's login host "
                          "(ssh userNN@HOST, the address is on your credential card); ask the instructor if your "
                          "~/.kube/config is missing.", reason="no_kubeconfig")
        try:
            client = KubeClient.from_params({"kubeconfig": path})
            namespace = kubeconfig_namespace(path)
        except K8sError as exc:  # a file the client cannot load (broken YAML, no current context, bad user)
            raise Refusal(f"Cannot read the kubeconfig {path} ({exc}): ask the instructor for a fresh one.",
                          reason="bad_kubeconfig") from None
        if need_namespace and not namespace:
            raise Refusal(f"The kubeconfig {path} names no namespace: a seat's kubeconfig names the seat's own; "
                          "ask the instructor for a fresh one.", reason="bad_kubeconfig")
        return cls(client, namespace or "")

    @property
    def server(self) -> str:
        return self.client.api_client.configuration.host

    def call(self, doing: str, method: str, path: str, body=None, query=None, missing_ok=False,
             content_type: str | None = None):
        try:
            if content_type:
                return self.client.request(method, path, body, query, content_type)
            return self.client.request(method, path, body, query)
        except K8sError as exc:
            if missing_ok and exc.status == 404:
                return None
            raise refusal_from(exc, doing) from None

    def items(self, doing: str, path: str, query: dict | None = None) -> list[dict]:
        try:
            return self.client.list_items(path, query)
        except K8sError as exc:
            raise refusal_from(exc, doing) from None

    # -- paths
    def ns_path(self, kind: str, name: str = "", namespace: str | None = None) -> str:
        namespace = namespace or self.namespace
        group = RESOURCE if kind in ("resourceclaims", "resourceclaimtemplates") else "/api/v1"
        return f"{group}/namespaces/{namespace}/{kind}" + (f"/{name}" if name else "")

    def logs(self, pod: str, follow: bool = True):
        """An iterator over the bytes of a pod's log (follow: until the container ends)."""
        from kubernetes import client as k8s_client  # pylint: disable=import-outside-toplevel
        core = k8s_client.CoreV1Api(self.client.api_client)
        try:
            response = core.read_namespaced_pod_log(pod, self.namespace, follow=follow, _preload_content=False)
        except Exception as exc:  # ApiException or a connection error
            status = getattr(exc, "status", None)
            raise refusal_from(K8sError(str(exc), status=status), f"reading the log of pod {pod}") from None
        return response.stream(4096)
