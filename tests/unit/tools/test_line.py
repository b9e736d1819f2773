"""A seat's side of the GPU waitlist on a fake API: the place is a gated holder pod with the request, the wait is a
watch of that pod renewed every RENEW_SECONDS (no request per second), the turn makes the claim, every way out
without a turn gives the place up; and the keeper's side: a turn removes only the waitlist gate."""

from __future__ import annotations

import copy
import datetime

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.seat import waitlist
from ansible_collections.dralab.workshop.plugins.module_utils.values import WAITLIST_GATE
from can_has_gpu import keeper, line, objects, service
from can_has_gpu.settings import load_settings
from test_service import CLAIMS, PODS, FakeApi, Quiet, request

NOW = datetime.datetime(2026, 10, 28, 10, 0, tzinfo=datetime.timezone.utc)
OCCUPANCY = "/api/v1/namespaces/user01/configmaps/dralab-gpu-occupancy"


class Watching(FakeApi):
    """A FakeApi whose client serves watches: scripted lists of events, one list per watch."""

    def __init__(self, watches, answers=None, lists=None):
        super().__init__(answers, lists=lists)
        self.watches = list(watches)
        self.client = self
        self.watched = []

    def watch(self, path, version, query=None, timeout_seconds=None):
        self.watched.append((path, version, query, timeout_seconds))
        return iter(self.watches.pop(0) if self.watches else [])


def gated_pod(name="gpu-abcde-holder", gates=True, version="7"):
    return {"metadata": {"name": name, "resourceVersion": version},
            "spec": {"schedulingGates": [{"name": WAITLIST_GATE}] if gates else []}}


def test_a_place_is_a_gated_holder_pod_with_the_request():
    asked = {"deviceClassName": "gpu.example.com", "count": 1, "selectors": []}
    pod = line.place_pod("gpu-abcde", "busybox:1.37", asked, NOW)
    assert pod["metadata"]["name"] == "gpu-abcde-holder"
    assert pod["spec"]["schedulingGates"] == [{"name": WAITLIST_GATE}]
    assert pod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimName": "gpu-abcde"}]
    # The keeper reads the request back as can-has-gpu wrote it.
    assert waitlist.waited_request(pod) == {"deviceClassName": "gpu.example.com", "count": 1, "selectors": [],
                                            "capacity": {}}
    assert pod["metadata"]["annotations"][waitlist.RENEWED_ANNOTATION] == "2026-10-28T10:00:00Z"


@pytest.mark.parametrize("row, words", [
    ({"position": 5, "device_class": "gpu.example.com", "estimate": "2026-10-28T10:12:00Z",
      "estimate_seat": "user17"}, "You are 5th in line for gpu.example.com; about 12m, when user17's lease ends."),
    ({"position": 1, "device_class": "gpu.example.com", "estimate": None},
     "You are next in line for gpu.example.com; no lease ends soon enough to say when."),
    ({"position": 22, "device_class": "gpu.example.com", "estimate": None},
     "You are 22nd in line for gpu.example.com; no lease ends soon enough to say when."),
    (None, "You are in line; your position is published within seconds."),
])
def test_the_position_in_words(row, words):
    assert line.position_text(row, NOW) == words


def test_the_wait_is_one_watch_per_renewal_and_ends_with_the_turn():
    api = Watching([[{"type": "MODIFIED", "object": gated_pod(version="8")}],
                    [{"type": "MODIFIED", "object": gated_pod(gates=False, version="9")}]],
                   answers={("GET", f"{PODS}/gpu-abcde-holder"): [gated_pod(version="8")]})
    turn = line.wait_turn(api, gated_pod(), "dralab-gpu-occupancy", None, Quiet())
    assert turn.outcome == "turn"
    # Per renewal window: the position (occupancy), one watch, a check and the renewal; nothing per second.
    assert api.calls == [("GET", OCCUPANCY), ("GET", f"{PODS}/gpu-abcde-holder"), ("PATCH", f"{PODS}/gpu-abcde-holder"),
                         ("GET", OCCUPANCY)]
    assert [(w[1], w[2], w[3]) for w in api.watched] == [
        ("7", {"fieldSelector": "metadata.name=gpu-abcde-holder"}, waitlist.RENEW_SECONDS),
        ("8", {"fieldSelector": "metadata.name=gpu-abcde-holder"}, waitlist.RENEW_SECONDS)]


def test_a_deleted_place_ends_the_wait():
    api = Watching([[{"type": "DELETED", "object": gated_pod()}]])
    assert line.wait_turn(api, gated_pod(), "dralab-gpu-occupancy", None, Quiet()).outcome == "dropped"


def test_the_turn_makes_the_claim_with_its_lease_from_now(monkeypatch):
    api = Watching([[{"type": "MODIFIED", "object": gated_pod(gates=False)}]],
                   answers={("POST", PODS): [gated_pod()], ("POST", CLAIMS): [{"metadata": {"name": "gpu-abcde"}}]})
    monkeypatch.setattr(line, "new_claim_name", lambda: "gpu-abcde")
    bodies = []
    original = api.call

    def recording(doing, method, path, body=None, **kwargs):
        bodies.append((method, path, body))
        return original(doing, method, path, body, **kwargs)
    api.call = recording
    joined = line.join_line(api, load_settings(), request(lease="1h"), Quiet())
    assert joined.claim == "gpu-abcde"
    claim = next(b for m, p, b in bodies if (m, p) == ("POST", CLAIMS))
    assert claim["metadata"]["name"] == "gpu-abcde" and "generateName" not in claim["metadata"]
    assert claim["metadata"]["annotations"]["dralab.workshop/lease-for"] == "1h"
    assert ("DELETE", f"{PODS}/gpu-abcde-holder") not in api.calls  # the place became the claim's holder


def test_ctrl_c_while_waiting_gives_the_place_up(monkeypatch):
    api = Watching([], answers={("POST", PODS): [gated_pod()]})
    monkeypatch.setattr(line, "new_claim_name", lambda: "gpu-abcde")

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(line, "wait_turn", interrupted)
    with pytest.raises(KeyboardInterrupt):
        line.join_line(api, load_settings(), request(), Quiet())
    assert api.calls[-1] == ("DELETE", f"{PODS}/gpu-abcde-holder")
    assert ("POST", CLAIMS) not in api.calls


def test_a_wait_that_is_over_leaves_the_line():
    api = Watching([], answers={("POST", PODS): [gated_pod()]})
    joined = line.join_line(api, load_settings(), request(wait="0s"), Quiet())
    assert joined.claim is None and "you left the line" in joined.sentence
    method, path = api.calls[-1]
    assert method == "DELETE" and path.startswith(f"{PODS}/gpu-") and path.endswith("-holder")


def test_a_seat_at_its_quota_gets_no_place():
    view = service.SeatView("user01", [{"metadata": {"name": "gpu-held"}}], [])
    view.quotas = [{"status": {"hard": {"count/resourceclaims.resource.k8s.io": "1"}}}]
    with pytest.raises(service.Refusal) as refused:
        service.check_room(view, request())
    assert refused.value.sentence.startswith("Your seat may hold 1 GPU(s) and already holds 1: release one first")
    view.quotas = [{"status": {"hard": {"count/resourceclaims.resource.k8s.io": "2"}}}]
    asked = {"deviceClassName": "gpu.example.com", "count": 1, "selectors": []}
    view.pods = [line.place_pod("gpu-abcde", "busybox:1.37", asked, NOW)]
    with pytest.raises(service.Refusal) as refused:
        service.check_room(view, request())
    assert "already holds 1 and waits in line for 1: release one first" in refused.value.sentence
    assert "can-has-gpu leave gives up your place in line" in refused.value.sentence


def test_the_keeper_removes_only_the_waitlist_gate():
    api = FakeApi()
    sent = []
    api.call = lambda doing, method, path, body=None, **kwargs: sent.append((method, path, body, kwargs))
    pod = {"metadata": {"name": "gpu-a-holder", "namespace": "user25", "uid": "u1"},
           "spec": {"schedulingGates": [{"name": "example.com/other"}, {"name": WAITLIST_GATE}]}}
    keeper.Keeper(api, 3600).give({"seat": "user25", "namespace": "user25", "pod": "gpu-a-holder",
                                   "device_class": "gpu.example.com", "devices": [("d", "p", "gpu-1")]}, pod)
    method, path, body, kwargs = sent[0]
    assert (method, path, kwargs) == ("PATCH", "/api/v1/namespaces/user25/pods/gpu-a-holder",
                                      {"content_type": keeper.JSON_PATCH})
    assert body == [{"op": "test", "path": "/metadata/uid", "value": "u1"},
                    {"op": "replace", "path": "/spec/schedulingGates", "value": [{"name": "example.com/other"}]}]


def test_the_keeper_reads_nothing_more_while_nobody_waits():
    api = FakeApi()
    assert keeper.Keeper(api, 3600).once({"user01": "user01"}, [], [{"metadata": {"namespace": "user01"},
                                                                     "spec": {}}], []) == []
    assert api.calls == []


@pytest.mark.parametrize("line_rows, reason, in_line, goes", [
    ([], "allocatable", True, True),  # a GPU is free and nobody waits: straight to the scheduler
    ([{"device_class": "gpu.example.com"}], "allocatable", True, False),  # free, but seats wait: behind them
    ([{"device_class": "other.example.com"}], "allocatable", True, True),  # they wait for another class
    ([], "all_matching_in_use", True, False),  # nothing free: in line
    ([], "all_matching_in_use", False, True),  # --no-wait: today's answer
    (None, "all_matching_in_use", True, True),  # no line published (an older reaper): today's answer
])
def test_when_reserve_goes_in_line(line_rows, reason, in_line, goes):
    view = service.SeatView("user01", [], [])
    view.occupancy, view.line = [], line_rows
    assert service.goes_now(view, request(in_line=in_line), {"reason": reason}) is goes


def test_a_seat_at_its_quota_is_refused_before_it_joins(monkeypatch):
    api = FakeApi()
    view = service.SeatView("user01", [{"metadata": {"name": "gpu-held"}}], [])
    view.quotas = [{"status": {"hard": {"count/resourceclaims.resource.k8s.io": "1"}}}]
    with pytest.raises(service.Refusal):
        service.in_line(api, load_settings(), request(), view, Quiet())
    assert api.calls == [], "nothing is made for a refused place"


SHARED_SLICE = {"metadata": {"name": "worker1-gpu.example.com"},
                "spec": {"driver": "gpu.example.com", "nodeName": "worker1",
                         "pool": {"name": "worker1", "generation": 1, "resourceSliceCount": 1},
                         "devices": [{"name": "gpu-0", "allowMultipleAllocations": True,
                                      "capacity": {"memory": {"value": "80Gi"}, "compute": {"value": "100"}}}]}}


def test_a_share_asks_for_its_part_of_the_cards_compute_too():
    from can_has_gpu.objects import claim_body, share_capacity  # pylint: disable=import-outside-toplevel
    assert share_capacity([SHARED_SLICE], "gpu.example.com", "20Gi") == {"memory": "20Gi", "compute": "25"}
    assert share_capacity([SHARED_SLICE], "gpu.example.com", "30Gi") == {"memory": "30Gi", "compute": "38"}
    whole = copy.deepcopy(SHARED_SLICE)
    del whole["spec"]["devices"][0]["allowMultipleAllocations"]
    with pytest.raises(ValueError, match="no GPU of this lab is shared"):
        share_capacity([whole], "gpu.example.com", "20Gi")
    body = claim_body("gpu-shared.example.com", 1, [], "", "", {"memory": "20Gi", "compute": "25"})
    assert body["spec"]["devices"]["requests"][0]["exactly"]["capacity"] == {
        "requests": {"memory": "20Gi", "compute": "25"}}


@pytest.mark.parametrize("options, words", [
    ({"share": "0"}, "--share 0 is not a quantity"),
    ({"share": "lots"}, "--share lots is not a quantity"),
    ({"share": "20Gi", "memory": "40Gi"}, "--share asks for a part of one GPU"),
    ({"share": "20Gi", "count": 2}, "--share asks for a part of one GPU"),
])
def test_a_share_the_lab_cannot_give_is_refused_before_anything(options, words):
    with pytest.raises(service.Refusal) as refused:
        request(**options)
    assert words in refused.value.sentence


def test_a_share_goes_to_the_shared_class_and_its_place_says_so():
    asked = request(share="20Gi")
    assert (asked.device_class, asked.share) == ("gpu-shared.example.com", "20Gi")
    row = {"position": 3, "device_class": "gpu-shared.example.com", "capacity": {"memory": "20Gi"},
           "estimate": None}
    assert line.position_text(row, NOW).startswith("You are 3rd in line for a 20Gi share of gpu-shared.example.com")


def test_a_deleted_claim_wakes_the_keeper_and_nothing_else_does():
    import threading  # pylint: disable=import-outside-toplevel

    class Claims:
        def __init__(self, events):
            self.events = list(events)

        def request(self, method, path, body=None, query=None):
            return {"items": [], "metadata": {"resourceVersion": "5"}}

        def watch(self, path, version, query=None, timeout_seconds=None):
            if not self.events:
                raise keeper.K8sError("stop", status=500)
            return iter([self.events.pop(0)])

    wake = threading.Event()
    api = FakeApi()
    api.client = Claims([{"type": "MODIFIED", "object": {"metadata": {"resourceVersion": "6"}}}])
    waker = keeper.ClaimWake(api, wake)
    waker.start()
    assert not wake.wait(0.5)
    api.client.events.append({"type": "DELETED", "object": {"metadata": {"resourceVersion": "7"}}})
    assert wake.wait(10)


def test_a_whole_card_on_a_lab_of_shareable_gpus_is_no_share():
    whole = {"consumedCapacity": {"memory": "80Gi", "compute": "100"}}
    assert objects.share_of(whole, "80Gi") is None
    part = {"consumedCapacity": {"memory": "20Gi", "compute": "25"}}
    assert objects.share_of(part, "80Gi") == {"memory": "20Gi", "compute": "25"}
    assert objects.share_of({"device": "gpu-0"}, "80Gi") is None
