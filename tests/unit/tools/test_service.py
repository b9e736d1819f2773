"""can-has-gpu's reserve, step by step, on a fake API: the request checked before the API is asked, a request that
never fits the lab refused (exit 5) before anything is made, the claim taken back when its holder pod cannot be made,
the wait ended by an allocation, by the explainer or by the clock (exit 3, what the scheduler said on a line of its
own), and a quota refusal retried only while the seat holds no live claim."""

from __future__ import annotations

import json

import pytest

from can_has_gpu import service
from can_has_gpu.api import EXIT_REFUSED, EXIT_USAGE, Api, Refusal
from can_has_gpu.settings import load_settings

ALLOCATION = {"devices": {"results": [{"driver": "gpu.example.com", "pool": "worker1", "device": "gpu-3",
                                       "request": "gpu"}]}}


class FakeApi(Api):
    """The seat's API as a script: answers[(method, path)] is a list of answers (a Refusal is raised), used in
    order, the last one again; every call is recorded as (method, path)."""

    def __init__(self, answers=None, claims=(), lists=None):
        super().__init__(client=None, namespace="user01")
        self.answers = {key: list(value) for key, value in (answers or {}).items()}
        self.claims = list(claims)
        self.lists = dict(lists or {})  # path -> items; any other list answers the claims
        self.calls = []

    def call(self, doing, method, path, body=None, query=None, missing_ok=False, content_type=None):
        self.calls.append((method, path))
        queue = self.answers.get((method, path), [None])
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, Refusal):
            raise answer
        return answer

    def items(self, doing, path, query=None):
        self.calls.append(("LIST", path))
        return list(self.lists.get(path, self.claims))


class NoTaintRules(FakeApi):
    """A cluster that does not serve DeviceTaintRules (or a seat that may not read them)."""

    def items(self, doing, path, query=None):
        if path.endswith("/devicetaintrules"):
            raise Refusal("the server could not find the requested resource")
        return super().items(doing, path, query)


class Quiet:
    def __init__(self):
        self.lines = []

    def progress(self, text):
        self.lines.append(text)

    def end_progress(self):
        pass


CLAIMS = "/apis/resource.k8s.io/v1/namespaces/user01/resourceclaims"
PODS = "/api/v1/namespaces/user01/pods"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
GPU_CLASS = {"metadata": {"name": "gpu.example.com"},
             "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}
# One node with two 80Gi GPUs, as the example driver publishes them.
SLICE = {"metadata": {"name": "worker1-gpu.example.com"},
         "spec": {"driver": "gpu.example.com", "nodeName": "worker1",
                  "pool": {"name": "worker1", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-%d" % i, "attributes": {"index": {"int": i}},
                               "capacity": {"memory": {"value": "80Gi"}}} for i in (3, 4)]}}
LAB = {CLASSES: [GPU_CLASS], SLICES: [SLICE], CLAIMS: [], PODS: []}


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(service.time, "sleep", lambda _seconds: None)


def request(**options):
    values = dict(device_class=None, count=1, memory=None, lease=None, wait=None)
    values.update(options)
    return service.reserve_request(load_settings(), **values)


def test_the_request_gets_the_lab_defaults():
    asked = request()
    # In line by default, until a GPU is given; --no-wait waits the lab's setting for the scheduler, then answers.
    assert (asked.device_class, asked.count, asked.selectors, asked.lease_seconds, asked.wait_seconds,
            asked.in_line) == ("gpu.example.com", 1, [], 2 * 3600, None, True)
    assert (request(in_line=False).wait_seconds, request(in_line=False).in_line) == (90, False)
    asked = request(device_class="gpu-40gi.example.com", memory="40Gi", lease="1h", wait="5m", count=2)
    assert (asked.device_class, asked.count, asked.lease_seconds, asked.wait_seconds) == \
        ("gpu-40gi.example.com", 2, 3600, 300)
    assert asked.selectors == ["device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"]


@pytest.mark.parametrize("options, code, reason, words", [
    ({"lease": "9h"}, EXIT_REFUSED, "lease_limit", "the longest lease is 8h"),
    ({"wait": "soon"}, EXIT_USAGE, "usage", "--wait soon is not a duration"),
    ({"count": 9}, EXIT_USAGE, "usage", "ask for 1 to 8 GPUs"),
    ({"memory": "lots"}, EXIT_USAGE, "usage", "--memory lots is not a quantity"),
])
def test_a_request_the_lab_does_not_allow_is_refused(options, code, reason, words):
    with pytest.raises(Refusal) as info:
        request(**options)
    assert (info.value.code, info.value.reason) == (code, reason) and words in info.value.sentence


def test_an_unknown_class_names_the_ones_there_are():
    api = FakeApi({("GET", "/apis/resource.k8s.io/v1/deviceclasses/gpu-1ti.example.com"): [None]},
                  claims=[{"metadata": {"name": "gpu.example.com"}}, {"metadata": {"name": "gpu-40gi.example.com"}}])
    with pytest.raises(Refusal, match="choose one of gpu-40gi.example.com, gpu.example.com"):
        service.check_class(api, "gpu-1ti.example.com")


def test_the_claim_is_taken_back_when_its_holder_pod_cannot_be_made():
    api = FakeApi({("POST", CLAIMS): [{"metadata": {"name": "gpu-abcde"}}],
                   ("POST", PODS): [Refusal("no pods for you", reason="forbidden")]})
    with pytest.raises(Refusal, match="no pods for you"):
        service.make_claim(api, request(), load_settings())
    assert api.calls == [("POST", CLAIMS), ("POST", PODS), ("DELETE", f"{CLAIMS}/gpu-abcde")]


def test_a_quota_refusal_is_retried_only_while_the_seat_holds_no_claim():
    lagging = Refusal("quota", reason="quota")
    api = FakeApi({("POST", CLAIMS): [lagging, {"metadata": {"name": "gpu-abcde"}}]})
    assert service.create_claim(api, {})["metadata"]["name"] == "gpu-abcde"
    held = FakeApi({("POST", CLAIMS): [lagging, {"metadata": {"name": "gpu-abcde"}}]}, claims=[{"metadata": {}}])
    with pytest.raises(Refusal):
        service.create_claim(held, {})


def test_waiting_ends_with_the_allocated_claim():
    allocated = {"metadata": {"name": "gpu-abcde"}, "status": {"allocation": ALLOCATION}}
    api = FakeApi({("GET", f"{CLAIMS}/gpu-abcde"): [{"metadata": {"name": "gpu-abcde"}}, allocated]})
    progress = Quiet()
    waited = service.wait_for_gpu(api, load_settings(), "gpu-abcde", 60, service.time.monotonic(), progress)
    assert waited.claim is allocated and waited.sentence is None
    assert progress.lines == ["Waiting for a GPU for claim gpu-abcde: 0s"]


def test_waiting_ends_when_the_explainer_says_no_gpu_can_be_allocated(monkeypatch):
    unschedulable = {"status": {"conditions": [{"type": "PodScheduled", "status": "False",
                                                "message": "0/3 nodes are available"}]}}
    api = FakeApi({("GET", f"{CLAIMS}/gpu-abcde"): [{"metadata": {"name": "gpu-abcde"}}],
                   ("GET", f"{PODS}/gpu-abcde-holder"): [unschedulable]})
    answer = {"allocatable": False, "sentence": "user07 holds the last GPU."}
    monkeypatch.setattr(service, "why_waiting", lambda *_args: (answer, answer["sentence"]))
    waited = service.wait_for_gpu(api, load_settings(), "gpu-abcde", 60, service.time.monotonic(), Quiet())
    assert (waited.claim, waited.answer, waited.sentence) == (None, answer, "user07 holds the last GPU.")


def test_waiting_ends_when_the_wait_is_over():
    api = FakeApi({("GET", f"{CLAIMS}/gpu-abcde"): [{"metadata": {"name": "gpu-abcde"}}]})
    waited = service.wait_for_gpu(api, load_settings(), "gpu-abcde", 0, service.time.monotonic(), Quiet())
    assert (waited.claim, waited.answer, waited.sentence) == (None, None, None)


def test_taking_back_deletes_the_holder_pod_then_the_claim_and_waits_until_it_is_gone():
    api = FakeApi({("GET", f"{CLAIMS}/gpu-abcde"): [{"metadata": {}}, None]})
    service.take_back(api, "gpu-abcde")
    assert api.calls == [("DELETE", f"{PODS}/gpu-abcde-holder"), ("DELETE", f"{CLAIMS}/gpu-abcde"),
                         ("GET", f"{CLAIMS}/gpu-abcde"), ("GET", f"{CLAIMS}/gpu-abcde")]


def test_reserve_without_a_gpu_holds_nothing_and_says_so(monkeypatch, capsys):
    from can_has_gpu import cli

    api = FakeApi({("GET", "/apis/resource.k8s.io/v1/deviceclasses/gpu.example.com"): [{"metadata": {}}],
                   ("POST", CLAIMS): [{"metadata": {"name": "gpu-abcde"}}],
                   ("POST", PODS): [{"metadata": {}}],
                   ("GET", f"{CLAIMS}/gpu-abcde"): [{"metadata": {"name": "gpu-abcde"}}, None]}, lists=LAB)
    monkeypatch.setattr(service.Api, "connect", lambda *_args, **_kwargs: api)
    assert cli.main(["reserve", "--wait", "0s"]) == 3
    assert capsys.readouterr().out == ("No GPU for you right now: no GPU was allocated within 0s.\n"
                                       "Nothing is held for you: reserve again when a GPU is free (can-has-gpu "
                                       "status shows the free GPUs).\n")
    assert ("DELETE", f"{PODS}/gpu-abcde-holder") in api.calls and ("DELETE", f"{CLAIMS}/gpu-abcde") in api.calls


def test_reserve_refuses_a_request_that_never_fits_before_it_makes_anything(monkeypatch, capsys):
    from can_has_gpu import cli

    api = FakeApi({("GET", "/apis/resource.k8s.io/v1/deviceclasses/gpu.example.com"): [GPU_CLASS]}, lists=LAB)
    monkeypatch.setattr(service.Api, "connect", lambda *_args, **_kwargs: api)
    assert cli.main(["reserve", "--memory", "100Gi"]) == 5
    assert capsys.readouterr().out == (
        "This request never fits the lab as asked: no GPU has memory >= 100Gi (the largest has 80Gi). Change the "
        "request: ask for no more than the devices offer. (The lab's occupancy board is not published, so other "
        "seats' GPUs are not counted: tell the instructor that dralab-lease-reaper is not running.)\n"
        "With can-has-gpu: reserve --memory 80Gi or less (or without --memory).\n"
        "Nothing was made for you; waiting would not help.\n")
    assert not [call for call in api.calls if call[0] in ("POST", "DELETE")], "nothing is made for it"
    assert cli.main(["reserve", "--memory", "100Gi", "-o", "json"]) == 5
    result = json.loads(capsys.readouterr().out)
    assert (result["allocated"], result["verdict"], result["action"], result["claim"]) == \
        (False, "never_fits", "change", None)
    # The same request with what the lab has goes on to make its claim.
    asked = request(memory="80Gi")
    view, answer, sentence = service.request_answer(api, load_settings(), asked)
    assert service.never_fits(api, view, asked, answer, sentence) is None


def test_reserve_without_a_gpu_now_says_why_and_what_the_scheduler_said(monkeypatch, capsys):
    from can_has_gpu import cli

    said = "0/1 nodes are available: 1 cannot allocate all claims."
    unschedulable = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "message": said}]}}
    api = FakeApi({("GET", "/apis/resource.k8s.io/v1/deviceclasses/gpu.example.com"): [GPU_CLASS],
                   ("POST", CLAIMS): [{"metadata": {"name": "gpu-abcde"}}], ("POST", PODS): [{"metadata": {}}],
                   ("GET", f"{CLAIMS}/gpu-abcde"): [{"metadata": {"name": "gpu-abcde"}}, None],
                   ("GET", f"{PODS}/gpu-abcde-holder"): [unschedulable]}, lists=LAB)
    answer = {"allocatable": False, "verdict": "waits", "headline": "waits for a device in use", "action": "wait",
              "sentence": "2 GPUs match; all are in use: ... Wait until one of them is released: ..."}
    monkeypatch.setattr(service, "why_waiting", lambda *_args: (answer, answer["sentence"]))
    monkeypatch.setattr(service.Api, "connect", lambda *_args, **_kwargs: api)
    assert cli.main(["reserve"]) == 3
    assert capsys.readouterr().out == (
        f"No GPU for you right now: {answer['sentence']}\nscheduler said: {said}\n"
        "Nothing is held for you: reserve again when a GPU is free (can-has-gpu status shows the free GPUs).\n")


def test_a_claim_whose_every_match_the_instructor_tainted_is_blocked_as_dra_health_says():
    from can_has_gpu import lab  # pylint: disable=import-outside-toplevel
    rule = {"metadata": {"name": "maintenance"}, "spec": {
        "deviceSelector": {"driver": "gpu.example.com"},
        "taint": {"key": "dralab.workshop/maintenance", "value": "all", "effect": "NoSchedule"}}}
    wanted = {"metadata": {"name": "gpu", "namespace": "user01", "uid": "u1"},
              "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    lists = dict(LAB, **{CLAIMS: [wanted], "/apis/resource.k8s.io/v1alpha3/devicetaintrules": [rule]})
    view = lab.seat_view(FakeApi(lists=lists), load_settings())
    answer = lab.explain(view, wanted, service.now_utc())
    assert (answer["verdict"], answer["reason"]) == ("blocked", "all_matching_tainted"), answer["sentence"]
    assert "(DeviceTaintRule maintenance)" in answer["sentence"]
    # Not served (the feature off) or not readable: the claim is explained without rules.
    lists.pop("/apis/resource.k8s.io/v1alpha3/devicetaintrules")
    refused = NoTaintRules(lists=lists)
    assert lab.explain(lab.seat_view(refused, load_settings()), wanted, service.now_utc())["verdict"] == "fits_now"
