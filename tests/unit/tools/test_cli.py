"""can-has-gpu's arguments, refusals (one sentence, non-zero exit, no traceback) and text output."""

from __future__ import annotations

import json

import pytest

from can_has_gpu import cli, render
from can_has_gpu.api import Refusal, quota_sentence, refusal_from
from can_has_gpu.objects import claim_body, holder_pod, memory_selector, workload_pod
from can_has_gpu.settings import SettingsError, load_settings
from render import participant_tool_settings
from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError
from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import LEASE_EXPIRES

QUOTA_MESSAGE = ('Kubernetes API POST /apis/resource.k8s.io/v1/namespaces/user01/resourceclaims failed (HTTP 403): '
                 'resourceclaims.resource.k8s.io "gpu-abcde" is forbidden: exceeded quota: dralab-seat-quota, '
                 'requested: count/resourceclaims.resource.k8s.io=1,gpu.example.com.deviceclass.resource.k8s.io/devices=1, '
                 'used: count/resourceclaims.resource.k8s.io=1,gpu.example.com.deviceclass.resource.k8s.io/devices=1, '
                 'limited: count/resourceclaims.resource.k8s.io=2,gpu.example.com.deviceclass.resource.k8s.io/devices=1. '
                 'The user lacks RBAC permission for this request.')


@pytest.fixture(autouse=True)
def lab_home(monkeypatch, tmp_path, lab_settings_file):
    # The settings file participant_tool writes with the lab's defaults (conftest.py), an empty home.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)


def test_parser_commands_and_options():
    parser = cli.build_parser()
    args = parser.parse_args(["reserve", "--class", "gpu-40gi.example.com", "--memory", "40Gi", "--count", "2",
                              "--for", "1h", "-o", "json"])
    assert (args.command, args.device_class, args.memory, args.count, args.lease, args.output) == \
        ("reserve", "gpu-40gi.example.com", "40Gi", 2, "1h", "json")
    args = parser.parse_args(["run", "--claim", "gpu-x", "--", "busybox:1.37", "sh", "-c", "echo $GPU_DEVICE_N"])
    assert (args.claim, args.image, args.cmd) == ("gpu-x", "busybox:1.37", ["sh", "-c", "echo $GPU_DEVICE_N"])
    assert parser.parse_args(["release", "--all"]).all is True
    assert parser.parse_args(["why"]).claim is None
    assert parser.parse_args(["--output", "json", "status"]).output == "json"


def test_help_has_examples(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for command in ("reserve", "run", "status", "why", "release"):
        assert f"can-has-gpu {command}" in text


@pytest.mark.parametrize("argv, code, words", [
    (["reserve", "--for", "9h"], 1, "the longest lease is 8h"),
    (["reserve", "--memory", "lots"], 2, "--memory lots is not a quantity"),
    (["reserve", "--count", "0"], 2, "ask for 1 to 8 GPUs"),
    (["status"], 1, "No kubeconfig at"),
    (["frobnicate"], 2, "invalid choice"),
])
def test_refusals_are_one_sentence_and_an_exit_code(capsys, argv, code, words):
    assert cli.main(argv) == code
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("can-has-gpu:")]
    assert len(lines) == 1 and words in lines[0], captured.err
    assert "Traceback" not in captured.err + captured.out


def test_refusals_in_json(capsys):
    assert cli.main(["status", "-o", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["error"] == "no_kubeconfig" and "No kubeconfig" in data["sentence"]


def json_failure(capsys):
    """The one JSON object a failing command prints with -o json (stdout only, nothing else there)."""
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    data = json.loads(captured.out)
    assert set(data) == {"error", "sentence"}, data
    return data


@pytest.mark.parametrize("output", [["-o", "json"], ["--output=json"], ["-ojson"], ["--output", "json"]])
def test_a_broken_settings_file_is_json_with_json_output(capsys, tmp_path, monkeypatch, output):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"lease_maximum": "4h"}))
    monkeypatch.setenv("CAN_HAS_GPU_SETTINGS", str(path))
    assert cli.main(["status", *output]) == 1
    data = json_failure(capsys)
    assert data["error"] == "settings"
    assert "unknown field(s) lease_maximum" in data["sentence"] and data["sentence"].endswith("tell the instructor.")


def test_a_broken_settings_file_is_one_line_in_text(capsys, tmp_path, monkeypatch):
    path = tmp_path / "settings.json"
    path.write_text("{not json")
    monkeypatch.setenv("CAN_HAS_GPU_SETTINGS", str(path))
    assert cli.main(["status"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert captured.err.startswith(f"can-has-gpu: cannot read the settings file {path}")


def test_an_unexpected_error_is_json_with_json_output(capsys, monkeypatch):
    # No real command fails unexpectedly on purpose: a command that raises stands in for a bug.
    def broken(args, settings, out):
        raise KeyError("nodeName")
    monkeypatch.setitem(cli.COMMANDS, "status", broken)
    assert cli.main(["status", "-o", "json"]) == 1
    data = json_failure(capsys)
    assert data["error"] == "unexpected"
    assert data["sentence"].startswith("unexpected error (KeyError: 'nodeName'): tell the instructor")
    assert cli.main(["status"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("can-has-gpu: unexpected error (KeyError")
    monkeypatch.setenv("CAN_HAS_GPU_DEBUG", "1")
    with pytest.raises(KeyError):
        cli.main(["status", "-o", "json"])


def test_a_usage_error_is_json_with_json_output(capsys):
    assert cli.main(["reserve", "--count", "0", "-o", "json"]) == 2
    assert json_failure(capsys)["error"] == "usage"


def test_api_down_is_a_sentence(capsys, tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u", "namespace": "user01"}}]}))
    assert cli.main(["status", "--kubeconfig", str(kubeconfig)]) == 4
    err = capsys.readouterr().err
    assert "Cannot reach the lab's Kubernetes API" in err and "Traceback" not in err


def seat_kubeconfig(path, namespace="user01", server="https://127.0.0.1:1"):
    context = {"cluster": "c", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": context}]}))
    return path


def test_the_first_kubeconfig_entry_is_used(capsys, tmp_path, monkeypatch):
    # As kubectl: the first file of $KUBECONFIG (k8s_client.kubeconfig_path), here a seat's that reaches nothing.
    first = seat_kubeconfig(tmp_path / "first")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'second'}")
    assert cli.main(["status"]) == 4
    assert "Cannot reach the lab's Kubernetes API" in capsys.readouterr().err


@pytest.mark.parametrize("content, words", [
    ("{not: [yaml", "ask the instructor for a fresh one"),
    ("{}", "ask the instructor for a fresh one"),
    (None, "names no namespace"),
])
def test_unusable_kubeconfigs_are_refused(capsys, tmp_path, content, words):
    path = tmp_path / "kubeconfig"
    if content is None:
        seat_kubeconfig(path, namespace=None)
    else:
        path.write_text(content)
    assert cli.main(["status", "-o", "json", "--kubeconfig", str(path)]) == 1
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["error"] == "bad_kubeconfig" and words in data["sentence"] and str(path) in data["sentence"]
    assert "Traceback" not in captured.err


def test_quota_and_status_refusals():
    assert quota_sentence(QUOTA_MESSAGE).startswith(
        "Your seat may hold 1 GPU(s) of class gpu.example.com and already uses 1: release one first")
    refusal = refusal_from(K8sError(QUOTA_MESSAGE, status=403), "creating your claim")
    assert refusal.reason == "quota" and refusal.code == 1
    assert refusal_from(K8sError("x", status=None), "listing").code == 4
    assert refusal_from(K8sError("x", status=401), "listing").reason == "unauthorized"
    assert "only works in your own namespace" in refusal_from(K8sError("x", status=403), "deleting").sentence
    assert isinstance(refusal, Refusal)
    claims_full = QUOTA_MESSAGE.replace("used: count/resourceclaims.resource.k8s.io=1,gpu.example.com.deviceclass"
                                        ".resource.k8s.io/devices=1", "used: count/resourceclaims.resource.k8s.io=2,"
                                        "gpu.example.com.deviceclass.resource.k8s.io/devices=0")
    assert quota_sentence(claims_full).startswith("Your seat may have 2 claim(s) and already has 2")


POLICY_MESSAGE = (
    "Kubernetes API POST /apis/resource.k8s.io/v1/namespaces/user05/resourceclaims failed (HTTP 403): "
    "resourceclaims.resource.k8s.io \"gpu-x\" is forbidden: ValidatingAdmissionPolicy 'dralab-seat-claim-count' "
    "with binding 'dralab-seat-claim-count' denied request: this seat already holds 1 of 1 GPU claim(s); list them "
    "with kubectl get resourceclaims and delete one to free it.. The user lacks RBAC permission for this request.")


def test_policy_refusals():
    held = refusal_from(K8sError(POLICY_MESSAGE, status=403), "creating your claim")
    assert held.reason == "quota" and held.code == 1
    assert held.sentence == ("Your seat may hold 1 GPU(s) and already holds 1: release one first "
                             "(can-has-gpu status lists them, can-has-gpu release NAME frees one).")
    other = POLICY_MESSAGE.split("denied request: ", maxsplit=1)[0] + (
        "denied request: allocationMode All would take every matching GPU of the shared lab.")
    refusal = refusal_from(K8sError(other, status=403), "creating your claim")
    assert refusal.reason == "policy"
    assert refusal.sentence == ("The lab does not allow this (creating your claim): allocationMode All would take "
                                "every matching GPU of the shared lab.")


@pytest.mark.parametrize("memory, text", [("40Gi", "40Gi"), (" 80Gi ", "80Gi"), ("1.5Ti", "1.5Ti"), ("4e10", "4e10"),
                                          ("500M", "500M")])
def test_memory_is_any_positive_quantity(memory, text):
    assert memory_selector("gpu.example.com", memory) == \
        f"device.capacity['gpu.example.com'].memory.compareTo(quantity('{text}')) >= 0"


@pytest.mark.parametrize("memory", ["lots", "", "40GiB", "-40Gi", "0", "40Gi') || true || quantity('1", None])
def test_memory_that_is_no_positive_quantity_is_refused(memory):
    with pytest.raises(ValueError, match="is not a quantity: write it like 40Gi or 80Gi"):
        memory_selector("gpu.example.com", memory)


def test_objects():
    body = claim_body("gpu.example.com", 2, [memory_selector("gpu.example.com", "40Gi")], "2026-12-01T12:00:00Z", "2h")
    exactly = body["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["count"] == 2 and exactly["allocationMode"] == "ExactCount"
    assert exactly["selectors"] == [{"cel": {"expression":
                                             "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"}}]
    assert body["metadata"]["annotations"][LEASE_EXPIRES] == "2026-12-01T12:00:00Z"
    holder = holder_pod("gpu-abcde", "busybox:1.37")
    assert holder["metadata"]["name"] == "gpu-abcde-holder"
    assert holder["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimName": "gpu-abcde"}]
    assert holder["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    run = workload_pod("gpu-abcde-run-1", "gpu-abcde", "busybox:1.37", ["sh", "-c", "echo hi"])
    assert run["spec"]["restartPolicy"] == "Never" and run["spec"]["containers"][0]["command"][0] == "sh"
    assert "command" not in workload_pod("p", "c", "img", [])["spec"]["containers"][0]


SETTINGS = {"lease_default": "1h", "lease_max": "4h", "default_class": "x", "driver": "d.example.com",
            "holder_image": "busybox:1.37", "wait": "90s"}


def test_settings_file(tmp_path, monkeypatch):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SETTINGS))
    settings = load_settings(str(path))
    assert (settings.lease_default_seconds, settings.lease_max_seconds, settings.default_class) == (3600, 14400, "x")
    path.write_text(json.dumps(dict(SETTINGS, lease_default="5h")))
    with pytest.raises(SettingsError, match="longer than lease_max"):
        load_settings(str(path))
    path.write_text(json.dumps({"lease_maximum": "4h"}))
    with pytest.raises(SettingsError, match="unknown field"):
        load_settings(str(path))
    monkeypatch.setenv("CAN_HAS_GPU_SETTINGS", str(path))
    assert cli.main(["status"]) == 1


def test_settings_file_has_no_fallback(tmp_path):
    # The values come from the lab's settings through participant_tool; the program keeps no copy of them.
    path = tmp_path / "s.json"
    with pytest.raises(SettingsError, match="no settings file %s .the participant_tool role writes it" % path):
        load_settings(str(path))
    path.write_text(json.dumps({k: v for k, v in SETTINGS.items() if k not in ("lease_max", "driver")}))
    with pytest.raises(SettingsError, match="the settings file %s has no lease_max, driver$" % path):
        load_settings(str(path))


def test_status_text():
    report = {"namespace": "user01", "free": {"free": 23, "published": 24, "by_node": {"worker1": 7, "worker2": 8}},
              "claims": [{"name": "gpu-abcde", "state": "in use", "age_seconds": 300, "lease_left_seconds": 6900,
                          "pods": ["gpu-abcde-holder"],
                          "devices": [{"device": "gpu-3", "node": "worker1", "data": {"model": "LATEST-GPU-MODEL"}}]}]}
    text = render.status_text(report)
    lines = text.splitlines()
    assert lines[0].split() == ["CLAIM", "STATE", "DEVICE", "NODE", "AGE", "LEASE", "LEFT", "PODS"]
    assert lines[1].split() == ["gpu-abcde", "in", "use", "gpu-3", "worker1", "5m", "1h55m", "gpu-abcde-holder"]
    assert "gpu-abcde gpu-3: model=LATEST-GPU-MODEL" in text
    assert text.endswith("Free GPUs in the lab: 23 of 24 (worker1 7, worker2 8)")
    empty = render.status_text({"namespace": "user01", "claims": [], "free": None})
    assert "You hold no claims in user01" in empty and "unknown" in empty


def test_reserved_text():
    text = render.reserved_text({"claim": "gpu-abcde", "devices": [{"device": "gpu-3", "node": "worker1",
                                                                    "memory": "80Gi"}],
                                 "lease_expires": "2026-12-01T14:00:00Z", "lease_left_seconds": 7200})
    assert text.splitlines()[0] == "Reserved gpu-abcde: gpu-3 on worker1 (80Gi), lease until 2026-12-01T14:00:00Z (2h)."


def test_the_settings_file_has_every_field_the_node_programs_read(tmp_path):
    # can-has-gpu and the reaper have no defaults of their own: the file the role writes must hold every field.
    path = tmp_path / "can-has-gpu.json"
    path.write_text(json.dumps(participant_tool_settings()))
    settings = load_settings(str(path))
    assert settings.lease_max == lab_settings.default("dralab_lease_max")
    assert settings.lease_default == lab_settings.default("dralab_lease_default")
    assert settings.default_class == lab_settings.default("dralab_device_classes")[0]["name"]
    path.write_text(json.dumps(participant_tool_settings({"dralab_lease_max": "4h"})))
    assert load_settings(str(path)).lease_max == "4h"
