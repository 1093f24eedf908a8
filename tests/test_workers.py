"""`companyos serve --workers N`: several processes on one port and one SQLite file serve any
episode. Stateful HTTP steps land on whichever process accepts the connection; each keeps its
own episode cache, reloads a stale copy and never writes on a stale version, so every log
equals the same seed and calls played alone. WebSocket sessions stay on their process. The
in-memory store, which processes cannot share, is refused."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import httpx
import pytest
import websockets

from companyos.api import CompanyOSEnvironment
from companyos.domain import plan

from .helpers import served_chain
from .serving import ServerProcess, listening, wait_listening


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    db = tmp_path_factory.mktemp("workers") / "events.db"
    server = ServerProcess(f"sqlite:///{db}", "--workers", "2")
    # Two processes import everything at once: on a busy shared machine that takes a while.
    yield server.start(timeout=240)
    server.stop()


def test_each_worker_listens_on_a_socket_of_its_own(url):
    # One socket per worker in the port's SO_REUSEPORT group: the kernel spreads connections
    # over them (one shared socket let whichever worker woke first take a whole burst).
    port = int(url.rsplit(":", 1)[1])
    wait_listening(port, 2, timeout=240)
    sockets = listening(port)
    assert len(sockets) == 2 and len(set(sockets)) == 2  # two sockets (inodes), not one shared


def test_stateful_http_over_two_workers_gives_the_solo_log(url):
    # A connection per request: each step goes to whichever worker accepts it.
    per_request = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(base_url=url, timeout=60, limits=per_request) as http:
        for n in range(6):
            kwargs: dict[str, Any] = {"seed": 500 + n, "task_id": n % 5, "difficulty": n % 4}
            shadow = CompanyOSEnvironment()
            shadow.reset(**kwargs)
            eid = http.post("/reset", json=kwargs).json()["observation"]["episode_id"]
            done, step = False, 0
            while not done:
                assert shadow.episode is not None
                call = plan(shadow.episode.world)
                assert call is not None
                shadow.step(call.as_action())
                r = http.post("/step", json={"action": {**call.as_action(), "episode_id": eid}})
                assert r.status_code == 200, r.text
                obs = r.json()["observation"]
                step += 1
                assert obs["error"] != "conflict" and obs["step"] == step, obs
                done = r.json()["done"]
            assert shadow.episode is not None
            solo = [rec.hash for rec in shadow.store.read(shadow.episode.id)]
            assert served_chain(http, eid) == solo
            assert http.post(f"/episodes/{eid}/verify").json()["ok"]


def test_concurrent_websocket_sessions_over_two_workers(url):
    async def session(i: int) -> int:
        ws_url = url.replace("http://", "ws://") + "/ws"
        async with websockets.connect(ws_url, max_size=None) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"seed": i, "task_id": i % 5}}))
            reply = json.loads(await ws.recv())
            steps = 0
            for _ in range(8):
                call = {"app": "ticketdesk", "method": "list_tickets", "params": {}}
                await ws.send(json.dumps({"type": "step", "data": call}))
                reply = json.loads(await ws.recv())
                assert reply["type"] == "observation", reply
                steps += 1
            return steps

    async def main() -> list[int]:
        return await asyncio.gather(*(session(i) for i in range(16)))

    assert asyncio.run(main()) == [8] * 16


def test_the_in_memory_store_is_refused_with_workers():
    out = subprocess.run(
        [sys.executable, "-m", "companyos", "serve", "--workers", "2", "--store", "memory://"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert "in-memory store" in out.stderr and "SQLite" in out.stderr
