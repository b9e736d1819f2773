"""The GPU waitlist against the real control plane: the real can-has-gpu from its wheel as the seats (each with only
its own kubeconfig), the real lease reaper as the keeper (its own ServiceAccount), the real scheduler.

30 seats, 24 GPUs: 24 seats hold a GPU, 6 more run `can-has-gpu reserve` one after the other and wait in line.
Asserted: each waiting seat is in line (a gated holder pod, no claim) at the position of its arrival, with an
estimate from the holders' lease ends; a seat that presses Ctrl-C leaves the line; as GPUs come free (releases and
a lease end) the waiting seats get them in arrival order, none twice; a place whose seat never takes its turn is
dropped and its GPU goes to the next; a seat cannot remove its own waitlist gate (it would jump the line).
The transcript of two seats in line is kept in the test output.
"""

from __future__ import annotations

import datetime
import json
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from ansible_collections.dralab.workshop.plugins.module_utils.seat import waitlist
from ansible_collections.dralab.workshop.plugins.module_utils.values import WAITLIST_GATE, format_time
from can_has_gpu_runner import Reaper, Result, Tool, seat_tool
from k8s_helpers import allocated, api_from_kubeconfig, expect_api_error, resource_api, wait_for
from playbook import seat_names
from test_can_has_gpu import SETTINGS

GPUS = 24
HOLDERS = seat_names(GPUS)  # user01..user24 hold every GPU
WAITERS = ["user%02d" % n for n in range(25, 31)]  # user25..user30 wait, in this order
SEATS_USED = HOLDERS + WAITERS + ["user31"]
TURN = 15  # seconds a seat has to take its turn (the reaper's --turn)


class Waiting:
    """A `can-has-gpu reserve` running in the background, as a participant's terminal."""

    def __init__(self, tool: Tool, seat: str, *args: str):
        self.seat, self.argv = seat, ["can-has-gpu", "reserve", *args]
        self.proc = subprocess.Popen([str(tool.bin("can-has-gpu")), "reserve", *args], env=tool.env(tool.home(seat)),
                                     cwd=tool.home(seat), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def result(self, timeout: float = 240) -> Result:
        out, err = self.proc.communicate(timeout=timeout)
        return Result(self.argv, self.proc.returncode, out, err, self.seat)


@pytest.fixture(scope="module")
def tool(control_plane, workshop, tmp_path_factory):
    with seat_tool(control_plane.api_client, workshop, tmp_path_factory.mktemp("waitlist"), SEATS_USED, SETTINGS,
                   "waitlist-transcript.txt") as made:
        yield made


@pytest.fixture(scope="module")
def keeper(tool, workshop):
    proc = Reaper(tool, workshop.artifacts / "dralab-lease-reaper.kubeconfig", "--interval", "1s", "--turn",
                  f"{TURN}s")
    yield proc
    assert proc.stop() == 0, proc.text()


def places(api, seat):
    return [p for p in client.CoreV1Api(api).list_namespaced_pod(seat).items
            if any(g.name == WAITLIST_GATE for g in p.spec.scheduling_gates or [])]


def line(api, seat="user31"):
    cm = client.CoreV1Api(api).read_namespaced_config_map("dralab-gpu-occupancy", seat)
    return json.loads(cm.data["claims.json"]).get("line") or []


def holder_of(api, seat):
    claims = [c for c in resource_api(api).list_namespaced_resource_claim(seat).items if allocated(c)]
    return allocated(claims[0])[0] if claims else None


@pytest.fixture(scope="module")
def full_lab(control_plane, tool, keeper):
    """user01..user24 hold the 24 GPUs (user24's lease ends first: 2m); the six waiters join the line in order."""
    api = control_plane.api_client
    with ThreadPoolExecutor(max_workers=12) as pool:
        held = list(pool.map(lambda s: tool.run(s, "reserve", "--for", "2m" if s == "user24" else "1h",
                                                "-o", "json"), HOLDERS))
    assert all(r.rc == 0 for r in held), [r.describe() for r in held if r.rc]
    wait_for("the occupancy to list 24 allocated claims",
             lambda: len(json.loads(client.CoreV1Api(api).read_namespaced_config_map(
                 "dralab-gpu-occupancy", "user31").data["claims.json"])["claims"]) == GPUS, timeout=60)
    waiting = {}
    for seat in WAITERS:
        waiting[seat] = Waiting(tool, seat, "-o", "json")
        wait_for(f"{seat} to take its place in line", lambda s=seat: places(api, s), timeout=60)
        time.sleep(1.1)  # creation times one second apart: the order of arrival is unambiguous
    yield waiting
    for proc in waiting.values():
        if proc.proc.poll() is None:
            proc.proc.kill()


def test_each_waiting_seat_is_in_line_at_its_arrival_with_no_claim(control_plane, workshop, tool, full_lab):
    api = control_plane.api_client
    wait_for("the keeper to publish the six places",
             lambda: [r["seat"] for r in line(api)] == WAITERS, timeout=30)
    rows = line(api)
    assert [r["position"] for r in rows] == [1, 2, 3, 4, 5, 6]
    # The first in line waits for the first lease end: user24's two-minute lease.
    assert rows[0]["estimate_seat"] == "user24", rows
    for seat in WAITERS:
        assert not resource_api(api).list_namespaced_resource_claim(seat).items, f"{seat} holds a claim in line"
    status = tool.show(tool.run("user26", "status"))
    assert status.rc == 0 and "In line for gpu-" in status.stdout and "You are 2nd in line for" in status.stdout, \
        status.describe()
    why = tool.show(tool.run("user25", "why"))
    assert why.rc == 3 and "You are next in line for" in why.stdout and "user24's lease ends" in why.stdout, \
        why.describe()
    # The instructor's dra_health names the same line, and finds the keeper running.
    health = workshop.health()
    assert [(r["seat"], r["position"]) for r in health["waitlist"]] == [(s, n) for n, s in enumerate(WAITERS, 1)]
    assert health["summary"]["waiting"] == len(WAITERS)
    assert "GPU waitlist: 6 seats in line" in health["report_lines"]
    assert not [p for p in health["problems"] if p["type"] == waitlist.NOT_KEPT], health["problems"]


def test_a_seat_cannot_remove_its_own_waitlist_gate(control_plane, workshop, full_lab):
    api = control_plane.api_client
    pod = places(api, "user30")[0]
    seat_api = api_from_kubeconfig(workshop.seat_kubeconfig("user30"))
    try:
        patch = [{"op": "replace", "path": "/spec/schedulingGates", "value": []}]
        refused = expect_api_error(403, client.CoreV1Api(seat_api).patch_namespaced_pod, pod.metadata.name,
                                   "user30", patch)
        assert "the waitlist gate is removed by the lab when your turn comes" in refused.body, refused.body
    finally:
        seat_api.close()
    assert places(api, "user30"), "the seat removed its own waitlist gate"


def test_ctrl_c_leaves_the_line(control_plane, full_lab):
    api = control_plane.api_client
    leaving = full_lab["user27"]
    leaving.proc.send_signal(signal.SIGINT)
    result = leaving.result(timeout=60)
    assert result.rc == 130, result.describe()
    wait_for("user27's place to be gone", lambda: not places(api, "user27"), timeout=30)
    wait_for("the line without user27", lambda: [r["seat"] for r in line(api)] == [
        "user25", "user26", "user28", "user29", "user30"], timeout=30)


def test_freed_gpus_go_to_the_waiting_seats_in_arrival_order(control_plane, tool, full_lab):
    api = control_plane.api_client
    given = []
    for releaser, waiter in (("user01", "user25"), ("user02", "user26")):
        device = holder_of(api, releaser)
        freed_at = time.monotonic()
        assert tool.run(releaser, "release").rc == 0
        result = full_lab[waiter].result(timeout=120)
        assert result.rc == 0, result.describe()
        answer = result.json()
        assert answer["allocated"] and answer["claim"], answer
        got = (answer["devices"][0]["pool"], answer["devices"][0]["device"])
        assert got == device, (releaser, device, waiter, got)
        given.append((waiter, time.monotonic() - freed_at))
        tool.transcripts.append(f"# {waiter} waited in line; {releaser} released {got[1]}:\n" + result.transcript())
        # Nobody behind got a GPU out of turn.
        for later in ("user28", "user29", "user30"):
            assert places(api, later), f"{later} left the line out of turn"
    # The lease end of user24 (two minutes) hands its GPU to the next in line, user28.
    device = holder_of(api, "user24")
    result = full_lab["user28"].result(timeout=180)
    assert result.rc == 0, result.describe()
    assert (result.json()["devices"][0]["pool"], result.json()["devices"][0]["device"]) == device
    devices = [holder_of(api, s) for s in seat_names(30)]
    held = [d for d in devices if d]
    assert len(held) == len(set(held)) == GPUS, "a GPU is held by two seats"
    print(f"\n[waitlist] release -> next seat holds the GPU: {', '.join(f'{s} {t:.1f}s' for s, t in given)}")


def test_a_missed_turn_passes_the_gpu_to_the_next(control_plane, tool, full_lab):
    """user29's place, made by hand as can-has-gpu makes it, whose seat never makes its claim: dropped after the
    turn, and the GPU goes to user30."""
    api = control_plane.api_client
    full_lab["user29"].proc.kill()  # a killed session: no Ctrl-C, its place stays
    full_lab["user29"].proc.wait()
    # Keep renewing user29's place, as a can-has-gpu stuck after its turn would not: only the turn can drop it.
    pod = places(api, "user29")[0]
    core = client.CoreV1Api(api)
    core.patch_namespaced_pod(pod.metadata.name, "user29", {"metadata": {"annotations": {
        waitlist.RENEWED_ANNOTATION: format_time(datetime.datetime.now(datetime.timezone.utc)
                                                 + datetime.timedelta(minutes=10))}}})
    device = holder_of(api, "user03")
    assert tool.run("user03", "release").rc == 0
    wait_for("user29's place to be dropped after its turn", lambda: not places(api, "user29")
             and not core.list_namespaced_pod("user29").items, timeout=TURN + 30)
    result = full_lab["user30"].result(timeout=120)
    assert result.rc == 0, result.describe()
    assert (result.json()["devices"][0]["pool"], result.json()["devices"][0]["device"]) == device
    assert not resource_api(api).list_namespaced_resource_claim("user29").items
