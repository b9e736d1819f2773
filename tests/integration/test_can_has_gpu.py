"""can-has-gpu as the seats use it, against the real control plane: the real CLI from its wheel, each
seat with only its own kubeconfig in ~/.kube/config, the lease reaper with its own ServiceAccount.

- the five commands as one seat (the transcript is printed and saved next to the test logs);
- refusals: the seat's quota, an unknown class, a lease over the maximum;
- a second seat can neither see nor release the first seat's claim;
- the rush: 72 seats run `reserve --no-wait` at once: exactly 24 get a GPU, the 48 others a sentence naming
  who holds them, and nothing stays held for them;
- lease expiry: the reaper process releases an expired lease (pods, then the claim, logged with
  seat, claim and device) and the next `reserve` gets that GPU;
- the reaper never touches a namespace that is not a seat's (its code skips it; its RBAC forbids it).
"""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from kubernetes import client

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import DEFAULT_DRIVER
from can_has_gpu_runner import Reaper, seat_tool
from k8s_helpers import (allocated, api_from_kubeconfig, claim_body, clear_namespaces, delete_namespace,
                         expect_api_error, pod_body, resource_api, wait_for)
from playbook import SEATS, seat_names

SEATS_ALL = seat_names(SEATS)
GPUS = 24
REAPER = "dralab-lease-reaper"
# Every field, as role participant_tool writes them (can-has-gpu has no defaults of its own).
SETTINGS = {"lease_default": "2h", "lease_max": "8h", "wait": "120s", "holder_image": "busybox:1.37",
            "default_class": lab_settings.default("dralab_device_classes")[0]["name"], "driver": DEFAULT_DRIVER}
SEAT_IN_SENTENCE = re.compile(r"\buser\d{2}\b")


@pytest.fixture(scope="module")
def tool(control_plane, workshop, tmp_path_factory):
    with seat_tool(control_plane.api_client, workshop, tmp_path_factory.mktemp("can-has-gpu"), SEATS_ALL, SETTINGS,
                   "can-has-gpu-transcript.txt") as made:
        yield made


@pytest.fixture(scope="module")
def reaper_kubeconfig(workshop) -> Path:
    path = workshop.artifacts / f"{REAPER}.kubeconfig"
    assert path.is_file(), f"users.yml (participant_tool) did not write {path}"
    return path


@pytest.fixture(scope="module")
def reaper(tool, reaper_kubeconfig):
    proc = Reaper(tool, reaper_kubeconfig, "--interval", "1s")
    yield proc
    assert proc.stop() == 0, proc.text()


def seat_claims(api, seat):
    return resource_api(api).list_namespaced_resource_claim(seat).items


def wait_occupancy(api, seat, allocated_count):
    """Until the reaper's occupancy ConfigMap in the seat's namespace lists this many allocated claims."""

    def check():
        cm = client.CoreV1Api(api).read_namespaced_config_map("dralab-gpu-occupancy", seat)
        return len(json.loads(cm.data["claims.json"])["claims"]) == allocated_count
    wait_for(f"the occupancy in {seat} to list {allocated_count} allocated claim(s)", check, timeout=60)


def test_the_five_commands(control_plane, tool, reaper):
    api = control_plane.api_client
    wait_occupancy(api, "user01", 0)
    big = tool.show(tool.run("user01", "reserve", "--memory", "100Gi"))
    assert big.rc == 5, big.describe()  # never fits as asked: refused at once
    assert "100Gi" in big.stdout and "80Gi" in big.stdout, big.describe()
    assert "never fits" in big.stdout and "--memory 80Gi or less" in big.stdout, big.describe()
    assert not seat_claims(api, "user01"), "a refused reserve must not leave its claim behind"

    got = tool.show(tool.run("user01", "reserve", "--for", "1h"))
    assert got.rc == 0, got.describe()
    match = re.search(r"^Reserved (gpu-\w+): (gpu-\d+) on (\S+) \(80Gi\), lease until", got.stdout, re.MULTILINE)
    assert match, got.describe()
    name, device, node = match.groups()
    [claim] = seat_claims(api, "user01")
    assert claim.metadata.name == name and allocated(claim) == [(node, device)]

    status = tool.show(tool.run("user01", "status"))
    assert status.rc == 0, status.describe()
    row = next(line for line in status.stdout.splitlines() if line.startswith(name))
    assert row.split()[1:5] == ["in", "use", device, node], status.describe()
    assert row.split()[6] in ("59m", "1h"), status.describe()  # LEASE LEFT of a 1h lease
    wait_occupancy(api, "user01", 1)
    status = tool.run("user01", "status", "-o", "json").json()
    assert status["free"]["free"] == GPUS - 1 and status["free"]["published"] == GPUS
    assert [c["name"] for c in status["claims"]] == [name]
    assert 0 < status["claims"][0]["lease_left_seconds"] <= 3600

    why = tool.show(tool.run("user01", "why"))
    assert why.rc == 0 and f"{name} has its GPU: {device} on {node}" in why.stdout, why.describe()

    release = tool.show(tool.run("user01", "release"))
    assert release.rc == 0 and f"Released {name} ({device}); deleted pod(s) {name}-holder." in release.stdout, \
        release.describe()
    assert not seat_claims(api, "user01")
    assert not client.CoreV1Api(api).list_namespaced_pod("user01").items


def test_refusals_are_sentences(control_plane, tool, reaper):
    api = control_plane.api_client
    first = tool.run("user05", "reserve")
    assert first.rc == 0, first.describe()
    second = tool.show(tool.run("user05", "reserve"))
    assert second.rc == 1, second.describe()
    # Refused by the seat's claim-count policy, or by the quota when the policy's view of the quota lags.
    assert ("Your seat may hold 1 GPU(s) and already holds 1: release one first" in second.stderr
            or "Your seat may hold 1 GPU(s) of class gpu.example.com and already uses 1: release one first"
            in second.stderr), second.describe()
    assert len(seat_claims(api, "user05")) == 1, "the refused claim must not exist"
    unknown = tool.show(tool.run("user05", "reserve", "--class", "tpu.example.com"))
    assert unknown.rc == 1 and "There is no GPU class tpu.example.com: choose one of" in unknown.stderr
    too_long = tool.show(tool.run("user05", "reserve", "--for", "9h"))
    assert too_long.rc == 1 and "the longest lease is 8h" in too_long.stderr
    for result in (second, unknown, too_long):
        assert "Traceback" not in result.stderr + result.stdout
    assert tool.run("user05", "release", "--all").rc == 0
    assert not seat_claims(api, "user05")


def test_a_second_seat_cannot_see_or_release_the_first_seats_claim(control_plane, tool, reaper, workshop):
    api = control_plane.api_client
    mine = tool.run("user01", "reserve", "-o", "json")
    assert mine.rc == 0, mine.describe()
    name = mine.json()["claim"]
    theirs = tool.run("user02", "status", "-o", "json").json()
    assert theirs["namespace"] == "user02" and theirs["claims"] == []
    release = tool.show(tool.run("user02", "release", name))
    assert release.rc == 1 and f"You have no claim {name}" in release.stderr, release.describe()
    why = tool.run("user02", "why", name)
    assert why.rc == 1 and f"You have no claim {name}" in why.stderr
    # The same attack without the tool, with user02's own credentials: refused by the API.
    user02 = api_from_kubeconfig(workshop.seat_kubeconfig("user02"))
    try:
        expect_api_error(403, resource_api(user02).read_namespaced_resource_claim, name, "user01")
        expect_api_error(403, resource_api(user02).delete_namespaced_resource_claim, name, "user01")
        expect_api_error(403, client.CoreV1Api(user02).delete_namespaced_pod, f"{name}-holder", "user01")
    finally:
        user02.close()
    [claim] = seat_claims(api, "user01")
    assert claim.metadata.name == name and allocated(claim) and not claim.metadata.deletion_timestamp
    assert tool.run("user01", "release", name).rc == 0


def test_the_rush(control_plane, tool, reaper):
    """72 seats run `can-has-gpu reserve` at once (36 at a time): 24 GPUs, 24 winners, 48 sentences."""
    api = control_plane.api_client
    clear_namespaces(api, SEATS_ALL)
    wait_occupancy(api, "user72", 0)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=36) as pool:
        results = dict(zip(SEATS_ALL, pool.map(lambda s: tool.run(s, "reserve", "--no-wait", "-o", "json", timeout=400),
                                               SEATS_ALL)))
    seconds = time.monotonic() - started
    winners = {s: r.json() for s, r in results.items() if r.rc == 0}
    losers = {s: r.json() for s, r in results.items() if r.rc == 3}
    odd = {s: r.describe() for s, r in results.items() if r.rc not in (0, 3)}
    assert not odd, odd
    assert len(winners) == GPUS and len(losers) == SEATS - GPUS, (len(winners), len(losers))
    devices = [(d["node"], d["device"]) for w in winners.values() for d in w["devices"]]
    assert len(set(devices)) == GPUS, "a GPU went to two seats"
    for seat, answer in losers.items():
        assert answer["allocated"] is False
        named = set(SEAT_IN_SENTENCE.findall(answer["sentence"]))
        assert named and named <= set(winners), f"{seat}: {answer['sentence']}"
        assert not seat_claims(api, seat), f"{seat} keeps a claim after a refused reserve"
    example = next(iter(losers))
    tool.transcripts.append(f"# the rush: 72 seats in {seconds:.0f}s; one of the 48 without a GPU:\n"
                            + tool.run(example, "reserve", "--no-wait").transcript())
    print(f"\n[rush] 72 x can-has-gpu reserve in {seconds:.1f}s; e.g. {example}: {losers[example]['sentence']}")
    clear_namespaces(api, SEATS_ALL)


def test_an_expired_lease_is_released_by_the_reaper_and_the_next_reserve_gets_the_gpu(control_plane, tool, reaper):
    api = control_plane.api_client
    clear_namespaces(api, SEATS_ALL)
    others = SEATS_ALL[2:GPUS + 1]  # 23 seats hold 23 GPUs for the default lease
    with ThreadPoolExecutor(max_workers=12) as pool:
        held = list(pool.map(lambda s: tool.run(s, "reserve"), others))
    assert all(r.rc == 0 for r in held), [r.describe() for r in held if r.rc]
    short = tool.run("user01", "reserve", "--for", "1m", "-o", "json")
    assert short.rc == 0, short.describe()
    name, device = short.json()["claim"], short.json()["devices"][0]
    wait_occupancy(api, "user02", GPUS)
    waiting = tool.show(tool.run("user02", "reserve", "--no-wait", "--wait", "20s"))
    assert waiting.rc == 3, waiting.describe()

    wait_for(f"the reaper to release {name}", lambda: not seat_claims(api, "user01"), timeout=120)
    line = f"releasing seat=user01 claim={name} devices={device['device']} pods={name}-holder: lease ended"
    assert line in reaper.text(), reaper.text()
    assert not client.CoreV1Api(api).list_namespaced_pod("user01").items

    wait_occupancy(api, "user02", GPUS - 1)
    next_one = tool.show(tool.run("user02", "reserve", "-o", "json"))
    assert next_one.rc == 0, next_one.describe()
    assert [(d["node"], d["device"]) for d in next_one.json()["devices"]] == [(device["node"], device["device"])]
    clear_namespaces(api, SEATS_ALL)


def test_the_reaper_never_touches_a_namespace_that_is_not_a_seat(control_plane, tool, reaper, reaper_kubeconfig):
    api = control_plane.api_client
    core, res = client.CoreV1Api(api), resource_api(api)
    ns = "not-a-seat"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        wait_for(f"ServiceAccount {ns}/default", lambda: core.read_namespaced_service_account("default", ns))
        expired = {"dralab.workshop/lease-expires": "2020-01-01T00:00:00Z"}
        foreign = claim_body("old-gpu")
        foreign["metadata"]["annotations"] = expired
        res.create_namespaced_resource_claim(ns, foreign)
        core.create_namespaced_pod(ns, pod_body("old-pod", claim="old-gpu"))
        wait_for("the foreign claim to be allocated", lambda: allocated(res.read_namespaced_resource_claim("old-gpu", ns)))
        # A seat claim with the same expired lease, made after: once it is gone, the reaper has passed.
        seat_claim = claim_body("old-gpu")
        seat_claim["metadata"]["annotations"] = expired
        res.create_namespaced_resource_claim("user03", seat_claim)
        wait_for("the reaper to release user03/old-gpu", lambda: not seat_claims(api, "user03"), timeout=60)
        time.sleep(2)  # and one more pass
        claim = res.read_namespaced_resource_claim("old-gpu", ns)
        assert allocated(claim) and not claim.metadata.deletion_timestamp
        assert core.read_namespaced_pod("old-pod", ns).metadata.deletion_timestamp is None
        assert not core.list_namespaced_config_map(ns, field_selector="metadata.name=dralab-gpu-occupancy").items
        released = [line for line in reaper.text().splitlines() if "claim=old-gpu" in line]
        assert released and all("seat=user03 " in line for line in released), reaper.text()
        # Its identity could not have done it anyway: RBAC grants writes in seat namespaces only.
        reaper_api = api_from_kubeconfig(reaper_kubeconfig)
        try:
            expect_api_error(403, resource_api(reaper_api).delete_namespaced_resource_claim, "old-gpu", ns)
            expect_api_error(403, client.CoreV1Api(reaper_api).delete_namespaced_pod, "old-pod", ns)
            expect_api_error(403, client.CoreV1Api(reaper_api).create_namespaced_config_map, ns,
                             {"metadata": {"name": "dralab-gpu-occupancy"}})
            expect_api_error(403, client.CoreV1Api(reaper_api).delete_namespace, ns)
            expect_api_error(403, client.CoreV1Api(reaper_api).read_namespaced_secret, "dralab-seat-token", "user01")
        finally:
            reaper_api.close()
    finally:
        delete_namespace(api, ns)
