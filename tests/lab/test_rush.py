"""The seed's rush on the lab: 72 seats, 24 GPUs. users.yml grows the lab to 72 seats; then every seat logs in
over SSH with its password on its own login host (paramiko, a bounded pool of threads; the seats' hosts are half
cp1 and half login1) and
asks for a GPU the way the README tells participants (`can-has-gpu reserve --no-wait`: no waitlist). Asserted: 72/72 logins, exactly
24 GPUs reserved and none twice, the other 48 told why they have none (exit 3, one sentence), the lab healthy
afterwards, and reset.yml frees every GPU. Printed (not asserted): the time to the first and to the 24th GPU,
the logins' times and the API server's p95 latency for a plain GET during the rush.

Marker `faults` (make test-reliability, not molecule's verifier): the lab keeps its 72 seats afterwards.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import KUBECONFIG, LOGIN_HOSTS, REPO, credentials, login, run_playbook, wait_for

SEATS = 72
GPUS = 24
THREADS = 36
NO_GPU_EXIT = 3


def seat_names() -> list[str]:
    return [f"user{i:02d}" for i in range(1, SEATS + 1)]


def api_latency_probe(stop: threading.Event, samples: list[float]):
    """GET /api/v1/namespaces/default as the instructor every 0.2 s until stop is set."""
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(str(KUBECONFIG)))
    while not stop.is_set():
        began = time.monotonic()
        api.read_namespace("default")
        samples.append(time.monotonic() - began)
        stop.wait(0.2)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 20 else max(values)


@pytest.fixture(scope="module")
def seventy_two_seats():
    began = time.monotonic()
    proc = run_playbook(REPO / "playbooks" / "users.yml", "-e", f"dralab_seats={SEATS}", timeout=3600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    print(f"\n[rush] users.yml with {SEATS} seats: {time.monotonic() - began:.1f}s", file=sys.stderr)
    sheet = credentials()
    assert sorted(sheet) == seat_names()
    return sheet


@pytest.fixture(scope="module")
def rush(seventy_two_seats):
    samples: list[float] = []
    stop = threading.Event()
    probe = threading.Thread(target=api_latency_probe, args=(stop, samples), daemon=True)
    probe.start()
    start = time.monotonic()

    # Each seat logs in on its own login host (the sheet's, as its card says): half on each.
    per_host = [sum(1 for row in seventy_two_seats.values() if row["login_host"] == host) for host in LOGIN_HOSTS]
    assert per_host == [SEATS // len(LOGIN_HOSTS)] * len(LOGIN_HOSTS), per_host

    def one_seat(index_seat):
        dummy, seat = index_seat
        host = seventy_two_seats[seat]["login_host"]
        began = time.monotonic()
        # A participant's ssh waits as long as it takes: 2 minutes each for the banner and the password.
        session = login(seat, seventy_two_seats[seat]["password"], host=host, patience=120)
        logged_in = time.monotonic() - began
        try:
            rc, out, err = session.run("can-has-gpu reserve --no-wait --for 1h", timeout=300)
        finally:
            session.close()
        return {"seat": seat, "host": host, "login": logged_in, "rc": rc, "out": out, "err": err,
                "done": time.monotonic() - start}

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        futures = [pool.submit(one_seat, item) for item in enumerate(seat_names())]
    stop.set()
    probe.join(timeout=10)
    results, failures = [], {}
    for future in futures:
        try:
            results.append(future.result())
        except Exception as exc:  # noqa: BLE001  (a refused login is a result of the rush)
            failures[len(results) + len(failures)] = repr(exc)
    for index, message in list(failures.items())[:3]:
        print(f"\n[rush] seat #{index + 1} failed: {message[:300]}", file=sys.stderr)
    got = sorted(r["done"] for r in results if r["rc"] == 0)
    print(f"\n[rush] logins {len(results)}/{SEATS} (threads {THREADS}); login time median "
          f"{statistics.median(r['login'] for r in results) if results else 0:.2f}s, max "
          f"{max((r['login'] for r in results), default=0):.2f}s; first GPU after "
          f"{got[0] if got else float('nan'):.1f}s, GPU {len(got)} after {got[-1] if got else float('nan'):.1f}s; "
          f"rush over after {time.monotonic() - start:.1f}s; API GET p95 {p95(samples) * 1000:.0f} ms "
          f"({len(samples)} samples, max {max(samples) * 1000:.0f} ms)", file=sys.stderr)
    yield results, failures
    proc = run_playbook(REPO / "playbooks" / "reset.yml", "-e", f"dralab_seats={SEATS}", timeout=3600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.mark.faults
def test_every_seat_logs_in(rush):
    results, failures = rush
    assert not failures, f"{len(failures)} seat(s) could not log in or run can-has-gpu: {failures}"
    assert len(results) == SEATS


@pytest.mark.faults
def test_24_seats_get_a_gpu_and_48_are_told_why_not(rush, custom):
    results = rush[0]
    reserved = [r for r in results if r["rc"] == 0]
    refused = [r for r in results if r["rc"] != 0]
    assert len(reserved) == GPUS, [(r["seat"], r["rc"], r["out"][-200:], r["err"][-200:]) for r in refused][:5]
    assert len(refused) == SEATS - GPUS, f"{len(refused)} seats refused, not {SEATS - GPUS}"
    for r in reserved:
        assert r["out"].startswith("Reserved gpu-"), r
    reasons = set()
    for r in refused:
        assert r["rc"] == NO_GPU_EXIT, r
        text = r["out"] + r["err"]
        assert "No GPU for you right now: " in text, r
        reason = text.split("No GPU for you right now: ", 1)[1].split("\n", 1)[0]
        assert len(reason) > 20, r
        reasons.add(reason.split(":", 1)[0])
    print(f"\n[rush] the 48 were told: {sorted(reasons)[:3]}", file=sys.stderr)
    claims = custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceclaims")["items"]
    devices = [(d["pool"], d["device"]) for c in claims if c["metadata"]["namespace"] in seat_names()
               for d in (c.get("status", {}).get("allocation") or {}).get("devices", {}).get("results", [])]
    assert len(devices) == len(set(devices)) == GPUS, "a GPU is held twice, or not every GPU is held"


@pytest.mark.faults
def test_the_lab_is_healthy_during_the_rush(rush, health_now):
    report = health_now()
    assert report["healthy"], report["report_lines"]
    assert report["summary"]["devices_allocated"] == GPUS and report["summary"]["devices_free"] == 0
    # can-has-gpu takes back the claim of a seat that got no GPU: nothing waits.
    assert report["summary"]["claims_pending"] == 0


@pytest.mark.faults
def test_reset_frees_every_gpu_after_the_rush(rush, health_now):
    proc = run_playbook(REPO / "playbooks" / "reset.yml", "-e", f"dralab_seats={SEATS}", timeout=3600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    report = wait_for("every GPU free after reset.yml", lambda: (r := health_now())["summary"]["devices_free"] == GPUS
                      and r, timeout=120)
    assert report["healthy"] and report["summary"]["claims_total"] == 0, report["report_lines"]


@pytest.fixture
def health_now(tmp_path):
    import json

    from conftest import HEALTH_PLAYBOOK

    def read():
        out = tmp_path / "health.json"
        options = {"health_json_path": str(out), "health_options": {"fail_on_unhealthy": False}}
        proc = run_playbook(HEALTH_PLAYBOOK, "-e", json.dumps(options))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return json.loads(out.read_text())
    return read
