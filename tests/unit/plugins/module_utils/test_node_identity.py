# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_identity: the objects of a node program's identity, the token it awaits and the kubeconfig it writes,
against an in-memory API server whose token controller fills a token Secret after a few reads."""

from __future__ import annotations

import base64
import copy
import os
import stat

import pytest
import yaml

from ansible_collections.dralab.workshop.plugins.module_utils.k8s import apply as k8s_apply
from ansible_collections.dralab.workshop.plugins.module_utils.seat import identity as node_identity
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import OCCUPANCY_CONFIGMAP_NAME
from render import role_vars

from apply_fakes import Store

REAPER = role_vars("participant_tool")
NAME = "dralab-lease-reaper"
ENDPOINT = ("https://10.89.42.11:6443", "Q0E=", False)
SEAT_NS_LABELS = {"app.kubernetes.io/managed-by": "dralab.workshop", "dralab.workshop/seat": "user01"}


class TokenStore(Store):
    """Store, plus GET of one object, and kube-controller-manager: a token Secret gets its token on the
    fill_after-th read of it (None: never)."""

    def __init__(self, fill_after=1):
        super().__init__()
        self.fill_after = fill_after
        self.secret_reads = 0

    def get(self, path, missing_ok=False):
        self.calls.append(("GET", path))
        for obj in self.objects.values():
            if k8s_apply.object_path(obj) == path:
                self.secret_reads += 1
                if self.fill_after is not None and self.secret_reads >= self.fill_after:
                    obj.setdefault("data", {})["token"] = base64.b64encode(b"the-token").decode()
                return copy.deepcopy(obj)
        if missing_ok:
            return None
        raise K8sError("not found", status=404)


def seat_namespace(name, terminating=False):
    meta = {"name": name, "labels": dict(SEAT_NS_LABELS, **{"dralab.workshop/seat": name})}
    if terminating:
        meta["deletionTimestamp"] = "2026-12-02T10:00:00Z"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def with_seats(store, *namespaces):
    for ns in namespaces:
        store.objects[k8s_apply.object_path(ns)] = ns
    return store


def ensure(store, path, check_mode=False, seat_rules=None, **options):
    rules = REAPER["participant_tool_reaper_seat_rules"] if seat_rules is None else seat_rules
    return node_identity.ensure_identity(store, NAME, "dralab-system", REAPER["participant_tool_reaper_read_rules"],
                                         rules, str(path), ENDPOINT, check_mode=check_mode,
                                         sleep=lambda seconds: None, **options)


def test_the_reaper_writes_only_in_seat_namespaces():
    docs = node_identity.identity_objects(NAME, "dralab-system", REAPER["participant_tool_reaper_read_rules"],
                                          REAPER["participant_tool_reaper_seat_rules"], ["user01", "user02"])
    bindings = [d for d in docs if d["kind"] == "RoleBinding"]
    assert [b["metadata"]["namespace"] for b in bindings] == ["user01", "user02"]
    assert {b["roleRef"]["name"] for b in bindings} == {"dralab-lease-reaper-seat"}
    cluster_bindings = [d for d in docs if d["kind"] == "ClusterRoleBinding"]
    assert [b["roleRef"]["name"] for b in cluster_bindings] == ["dralab-lease-reaper-read"]
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterRole"}
    read_verbs = {v for rule in roles["dralab-lease-reaper-read"]["rules"] for v in rule["verbs"]}
    assert read_verbs == {"get", "list", "watch"}, "the cluster-wide binding must only read"
    read_resources = {r for rule in roles["dralab-lease-reaper-read"]["rules"] for r in rule["resources"]}
    assert "secrets" not in read_resources and "configmaps" not in read_resources
    seat_rules = roles["dralab-lease-reaper-seat"]["rules"]
    assert {(r["resources"][0], v) for r in seat_rules for v in r["verbs"]} == {
        # patch: the waitlist's keeper removes a pod's waitlist gate when the seat's turn comes.
        ("pods", "delete"), ("pods", "patch"), ("resourceclaims", "delete"), ("configmaps", "create"),
        ("configmaps", "get"),
        ("configmaps", "update")}
    assert [r.get("resourceNames") for r in seat_rules if "update" in r["verbs"]] == [[OCCUPANCY_CONFIGMAP_NAME]]
    secret = next(d for d in docs if d["kind"] == "Secret")
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["namespace"] == "dralab-system"
    assert secret["metadata"]["annotations"] == {"kubernetes.io/service-account.name": NAME}


def test_an_identity_without_seat_rules_writes_nowhere():
    docs = node_identity.identity_objects("dralab-board", "dralab-system", [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}], [], ["user01"])
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("Namespace", "dralab-system"), ("ServiceAccount", "dralab-board"), ("Secret", "dralab-board-token"),
        ("ClusterRole", "dralab-board-read"), ("ClusterRoleBinding", "dralab-board-read")]
    # The namespace is shared by every identity: its labels name none of them, so two roles never fight over it.
    assert docs[0]["metadata"]["labels"]["app.kubernetes.io/name"] == "dralab-system"
    assert docs[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_a_cold_run_binds_every_live_seat_namespace_and_writes_the_kubeconfig(tmp_path):
    store = with_seats(TokenStore(fill_after=3), seat_namespace("user02"), seat_namespace("user01"),
                       seat_namespace("user03", terminating=True))
    path = tmp_path / "artifacts" / ("%s.kubeconfig" % NAME)
    result = ensure(store, path)
    assert result["seat_namespaces"] == ["user01", "user02"], "a terminating namespace gets no binding"
    assert "RoleBinding user01/dralab-lease-reaper" in result["created"]
    assert "RoleBinding user03/dralab-lease-reaper" not in result["created"]
    assert result["kubeconfig_written"] and result["changed"]
    assert store.secret_reads == 3, "the token is awaited until kube-controller-manager wrote it"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    config = yaml.safe_load(path.read_text())
    assert config["users"][0]["user"] == {"token": "the-token"}
    assert config["clusters"][0]["cluster"] == {"server": ENDPOINT[0], "certificate-authority-data": "Q0E="}
    context = config["contexts"][0]
    assert config["current-context"] == context["name"]
    assert "namespace" not in context["context"], "a node program reads cluster-wide"


def test_a_converged_identity_is_one_read_per_kind(tmp_path):
    store = with_seats(TokenStore(), seat_namespace("user01"))
    path = tmp_path / "reaper.kubeconfig"
    ensure(store, path)
    store.calls = []
    again = ensure(store, path)
    assert again["created"] == [] and again["updated"] == [] and not again["changed"]
    assert not again["kubeconfig_written"]
    # Namespace, ServiceAccount, Secret, ClusterRole, ClusterRoleBinding, RoleBinding: the token came with the list.
    assert [method for method, _path in store.calls] == ["GET"] * 6
    assert again["requests"] == 6


def test_check_mode_on_an_empty_cluster_writes_nothing(tmp_path):
    store = TokenStore(fill_after=None)
    path = tmp_path / "reaper.kubeconfig"
    result = ensure(store, path, check_mode=True)
    assert result["created"] and result["kubeconfig_written"] and result["changed"]
    assert store.objects == {} and not path.exists()


def test_a_token_that_never_comes_is_an_error_naming_the_secret_and_the_controller(tmp_path):
    store = TokenStore(fill_after=None)
    clock = iter(range(0, 1000, 10))
    with pytest.raises(K8sError) as error:
        node_identity.wait_for_token(store, "dralab-system", NAME, timeout=30, sleep=lambda s: None,
                                     clock=lambda: next(clock))
    assert "dralab-system/dralab-lease-reaper-token holds no token" in str(error.value)
    assert "kube-controller-manager" in str(error.value)


def test_a_changed_role_binding_is_restored(tmp_path):
    store = with_seats(TokenStore(), seat_namespace("user01"))
    path = tmp_path / "reaper.kubeconfig"
    ensure(store, path)
    binding = next(o for o in store.objects.values() if o["kind"] == "RoleBinding")
    binding["roleRef"]["name"] = "cluster-admin"
    again = ensure(store, path)
    assert again["updated"] == ["RoleBinding user01/dralab-lease-reaper"]
    assert next(o for o in store.objects.values() if o["kind"] == "RoleBinding")["roleRef"]["name"] == \
        "dralab-lease-reaper-seat"
