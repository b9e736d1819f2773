"""make bench's waitlist rows: what 48 seats waiting for a GPU cost the API, in line vs today's retry loop.

On the harness's control plane with the 72 seats of users.yml and the real lease reaper (the waitlist's keeper,
its own ServiceAccount, the role's default interval): 24 seats hold the 24 GPUs, then for WINDOW seconds each
  baseline  48 seats retry `can-has-gpu reserve --no-wait --wait 0s` in a loop (what a seat told "try again
            later" does: every try makes a claim and a pod and takes them back);
  waitlist  48 seats wait in line with `can-has-gpu reserve`;
the API server's requests per second (apiserver_request_total from its /metrics, every client counted, minus
the rate of an idle window measured first) and the claims made. Then a holder releases its GPU, RELEASES times:
the seconds from the release until the first seat in line holds the GPU (its reserve has returned).
"""

from __future__ import annotations

import concurrent.futures
import statistics
import subprocess
import threading
import time

from kubernetes import client

from can_has_gpu_runner import Reaper, Tool
from k8s_helpers import resource_api, wait_for
from playbook import seat_names

from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import DEFAULT_DRIVER
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import KubeClient
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.etcd import metric_samples
from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.values import WAITLIST_GATE

WINDOW = 60  # seconds each way of waiting is measured
IDLE = 20  # seconds of the idle window
RELEASES = 3
GPUS = 24
SETTINGS = {"lease_default": "2h", "lease_max": "8h", "wait": "120s", "holder_image": "busybox:1.37",
            "default_class": lab_settings.default("dralab_device_classes")[0]["name"], "driver": DEFAULT_DRIVER}


def metrics(api) -> str:
    return KubeClient(api).text("/metrics")


def requests_total(api) -> float:
    text = metrics(api)
    return sum(value for name, _labels, value in metric_samples(text, ("apiserver_request_total",))
               if name == "apiserver_request_total")


def rate(api, seconds: float) -> float:
    before, started = requests_total(api), time.monotonic()
    time.sleep(seconds)
    return (requests_total(api) - before) / (time.monotonic() - started)


def claims_made(api) -> int:
    """ResourceClaims created so far in the cluster (the API server's count of claim POSTs)."""
    text = metrics(api)
    return int(sum(value for name, labels, value in metric_samples(text, ("apiserver_request_total",))
                   if name == "apiserver_request_total" and 'resource="resourceclaims"' in labels
                   and 'verb="POST"' in labels and 'subresource=""' in labels))


def in_line(api, seats) -> int:
    core = client.CoreV1Api(api)
    pods = core.list_pod_for_all_namespaces(field_selector="status.phase=Pending").items
    return sum(1 for p in pods if p.metadata.namespace in seats
               and any(g.name == WAITLIST_GATE for g in p.spec.scheduling_gates or []))


def retry_loops(tool: Tool, seats: list[str], stop: threading.Event) -> list[threading.Thread]:
    def loop(seat):
        while not stop.is_set():
            tool.run(seat, "reserve", "--no-wait", "--wait", "0s", timeout=120)
    threads = [threading.Thread(target=loop, args=(s,), daemon=True) for s in seats]
    for thread in threads:
        thread.start()
    return threads


def bench_waitlist(table, lab, api, work) -> None:
    seats = seat_names(72)
    holders, waiters = seats[:GPUS], seats[GPUS:]
    tool = Tool(work / "waitlist", lab, SETTINGS)
    keeper = Reaper(tool, lab.artifacts / "dralab-lease-reaper.kubeconfig")  # the role's default interval
    procs = []
    try:
        held = [r.rc for r in _parallel(lambda s: tool.run(s, "reserve", "--for", "1h"), holders)]
        assert held == [0] * GPUS, held
        wait_for("the occupancy to count 24 GPUs", lambda: _occupied(api) == GPUS, timeout=60)
        idle = rate(api, IDLE)
        stop = threading.Event()
        threads = retry_loops(tool, waiters, stop)
        time.sleep(5)  # every loop running
        made = claims_made(api)
        retry = rate(api, WINDOW)
        retry_claims = claims_made(api) - made
        stop.set()
        for thread in threads:
            thread.join(timeout=180)
        for seat in waiters:
            procs.append(subprocess.Popen([str(tool.bin("can-has-gpu")), "reserve", "-o", "json"],
                                          env=tool.env(tool.home(seat)), cwd=tool.home(seat),
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
            time.sleep(0.2)
        wait_for("48 seats in line", lambda: in_line(api, set(waiters)) == len(waiters), timeout=180)
        time.sleep(5)
        made = claims_made(api)
        waiting = rate(api, WINDOW)
        waiting_claims = claims_made(api) - made
        handovers = []
        for number in range(RELEASES):
            first = procs[number]
            released = time.monotonic()
            assert tool.run(holders[number], "release").rc == 0
            first.communicate(timeout=120)
            assert first.returncode == 0, first.returncode
            handovers.append(time.monotonic() - released)
        extra_idle = max(idle, 0.0)
        table.add("48 seats waiting for a GPU, API requests/s (waitlist)", f"{waiting - extra_idle:.1f} req/s",
                  f"retry loop {retry - extra_idle:.1f} req/s", f"{(waiting - extra_idle) / max(retry - extra_idle, 0.1):.2f}x",
                  "no request per second per seat")
        table.add("claims made while 48 seats wait 60 s (waitlist)", str(waiting_claims),
                  f"retry loop {retry_claims}", "", "none per retry")
        table.add("release -> the next seat in line holds the GPU", f"{statistics.median(handovers):.1f} s median",
                  "", "", f"{RELEASES} releases: {', '.join(f'{s:.1f}' for s in handovers)} s")
        table.note(f"waitlist: idle API {idle:.1f} req/s subtracted (controllers, nodes, the reaper's own passes); "
                   f"the reaper at the role's default interval (participant_tool_reaper_interval)")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        keeper.stop()


def _occupied(api) -> int:
    return sum(1 for c in resource_api(api).list_resource_claim_for_all_namespaces().items
               if c.status and c.status.allocation)


def _parallel(fn, items):
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        return list(pool.map(fn, items))
