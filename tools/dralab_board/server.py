"""dralab-board: serve the GPU board of the DRA lab, live, to any number of browsers.

Routes (GET):
  /                     the projector's page (no names of people, no credentials)
  /events               its server-sent events: `event: model` with the board as JSON, on every change
  /board.json           the projector's board once
  /instructor           the instructor's page (names of people when --people is given)
  /instructor/events    its events
  /instructor/board.json
  /healthz              200 once every kind is listed and watched (503 before), with counts
The projector's streams are capped per client address (--streams-per-client) and in total (--streams-max): a
stream over either cap is refused at once (429, Retry-After), so one client holding a thousand streams cannot
take the file descriptors and memory the pages and the other browsers need. The instructor's streams (token)
count only against --streams-max-instructor.
The instructor's routes need the token (query ?token=TOKEN or the header
Authorization: Bearer TOKEN); a missing or wrong one gets 401. The token comes
from the environment variable named by --token-env (the role's 0600 env file).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hmac
import json
import logging
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from aiohttp import web

from ansible_collections.dralab.workshop.plugins.module_utils.board import build as board_build
from ansible_collections.dralab.workshop.plugins.module_utils.board import state as board_model
from ansible_collections.dralab.workshop.plugins.module_utils.board import page as board_page
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_time
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration
from ansible_collections.dralab.workshop.plugins.module_utils.values import host_port_problem

from . import __version__
from .watch import KINDS, LOG, Cache, Watcher

TOKEN_ENV = "DRALAB_BOARD_TOKEN"
KEEPALIVE = 15.0  # seconds between two comments on a quiet stream (proxies and browsers keep it open)
REFRESH = 30.0  # seconds between two rebuilds without a change (ages, stale claims)
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                    "X-Frame-Options": "DENY", "Cache-Control": "no-store"}
UTC = datetime.timezone.utc


class Broadcast:
    """The latest board of each view, and a version that every stream waits to move on."""

    def __init__(self):
        self.version = 0
        self.payloads: dict[str, bytes] = {}
        self.boards: dict[str, dict] = {}
        self.changed = asyncio.Condition()
        self.clients = 0

    async def publish(self, boards: dict[str, dict]) -> None:
        payloads = {view: json.dumps(board, sort_keys=True, separators=(",", ":")).encode() for view, board
                    in boards.items()}
        async with self.changed:
            self.boards, self.payloads = boards, payloads
            self.version += 1
            self.changed.notify_all()

    async def newer(self, seen: int, timeout: float) -> bool:
        """Wait until a board newer than `seen` is out (True), or timeout seconds (False)."""
        async with self.changed:
            try:
                await asyncio.wait_for(self.changed.wait_for(lambda: self.version > seen), timeout)
            except asyncio.TimeoutError:
                return False
            return True


class StreamSlots:
    """Open streams per client address and in total; a stream takes a slot or is refused."""

    def __init__(self, per_client: int, total: int):
        self.per_client = per_client
        self.total = total
        self.by_client: dict[str, int] = {}
        self.open = 0

    def take(self, client: str) -> str:
        """"" when the stream may open (the slot is taken), else why not."""
        if self.open >= self.total:
            return f"the board serves {self.total} streams already"
        if self.by_client.get(client, 0) >= self.per_client:
            return f"{client} holds {self.per_client} streams already"
        self.open += 1
        self.by_client[client] = self.by_client.get(client, 0) + 1
        return ""

    def give_back(self, client: str) -> None:
        self.open -= 1
        left = self.by_client[client] - 1
        if left:
            self.by_client[client] = left
        else:
            del self.by_client[client]


class Board:
    def __init__(self, args, token: str, people: dict):
        self.args = args
        self.token = token
        self.people = people
        self.broadcast = Broadcast()
        self.slots = {board_model.PUBLIC: StreamSlots(args.streams_per_client, args.streams_max),
                      board_model.INSTRUCTOR: StreamSlots(args.streams_max_instructor, args.streams_max_instructor)}
        self.refused = 0
        self.cache = Cache(self.changed)
        self.watchers: list[Watcher] = []
        self.pending: asyncio.TimerHandle | None = None
        self.building = False
        self.again = False
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="build")
        self.loop: asyncio.AbstractEventLoop | None = None
        self.builds = 0
        self.last_build_seconds = 0.0

    # -- watches and builds
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        for kind, path, query in KINDS:
            watcher = Watcher(self.args.kubeconfig, kind, path, query, loop, self.cache)
            self.watchers.append(watcher)
            watcher.start()
        loop.call_later(REFRESH, self.refresh)

    def changed(self) -> None:
        """A watch reported a change: build again after the debounce (changes in between join it)."""
        if self.pending is None and self.cache.ready():
            self.pending = self.loop.call_later(self.args.debounce, self.build_soon)

    def refresh(self) -> None:
        self.changed()
        self.loop.call_later(REFRESH, self.refresh)

    def build_soon(self) -> None:
        self.pending = None
        if self.building:
            self.again = True
            return
        self.building = True
        asyncio.ensure_future(self.build())

    async def build(self) -> None:
        try:
            objects = self.cache.objects()
            activity = {ns: format_time(datetime.datetime.fromtimestamp(t, UTC))
                        for ns, t in self.cache.activity.items()}
            started = time.monotonic()
            boards = await self.loop.run_in_executor(self.executor, self.make_boards, objects, activity)
            self.last_build_seconds = time.monotonic() - started
            self.builds += 1
            await self.broadcast.publish(boards)
        except Exception:  # a bad object must not stop the board: log it, show the last board
            LOG.exception("building the board failed")
        finally:
            self.building = False
            if self.again:
                self.again = False
                self.changed()

    def make_boards(self, objects: dict, activity: dict) -> dict[str, dict]:
        instructor = board_build.build(
            objects, board=dict(lease_max=self.args.lease_max, people=self.people, activity=activity,
                                title=self.args.title),
            driver=self.args.driver, expected_devices_per_node=self.args.devices_per_node,
            stale_claim_age=self.args.stale_claim_age)['board']
        return {board_model.INSTRUCTOR: instructor, board_model.PUBLIC: board_model.public(instructor)}

    # -- HTTP
    def authorized(self, request: web.Request) -> bool:
        given = request.query.get("token", "")
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            given = header[len("Bearer "):]
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())

    def view_of(self, request: web.Request) -> str:
        if request.path.startswith("/instructor"):
            if not self.authorized(request):
                raise web.HTTPUnauthorized(
                    text="The instructor's board needs its token: open /instructor?token=TOKEN (the token is in "
                         "the controller's artifacts folder, board/instructor).\n",
                    headers=dict(SECURITY_HEADERS, **{"WWW-Authenticate": 'Bearer realm="dralab-board"'}))
            return board_model.INSTRUCTOR
        return board_model.PUBLIC

    async def latest(self) -> None:
        if not self.broadcast.version:
            await self.broadcast.newer(0, 30.0)
        if not self.broadcast.version:
            raise web.HTTPServiceUnavailable(text="The board is still reading the lab; try again in a moment.\n",
                                             headers={"Retry-After": "2"})

    async def page(self, request: web.Request) -> web.Response:
        view = self.view_of(request)
        await self.latest()
        stream = "/instructor/events" if view == board_model.INSTRUCTOR else "/events"
        return web.Response(text=board_page.render(self.broadcast.boards[view], stream=stream),
                            content_type="text/html", headers=SECURITY_HEADERS)

    async def board_json(self, request: web.Request) -> web.Response:
        view = self.view_of(request)
        await self.latest()
        return web.Response(body=self.broadcast.payloads[view], content_type="application/json",
                            headers=SECURITY_HEADERS)

    async def events(self, request: web.Request) -> web.StreamResponse:
        view = self.view_of(request)
        client = request.remote or "unknown"
        slots = self.slots[view]
        why = slots.take(client)
        if why:
            self.refused += 1
            raise web.HTTPTooManyRequests(text=f"Too many streams: {why}; close some and try again.\n",
                                          headers=dict(SECURITY_HEADERS, **{"Retry-After": "10"}))
        try:
            response = web.StreamResponse(headers=dict(SECURITY_HEADERS, **{
                "Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}))
            await response.prepare(request)
        except BaseException:
            slots.give_back(client)
            raise
        self.broadcast.clients += 1
        try:
            await response.write(b"retry: 2000\n\n")
            seen = 0
            while True:
                if not await self.broadcast.newer(seen, KEEPALIVE):
                    await response.write(b": keepalive\n\n")
                    continue
                seen = self.broadcast.version
                await response.write(b"event: model\ndata: " + self.broadcast.payloads[view] + b"\n\n")
        except ConnectionResetError:  # the browser went away
            pass
        finally:
            self.broadcast.clients -= 1
            slots.give_back(client)
        return response

    async def healthz(self, request: web.Request) -> web.Response:
        ready = self.cache.ready() and self.broadcast.version > 0
        status = {"ready": ready, "version": __version__, "clients": self.broadcast.clients, "builds": self.builds,
                  "streams_refused": self.refused,
                  "last_build_seconds": round(self.last_build_seconds, 3),
                  "kinds": {w.kind: {"items": len(self.cache.items[w.kind]), "watches": w.watches,
                                     "relists": self.cache.relists[w.kind]} for w in self.watchers}}
        return web.json_response(status, status=200 if ready else 503, headers=SECURITY_HEADERS)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self.page)
        app.router.add_get("/events", self.events)
        app.router.add_get("/board.json", self.board_json)
        app.router.add_get("/instructor", self.page)
        app.router.add_get("/instructor/events", self.events)
        app.router.add_get("/instructor/board.json", self.board_json)
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/favicon.ico", no_icon)
        return app


def read_people(path: str | None) -> dict:
    if not path:
        return {}
    with open(path, encoding="utf-8") as handle:
        people = json.load(handle)
    if not isinstance(people, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in people.items()):
        raise ValueError(f"{path} must hold a JSON object of seat -> person name")
    return people


def listen_address(value: str) -> tuple[str, int]:
    problem = host_port_problem(value)
    if problem or ":" not in value.rsplit("]", 1)[-1]:
        raise ValueError(f"--listen: {problem or repr(value) + ' names no port'}")
    host, port = value.rsplit(":", 1)
    return host.strip("[]"), int(port)


def app_runner(board: Board, shutdown_timeout: float = 2.0) -> web.AppRunner:
    """The board's app; a stream whose browser went away ends at once (its handler is cancelled), which gives its
    slot back, rather than at its next keepalive."""
    return web.AppRunner(board.app(), access_log=None, shutdown_timeout=shutdown_timeout, handler_cancellation=True)


async def serve(board: Board, host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    runner = app_runner(board)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    board.start(loop)
    LOG.info("dralab-board %s on http://%s:%d/ (instructor: /instructor), %d watches", __version__, host, port,
             len(KINDS))
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    LOG.info("stopping")
    await runner.cleanup()


async def no_icon(_request):
    """The board has no icon: 204 instead of a 404 in every browser's console."""
    return web.Response(status=204)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dralab-board", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--kubeconfig", required=True, help="the board's own kubeconfig (read-only identity)")
    parser.add_argument("--listen", default="127.0.0.1:8088", help="address:port to serve on (default 127.0.0.1:8088)")
    parser.add_argument("--token-env", default=TOKEN_ENV, help=f"variable with the instructor's token ({TOKEN_ENV})")
    parser.add_argument("--people", help="JSON file {seat: person name}, shown to the instructor only")
    # The lab's values come from role lab_board (the unit's command line); the program keeps no copy of them.
    parser.add_argument("--driver", required=True, help="DRA driver of the GPUs")
    parser.add_argument("--devices-per-node", type=int, required=True, help="devices each node should publish")
    parser.add_argument("--lease-max", required=True, help="the lab's longest lease (dralab_lease_max)")
    parser.add_argument("--stale-claim-age", default="1h", help="an unused allocated claim is a problem after this")
    parser.add_argument("--debounce", default="250ms", help="wait this long after a change before rebuilding")
    parser.add_argument("--title", default="DRA lab", help="title of the page")
    parser.add_argument("--streams-per-client", type=int, default=20,
                        help="projector streams one client address may hold (more are refused, 429)")
    parser.add_argument("--streams-max", type=int, default=600, help="projector streams in total")
    parser.add_argument("--streams-max-instructor", type=int, default=50, help="instructor streams in total")
    parser.add_argument("--version", action="version", version=f"dralab-board {__version__}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    try:
        host, port = listen_address(args.listen)
        debounce = args.debounce.strip()
        args.debounce = int(debounce[:-2]) / 1000 if debounce.endswith("ms") else parse_duration(debounce)
        parse_duration(args.lease_max)
        parse_duration(args.stale_claim_age)
        people = read_people(args.people)
        for name in ("streams_per_client", "streams_max", "streams_max_instructor"):
            if getattr(args, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be 1 or more")
    except (OSError, ValueError) as exc:
        LOG.error("%s", exc)
        return 2
    token = os.environ.get(args.token_env, "")
    if len(token) < 16:
        LOG.error("no instructor token: set %s (16 characters or more; the lab_board role writes it)", args.token_env)
        return 2
    if not os.path.isfile(args.kubeconfig):
        LOG.error("no kubeconfig at %s", args.kubeconfig)
        return 2
    asyncio.run(serve(Board(args, token, people), host, port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
