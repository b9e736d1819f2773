# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/participant_tool: the reaper's RBAC (writes only in seat namespaces), its unit and its kubeconfig,
and the defaults that read the lab-wide settings."""

from __future__ import annotations

import yaml

from render import evaluate, parse_unit, render_role_template, role_vars

SEAT_NAMESPACES = ["user01", "user02"]


def objects(**identity):
    """The reaper's objects, as tasks/main.yml asks tasks/identity.yml for them (or another identity's)."""
    reaper = role_vars("participant_tool")
    variables = {"participant_tool_identity_name": "dralab-lease-reaper",
                 "participant_tool_identity_read_rules": reaper["participant_tool_reaper_read_rules"],
                 "participant_tool_identity_seat_rules": reaper["participant_tool_reaper_seat_rules"],
                 "participant_tool_seat_namespaces": SEAT_NAMESPACES}
    variables.update(identity)
    return yaml.safe_load(render_role_template("participant_tool", "identity-objects.yml.j2", variables))


def test_the_reaper_writes_only_in_seat_namespaces():
    docs = objects()
    bindings = [d for d in docs if d["kind"] == "RoleBinding"]
    assert [b["metadata"]["namespace"] for b in bindings] == SEAT_NAMESPACES
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
        ("pods", "delete"), ("resourceclaims", "delete"), ("configmaps", "create"), ("configmaps", "get"),
        ("configmaps", "update")}
    assert [r.get("resourceNames") for r in seat_rules if "update" in r["verbs"]] == [["dralab-gpu-board"]]
    secret = next(d for d in docs if d["kind"] == "Secret")
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["namespace"] == "dralab-system"
    assert "dralab-system" not in SEAT_NAMESPACES


def test_an_identity_without_seat_rules_writes_nowhere():
    docs = objects(participant_tool_identity_name="dralab-board", participant_tool_identity_seat_rules=[],
                   participant_tool_identity_read_rules=[{"apiGroups": [""], "resources": ["pods"],
                                                          "verbs": ["get", "list", "watch"]}])
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("Namespace", "dralab-system"), ("ServiceAccount", "dralab-board"), ("Secret", "dralab-board-token"),
        ("ClusterRole", "dralab-board-read"), ("ClusterRoleBinding", "dralab-board-read")]
    # The namespace is shared by every identity: its labels name none of them, so two roles never fight over it.
    assert docs[0]["metadata"]["labels"]["app.kubernetes.io/name"] == "dralab-system"


def test_reaper_unit():
    unit = parse_unit(render_role_template("participant_tool", "dralab-lease-reaper.service.j2"))
    service = dict(unit["Service"])
    assert service["User"] == "dralab-reaper"
    assert service["ExecStart"] == ("/opt/dralab/can-has-gpu/bin/dralab-lease-reaper --kubeconfig "
                                    "/etc/dralab/lease-reaper.kubeconfig --interval 5s")
    assert service["Restart"] == "always"
    assert dict(unit["Install"])["WantedBy"] == "multi-user.target"
    idle = dict(parse_unit(render_role_template("participant_tool", "dralab-lease-reaper.service.j2",
                                                {"participant_tool_idle_release_after": "30m"}))["Service"])
    assert idle["ExecStart"].endswith("--interval 5s --idle-after 30m")


def test_reaper_kubeconfig():
    text = render_role_template("participant_tool", "identity.kubeconfig.j2", {
        "participant_tool_server": "https://10.89.42.11:6443", "participant_tool_ca_data": "Q0E=",
        "participant_tool_identity_name": "dralab-lease-reaper", "participant_tool_identity_token": "tok"})
    config = yaml.safe_load(text)
    assert config["clusters"][0]["cluster"] == {"server": "https://10.89.42.11:6443",
                                                "certificate-authority-data": "Q0E="}
    assert config["users"][0]["user"] == {"token": "tok"}
    assert config["contexts"][0]["context"] == {"cluster": "dralab", "user": "dralab-lease-reaper"}


def test_defaults_read_the_lab_wide_settings():
    assert evaluate("participant_tool", "participant_tool_lease_default", {}) == "2h"
    assert evaluate("participant_tool", "participant_tool_lease_max", {"dralab_lease_max": "4h"}) == "4h"
    assert evaluate("participant_tool", "participant_tool_wheels_url | trim", {}) == ""
    assert evaluate("participant_tool", "participant_tool_wheels_url | trim",
                    {"dralab_download_mirror": "http://10.89.42.2:8080/"}) == "http://10.89.42.2:8080/wheels/"
    assert evaluate("participant_tool", "participant_tool_pip_wheel_url | trim",
                    {"dralab_download_mirror": "http://10.89.42.2:8080"}) == \
        "http://10.89.42.2:8080/wheels/pip-26.3-py3-none-any.whl"
    assert evaluate("participant_tool", "participant_tool_pip_wheel_url | trim", {}).startswith(
        "https://files.pythonhosted.org/packages/py3/p/pip/pip-26.3-")
    assert evaluate("participant_tool", "participant_tool_default_class | trim",
                    {"dralab_device_classes": [{"name": "gpu-40gi.example.com"}]}) == "gpu-40gi.example.com"
    assert evaluate("participant_tool", "participant_tool_reaper_hosts",
                    {"groups": {"control_plane": ["cp1", "cp2"]}}) == ["cp1"]
