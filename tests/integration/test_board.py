"""The instructor's GPU board against the real control plane: playbooks/board.yml makes its read-only
identity, token and seat cards; the real `dralab-board` (installed from the wheel) runs with that
identity's kubeconfig, and stream clients read its server-sent events as browsers do.

- a claim made by a seat (with the seat's own kubeconfig) is in the stream within 2 s; a deleted one is
  gone within 2 s; an allocated one shows its seat on its device's tile;
- 100 concurrent stream clients all get the update, and the API server's own metrics
  (apiserver_longrunning_requests, verb WATCH) count exactly one watch per kind more with the board (two of Events, one per field selector),
  whether 0 or 100 browsers are connected;
- the instructor's routes refuse a missing or wrong token (401); no stream or page of the projector's
  view holds a seat's token, the board's token or a person's name; the instructor's shows the names;
- playbooks/health.yml writes the same page as a 0600 snapshot.

Figures (latencies, watch counts) are printed. The module leaves the lab as it found it: the seats it
used are cleared, the board's process is stopped and its objects in the cluster removed.
"""

from __future__ import annotations

import asyncio
import collections
import json
import re
import socket
import statistics
import stat
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import pytest
import yaml
from kubernetes import client

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import DEFAULT_DRIVER
from can_has_gpu_runner import Service, Tool
from tools.dralab_board.watch import KINDS as BOARD_KINDS
from k8s_helpers import (api_from_kubeconfig, claim_body, clear_namespaces, expect_api_error, pod_body,
                         remove_board_identity, resource_api, wait_for)

SEATS = ["user66", "user67", "user68"]  # no other module uses them
PEOPLE = {"user66": "Ada Lovelace", "user67": "Grace Hopper"}
BOARD = "dralab-board"
NAMESPACE = "dralab-system"
GPUS = 24
CLIENTS = 100
LATENCY = 2.0  # seconds from the API change to the browsers


def group_resource(path: str) -> tuple[str, str]:
    """('resource.k8s.io', 'resourceclaims') of /apis/resource.k8s.io/v1/resourceclaims; ('', 'pods') of /api/v1/pods."""
    parts = path.strip("/").split("/")
    return ("", parts[-1]) if parts[0] == "api" else (parts[1], parts[-1])


# The board's watches per (group, resource): one per kind it reads, two of Events (FailedScheduling and
# FailedResourceClaimCreation, each its own field selector).
WATCHES = collections.Counter(group_resource(path) for _kind, path, _query in BOARD_KINDS)
WATCHED = set(WATCHES)
LONGRUNNING = re.compile(r'^apiserver_longrunning_requests\{([^}]*)\} (\S+)$', re.M)
LABEL = re.compile(r'(\w+)="([^"]*)"')


def metrics_text(api) -> str:
    request = api.param_serialize("GET", "/metrics", header_params={"Accept": "text/plain"},
                                  auth_settings=["BearerToken"])
    return api.call_api(*request).read().decode()


def watch_counts(api, samples: int = 7, pause: float = 0.3) -> dict:
    """Open WATCH requests per (group, resource), the most frequent value of a few samples (another
    component re-opening its watch for a moment does not count)."""
    seen = collections.defaultdict(list)
    for index in range(samples):
        counts = collections.Counter()
        for labels, value in LONGRUNNING.findall(metrics_text(api)):
            fields = dict(LABEL.findall(labels))
            if fields.get("verb") == "WATCH":
                counts[(fields.get("group", ""), fields["resource"])] += int(float(value))
        for key in WATCHED:
            seen[key].append(counts.get(key, 0))
        if index + 1 < samples:
            time.sleep(pause)
    return {key: statistics.mode(values) for key, values in seen.items()}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str, headers: dict | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class BoardProcess(Service):
    def __init__(self, tool: Tool, kubeconfig: Path, token: str, people: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        super().__init__(tool, "dralab-board", kubeconfig, "--listen", f"127.0.0.1:{self.port}", "--people",
                         str(people), "--debounce", "250ms", "--driver", DEFAULT_DRIVER, "--devices-per-node",
                         str(lab_settings.default("dralab_devices_per_node")), "--lease-max",
                         lab_settings.default("dralab_lease_max"),
                         # All streams of this test come from 127.0.0.1: the per-client cap (20 by default, tested in
                         # tests/unit/tools/test_board_streams.py and the lab) is raised to the test's crowd.
                         "--streams-per-client", str(CLIENTS), env={"DRALAB_BOARD_TOKEN": token})

    def health(self) -> dict | None:
        """The board's /healthz once it is ready (None before, or while it does not listen yet)."""
        try:
            status, body = get(self.url + "/healthz")
        except OSError:
            assert self.proc.poll() is None, f"dralab-board exited with {self.proc.returncode}:\n{self.text()}"
            return None
        return json.loads(body) if status == 200 else None


class Stream:
    """One browser's EventSource: every `model` event as (monotonic time received, board)."""

    def __init__(self, session: aiohttp.ClientSession, url: str):
        self.session, self.url = session, url
        self.boards: list[tuple[float, dict]] = []
        self.raw: list[str] = []
        self.task = asyncio.ensure_future(self.run())

    async def run(self):
        async with self.session.get(self.url, timeout=aiohttp.ClientTimeout(total=None)) as response:
            assert response.status == 200, response.status
            buffer = b""
            async for chunk in response.content.iter_any():
                buffer += chunk
                while b"\n\n" in buffer:
                    message, buffer = buffer.split(b"\n\n", 1)
                    lines = message.decode().split("\n")
                    data = "\n".join(line[5:].lstrip() for line in lines if line.startswith("data:"))
                    if "event: model" in lines and data:
                        self.raw.append(data)
                        self.boards.append((time.monotonic(), json.loads(data)))

    def first(self, check, since: float = 0.0) -> float | None:
        """When the first board received after `since` for which check(board) holds came in, or None."""
        return next((at for at, board in self.boards if at >= since and check(board)), None)

    async def close(self):
        self.task.cancel()
        try:
            await self.task
        except (asyncio.CancelledError, aiohttp.ClientError):
            pass


async def until(streams, check, since: float, timeout: float, what: str) -> list[float]:
    deadline = time.monotonic() + timeout
    while True:
        times = [s.first(check, since) for s in streams]
        if all(t is not None for t in times):
            return times
        for stream in streams:
            if stream.task.done() and stream.task.exception():
                raise stream.task.exception()
        if time.monotonic() > deadline:
            got = sum(t is not None for t in times)
            pytest.fail(f"timed out after {timeout}s waiting for {what} ({got}/{len(streams)} streams had it)")
        await asyncio.sleep(0.02)


def mentions(claim: str):
    def check(board):
        pending = any(p["claim"] == claim for p in board["pending"])
        held = any(h["claim"] == claim for n in board["nodes"] for t in n["devices"] for h in t["holders"])
        return pending or held
    return check


def absent(claim: str):
    present = mentions(claim)
    return lambda board: not present(board)


def tile_of(seat: str, claim: str):
    def check(board):
        return next(((t["node"], t["device"]) for n in board["nodes"] for t in n["devices"]
                     if any(h["claim"] == claim and h["seat"] == seat for h in t["holders"])), None)
    return check


@pytest.fixture(scope="module")
def board_lab(control_plane, workshop):
    """board.yml converged: the board's identity, token, address file and seat cards."""
    api = control_plane.api_client
    clear_namespaces(api, SEATS)
    run = workshop.converge("playbooks/board.yml")
    yield workshop, run
    clear_namespaces(api, SEATS)
    remove_board_identity(api, BOARD, NAMESPACE)


def test_board_yml_check_makes_no_token_where_there_is_none(board_lab):
    """--check on a lab without the instructor's token says it would make one and writes nothing on the
    controller (before the fix, the password lookup created the token file in check mode)."""
    lab, _run = board_lab
    token = lab.artifacts / "board" / "instructor"
    kept = token.read_bytes()
    token.unlink()
    try:
        before = {str(p): None if p.is_dir() else p.read_bytes() for p in sorted(lab.artifacts.rglob("*"))}
        run = lab.run("playbooks/board.yml", check=True)
        assert run.rc == 0 and run.failed == 0, run.describe()
        assert not token.exists(), "board.yml --check wrote the instructor's token"
        assert {str(p): None if p.is_dir() else p.read_bytes() for p in sorted(lab.artifacts.rglob("*"))} == before
        assert run.changed > 0, "check mode must say that the token (and the service's copy) would change"
    finally:
        token.write_bytes(kept)
        token.chmod(0o600)


@pytest.fixture(scope="module")
def board(control_plane, board_lab, tmp_path_factory):
    """The real dralab-board with the board's kubeconfig; the API's watch counts before it started."""
    lab, _run = board_lab
    workdir = tmp_path_factory.mktemp("board")
    tool = Tool(workdir, lab, {})
    people = workdir / "people.json"
    people.write_text(json.dumps(PEOPLE))
    token = (lab.artifacts / "board" / "instructor").read_text().strip()
    before = watch_counts(control_plane.api_client)
    proc = BoardProcess(tool, lab.artifacts / f"{BOARD}.kubeconfig", token, people)
    try:
        started = time.monotonic()
        health = wait_for("the board to list and watch every kind", proc.health, timeout=90, interval=0.2)
        print(f"\n[board] ready after {time.monotonic() - started:.1f}s: {health}", file=sys.stderr)
        proc.before, proc.token = before, token
        yield proc
    finally:
        code = proc.stop()
        print(f"\n[board] log:\n{proc.text()[-3000:]}", file=sys.stderr)
        assert code == 0, proc.text()


def test_board_yml_makes_a_read_only_identity_a_token_and_the_cards(control_plane, board_lab):
    lab, run = board_lab
    artifacts = lab.artifacts
    for path in (artifacts / f"{BOARD}.kubeconfig", artifacts / "board" / "instructor",
                 artifacts / "board" / "board.json", artifacts / "seat-cards.html"):
        assert path.is_file(), f"board.yml did not write {path}"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    token = (artifacts / "board" / "instructor").read_text().strip()
    assert re.fullmatch(r"[A-Za-z0-9]{32}", token)
    assert token not in run.output, "the token must not be in the playbook's output"
    info = json.loads((artifacts / "board" / "board.json").read_text())
    assert info["token_file"] == str(artifacts / "board" / "instructor")
    assert info["url"] == "" and info["host"] == "", "this inventory has no control-plane host to run the board"
    cards = (artifacts / "seat-cards.html").read_text()
    assert cards.count('class="card"') == lab.seats and 'data-seat="user72"' in cards

    reader = api_from_kubeconfig(artifacts / f"{BOARD}.kubeconfig")
    try:
        assert len(resource_api(reader).list_resource_slice().items) == 3
        client.CoreV1Api(reader).list_pod_for_all_namespaces(limit=1)
        expect_api_error(403, client.CoreV1Api(reader).read_namespaced_secret, "dralab-seat-token", "user01")
        expect_api_error(403, client.CoreV1Api(reader).create_namespaced_config_map, "user01",
                         {"metadata": {"name": "board-was-here"}})
        expect_api_error(403, resource_api(reader).delete_collection_namespaced_resource_claim, "user01")
    finally:
        reader.close()
    rules = client.RbacAuthorizationV1Api(control_plane.api_client).read_cluster_role(f"{BOARD}-read").rules
    assert {verb for rule in rules for verb in rule.verbs} == {"get", "list", "watch"}


def test_a_seats_claim_is_on_the_board_within_2s_and_gone_within_2s(control_plane, workshop, board):
    seat = SEATS[0]
    seat_api = api_from_kubeconfig(workshop.seat_kubeconfig(seat))
    admin = resource_api(control_plane.api_client)

    async def scenario():
        async with aiohttp.ClientSession() as session:
            stream = Stream(session, board.url + "/events")
            await until([stream], lambda b: len([t for n in b["nodes"] for t in n["devices"]]) == GPUS, 0, 30,
                        "a first board with 24 tiles")
            started = time.monotonic()
            await asyncio.to_thread(resource_api(seat_api).create_namespaced_resource_claim, seat,
                                    claim_body("board-probe"))
            [seen] = await until([stream], mentions("board-probe"), started, 10, "the new claim")
            created = seen - started
            row = next(p for p in stream.boards[-1][1]["pending"] if p["claim"] == "board-probe")
            assert row["seat"] == seat and row["sentence"], row

            started = time.monotonic()
            await asyncio.to_thread(resource_api(seat_api).delete_namespaced_resource_claim, "board-probe", seat)
            [gone] = await until([stream], absent("board-probe"), started, 10, "the deleted claim to go")
            deleted = gone - started

            # Allocated: a pod of the seat uses a claim; its tile names the seat once the scheduler allocates.
            await asyncio.to_thread(resource_api(seat_api).create_namespaced_resource_claim, seat,
                                    claim_body("board-held"))
            await asyncio.to_thread(client.CoreV1Api(seat_api).create_namespaced_pod, seat,
                                    pod_body("board-held-pod", claim="board-held"))
            allocated_at = None
            deadline = time.monotonic() + 90
            while allocated_at is None and time.monotonic() < deadline:
                claim = await asyncio.to_thread(admin.read_namespaced_resource_claim, "board-held", seat)
                if claim.status and claim.status.allocation:
                    allocated_at = time.monotonic()
                else:
                    await asyncio.sleep(0.05)
            assert allocated_at is not None, "the scheduler did not allocate board-held"
            [shown] = await until([stream], tile_of(seat, "board-held"), allocated_at - 0.1, 10,
                                  "the seat on its tile")
            tile = tile_of(seat, "board-held")(stream.boards[-1][1])
            await stream.close()
            return created, deleted, shown - allocated_at, tile

    try:
        created, deleted, allocated, tile = asyncio.run(scenario())
    finally:
        seat_api.close()
    print(f"\n[board] claim created -> in the stream {created:.2f}s; deleted -> gone {deleted:.2f}s; "
          f"allocated -> {seat} on tile {tile} {allocated:.2f}s", file=sys.stderr)
    assert created <= LATENCY and deleted <= LATENCY and allocated <= LATENCY
    clear_namespaces(control_plane.api_client, [seat])


def test_100_streams_get_every_update_and_the_api_sees_one_watch_per_kind(control_plane, workshop, board):
    api = control_plane.api_client
    seat = SEATS[1]
    alone = watch_counts(api)
    seat_api = api_from_kubeconfig(workshop.seat_kubeconfig(seat))

    async def scenario():
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            streams = [Stream(session, board.url + "/events") for dummy in range(CLIENTS)]
            await until(streams, lambda b: True, 0, 60, "a first board on every stream")
            health = board.health()
            crowded = await asyncio.to_thread(watch_counts, api)
            started = time.monotonic()
            await asyncio.to_thread(resource_api(seat_api).create_namespaced_resource_claim, seat,
                                    claim_body("board-crowd"))
            times = await until(streams, mentions("board-crowd"), started, 20, "the claim on every stream")
            for stream in streams:
                await stream.close()
            return health, crowded, [t - started for t in times]

    try:
        health, crowded, latencies = asyncio.run(scenario())
    finally:
        seat_api.close()
    rows = sorted(WATCHED)
    print("\n[board] open WATCH requests at the API server (before the board / board, 0 streams / "
          f"board, {CLIENTS} streams):", file=sys.stderr)
    for key in rows:
        print(f"  {key[0] or 'core'}/{key[1]}: {board.before[key]} / {alone[key]} / {crowded[key]}", file=sys.stderr)
    print(f"[board] {CLIENTS} streams ({health['clients']} connected): the claim reached all in "
          f"max {max(latencies):.2f}s, median {statistics.median(latencies):.2f}s", file=sys.stderr)
    assert health["clients"] >= CLIENTS
    assert {key: alone[key] - board.before[key] for key in rows} == dict(WATCHES)
    assert {key: crowded[key] - board.before[key] for key in rows} == dict(WATCHES)
    assert max(latencies) <= LATENCY
    assert all(kind["watches"] >= 1 for kind in health["kinds"].values())
    clear_namespaces(api, [seat])


def test_the_instructors_view_needs_the_token_and_the_projectors_shows_no_secret(control_plane, workshop, board):
    for path in ("/instructor", "/instructor/events", "/instructor/board.json"):
        assert get(board.url + path)[0] == 401, path
        assert get(board.url + path + "?token=" + "x" * 32)[0] == 401, path
        assert get(board.url + path, {"Authorization": "Bearer " + "y" * 32})[0] == 401, path
    status, page = get(board.url + "/instructor?token=" + board.token)
    assert status == 200 and "Ada Lovelace" in page and '"view":"instructor"' in page
    status, body = get(board.url + "/instructor/board.json", {"Authorization": "Bearer " + board.token})
    instructor = json.loads(body)
    assert status == 200 and {s["seat"]: s.get("person") for s in instructor["seats"]}["user67"] == "Grace Hopper"

    secrets = {board.token}
    for path in list((workshop.artifacts / "seats").glob("*.kubeconfig")) + [
            workshop.artifacts / f"{BOARD}.kubeconfig", workshop.artifacts / "dralab-lease-reaper.kubeconfig"]:
        config = yaml.safe_load(path.read_text())
        secrets.update(u["user"]["token"] for u in config["users"] if u["user"].get("token"))
    passwords = workshop.artifacts / "passwords"
    if passwords.is_dir():
        secrets.update(p.read_text().split()[0] for p in passwords.iterdir() if p.read_text().strip())
    assert len(secrets) > len(SEATS), "the seats' tokens were not found"

    async def one_message():
        async with aiohttp.ClientSession() as session:
            stream = Stream(session, board.url + "/events")
            await until([stream], lambda b: True, 0, 30, "a board")
            await stream.close()
            return stream.raw[0]

    shown = {"page": get(board.url + "/")[1], "board.json": get(board.url + "/board.json")[1],
             "stream": asyncio.run(one_message())}
    for where, text in shown.items():
        assert '"view":"public"' in text, where
        leaked = [s[:6] + "..." for s in secrets if s in text]
        assert not leaked, f"the projector's {where} holds a secret: {leaked}"
        assert "Ada Lovelace" not in text and "Grace Hopper" not in text, where
    assert board.token not in get(board.url + "/instructor?token=" + board.token)[1]
    assert len(json.loads(shown["board.json"])["seats"]) == workshop.seats


def test_health_yml_writes_the_board_as_a_0600_snapshot(workshop, board):
    run = workshop.converge("playbooks/health.yml")
    snapshot = workshop.artifacts / "board-snapshot.html"
    assert snapshot.is_file() and stat.S_IMODE(snapshot.stat().st_mode) == 0o600, run.describe()
    text = snapshot.read_text()
    embedded = json.loads(re.search(r'<script id="dralab-board" type="application/json">(.*?)</script>', text,
                                    re.S).group(1))
    assert len([t for n in embedded["nodes"] for t in n["devices"]]) == GPUS
    assert "EventSource" in text and '{"stream":""}' in text, "the snapshot must not open a stream"
    assert not re.search(r'(src|href)\s*=', text)
    again = workshop.converge("playbooks/health.yml", check=True)
    assert again.changed == 0, again.changed_tasks()
