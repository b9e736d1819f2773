"""dralab-board's event streams under attack, on loopback: one client opening far more streams than a browser needs
gets its cap and then 429 at once, while the projector's page, its board and another client's stream still answer;
the total cap holds across clients; a closed stream gives its slot back; the instructor's streams have their own cap.
The server is the real aiohttp app of tools/dralab_board with a board published (no API server: no watch starts)."""

from __future__ import annotations

import argparse
import asyncio
import time

import aiohttp
import pytest
from aiohttp import web

from dralab_board import server
from ansible_collections.dralab.workshop.plugins.module_utils.board import state as board_model

TOKEN = "t" * 32
ATTACKER = "127.0.0.1"
OTHER = "127.0.0.2"  # another address of the loopback network: another participant's laptop


def args(per_client=5, total=12, instructor=3):
    return argparse.Namespace(streams_per_client=per_client, streams_max=total, streams_max_instructor=instructor,
                              title="DRA lab")


class Served:
    def __init__(self, board: server.Board):
        self.board = board
        self.runner = None
        self.url = ""

    async def __aenter__(self):
        await self.board.broadcast.publish({board_model.PUBLIC: {"title": "DRA lab", "nodes": []},
                                            board_model.INSTRUCTOR: {"title": "DRA lab", "nodes": []}})
        self.runner = server.app_runner(self.board, shutdown_timeout=0.5)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # pylint: disable=protected-access
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc):
        await self.runner.cleanup()


async def open_streams(session: aiohttp.ClientSession, url: str, count: int, path: str = "/events") -> list:
    """count streams from one client; returns the responses (open ones keep their connection)."""
    responses = []
    for _number in range(count):
        response = await session.get(url + path, timeout=aiohttp.ClientTimeout(total=None, sock_read=None))
        responses.append(response)
        if response.status == 200:
            assert (await response.content.readuntil(b"\n\n")) == b"retry: 2000\n\n"
    return responses


def client(address: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(address, 0), limit=0))


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def test_one_client_gets_its_cap_and_the_projector_still_answers():
    async def attack():
        async with Served(server.Board(args(per_client=5, total=12), TOKEN, {})) as served:
            async with client(ATTACKER) as attacker, client(OTHER) as other:
                held = await open_streams(attacker, served.url, 40)
                statuses = [response.status for response in held]
                assert statuses == [200] * 5 + [429] * 35
                refused = held[-1]
                assert refused.headers["Retry-After"] == "10"
                assert "holds 5 streams already" in await refused.text()
                # Another participant's browser: the page, the board and a stream, at once.
                started = time.monotonic()
                page = await other.get(served.url + "/")
                assert page.status == 200 and "DRA lab" in await page.text()
                board = await other.get(served.url + "/board.json")
                assert board.status == 200
                stream = (await open_streams(other, served.url, 1))[0]
                assert stream.status == 200
                assert time.monotonic() - started < 5
                health = await (await other.get(served.url + "/healthz")).json()
                assert health["clients"] == 6 and health["streams_refused"] == 35
                # A closed stream gives its slot back.
                held[0].close()
                await asyncio.sleep(0.3)
                again = (await open_streams(attacker, served.url, 1))[0]
                assert again.status == 200
                for response in held + [stream, again]:
                    response.close()
    run(attack())


def test_the_total_cap_holds_across_clients_and_the_instructor_has_its_own():
    async def attack():
        async with Served(server.Board(args(per_client=8, total=12, instructor=3), TOKEN, {})) as served:
            async with client(ATTACKER) as first, client(OTHER) as second:
                held = await open_streams(first, served.url, 8)
                held += await open_streams(second, served.url, 8)
                assert [response.status for response in held] == [200] * 12 + [429] * 4
                assert "serves 12 streams already" in await held[-1].text()
                # The projector's streams are full; the instructor's view (token) still streams, up to its own cap.
                instructor = await open_streams(first, served.url, 4, f"/instructor/events?token={TOKEN}")
                assert [response.status for response in instructor] == [200, 200, 200, 429]
                # Without the token: 401, and no slot is taken.
                wrong = await first.get(served.url + "/instructor/events?token=wrong")
                assert wrong.status == 401
                assert served.board.slots[board_model.INSTRUCTOR].open == 3
                for response in held + instructor:
                    response.close()
                await asyncio.sleep(0.3)
                assert served.board.slots[board_model.PUBLIC].open == 0
                assert served.board.slots[board_model.PUBLIC].by_client == {}
    run(attack())


@pytest.mark.parametrize("option", ["--streams-per-client", "--streams-max", "--streams-max-instructor"])
def test_a_cap_below_one_is_refused(option, tmp_path, monkeypatch):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    monkeypatch.setenv(server.TOKEN_ENV, TOKEN)
    assert server.main(["--kubeconfig", str(kubeconfig), "--driver", "gpu.example.com", "--devices-per-node", "8",
                        "--lease-max", "8h", option, "0"]) == 2
