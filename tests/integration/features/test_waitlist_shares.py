"""GPU shares through the waitlist on 1.35.4 with DRAConsumableCapacity (this session's consumable_capacity: every GPU
shareable, class gpu-shared.example.com): the real can-has-gpu as the seats, the real lease reaper as the keeper.

The instructor fills 23 cards and half of the 24th. user01 and user02 each get a 20Gi share of that card at once
(`reserve --share 20Gi`); the card is then full, so user03 and user01 (its second share) wait in line, in this
order. When user02 releases its share, user03 gets one, on that card, and user01 keeps waiting; when the
instructor frees the rest of the card, user01 gets its second share. No card is ever given more memory than it
has."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from kubernetes import client

from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import SHARED_CLASS
from ansible_collections.dralab.workshop.plugins.module_utils.values import WAITLIST_GATE, parse_quantity
from diagnosis_seen import instructor_holding, seat_tools
from k8s_helpers import claim_body, resource_api, wait_for

INSTRUCTOR = "dralab-share-line"


def share(name: str, memory: str, count: int = 1) -> dict:
    body = claim_body(name, device_class=SHARED_CLASS["name"])
    body["spec"]["devices"]["requests"][0]["exactly"].update(
        count=count, capacity={"requests": {"memory": memory, "compute": "100" if memory == "80Gi" else "50"}})
    return body


def in_line(api, seat):
    return [p for p in client.CoreV1Api(api).list_namespaced_pod(seat).items
            if any(g.name == WAITLIST_GATE for g in p.spec.scheduling_gates or [])]


def consumed_per_card(api) -> dict:
    used = {}
    for claim in resource_api(api).list_resource_claim_for_all_namespaces().items:
        if not (claim.status and claim.status.allocation):
            continue
        for result in claim.status.allocation.devices.results or []:
            memory = (result.consumed_capacity or {}).get("memory", "80Gi")
            key = (result.pool, result.device)
            used[key] = used.get(key, 0) + parse_quantity(memory)
    return used


@pytest.fixture(scope="module")
def full_but_one_card(control_plane, workshop, tmp_path_factory):
    admin = control_plane.api_client
    nodes = control_plane.nodes
    cards = [share(f"cards-{n}", "80Gi", count=8) for n in range(len(nodes) - 1)]
    cards += [share("cards-last", "80Gi", count=7), share("half-card", "40Gi")]
    with seat_tools(control_plane, workshop, tmp_path_factory, "waitlist-shares", ["user01", "user02", "user03"]) \
            as tool, instructor_holding(admin, INSTRUCTOR, cards) as names:
        yield tool, names


def test_shares_wait_in_line_and_get_the_room_of_a_card_in_order(control_plane, full_but_one_card):
    admin = control_plane.api_client
    tool, _names = full_but_one_card
    wait_for("the occupancy in user03", lambda: client.CoreV1Api(admin).read_namespaced_config_map(
        "dralab-gpu-occupancy", "user03"), timeout=60)
    time.sleep(3)  # the reaper's next pass (1 s) has counted the instructor's shares
    first = [tool.show(tool.run(seat, "reserve", "--share", "20Gi", "-o", "json")) for seat in ("user01", "user02")]
    assert [r.rc for r in first] == [0, 0], [r.describe() for r in first]
    card = {(r.json()["devices"][0]["pool"], r.json()["devices"][0]["device"]) for r in first}
    assert len(card) == 1, card  # both on the half-free card
    waiting = {}
    for seat in ("user03", "user01"):
        waiting[seat] = subprocess.Popen([str(tool.bin("can-has-gpu")), "reserve", "--share", "20Gi", "-o", "json"],
                                         env=tool.env(tool.home(seat)), cwd=tool.home(seat), stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
        wait_for(f"{seat} in line", lambda s=seat: in_line(admin, s), timeout=60)
        time.sleep(1.1)
    try:
        status = tool.show(tool.run("user03", "status"))
        assert "You are next in line for a 20Gi share of gpu-shared.example.com" in status.stdout, status.describe()
        assert tool.run("user02", "release").rc == 0
        out, err = waiting["user03"].communicate(timeout=120)
        assert waiting["user03"].returncode == 0, out + err
        got = json.loads(out)["devices"][0]
        assert (got["pool"], got["device"]) in card and got["share"]["memory"] == "20Gi", got
        assert in_line(admin, "user01"), "user01 left the line before its turn"
        assert all(used <= parse_quantity("80Gi") for used in consumed_per_card(admin).values())
        resource_api(admin).delete_namespaced_resource_claim("half-card", INSTRUCTOR)
        client.CoreV1Api(admin).delete_namespaced_pod("half-card", INSTRUCTOR, grace_period_seconds=0)
        out, err = waiting["user01"].communicate(timeout=120)
        assert waiting["user01"].returncode == 0, out + err
        assert all(used <= parse_quantity("80Gi") for used in consumed_per_card(admin).values())
    finally:
        for proc in waiting.values():
            if proc.poll() is None:
                proc.kill()
