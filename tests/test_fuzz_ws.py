"""Fuzzing `/ws` (`tests/wsfuzz.py`): malformed frames, wrong types, huge frames, floods of
frames and of connections. The server answers each frame by the rule, closes only what it must
(a frame over the size limit: 1009; a session over the cap: a clear error), and a second
session playing all along notices nothing."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
import websockets
import websockets.sync.client as ws_client
from hypothesis import HealthCheck, given, settings

from . import ledger
from .canary import Canary
from .serving import ServerProcess
from .wsfuzz import Frame, check_reply, frames

pytestmark = pytest.mark.reliability

PHASE = "fuzz: WebSocket frames, floods, huge frames"
LIMIT = 1 << 20
MAX_SESSIONS = 12


@pytest.fixture(scope="module")
def server(tmp_path_factory: Any) -> Iterator[str]:
    where = tmp_path_factory.mktemp("fuzz-ws")
    proc = ServerProcess(
        f"sqlite:///{where / 'fuzz.db'}",
        "--max-sessions",
        str(MAX_SESSIONS),
        log=where / "server.log",
    )
    proc.start()
    canary = Canary(proc.url)
    canary.start()
    try:
        yield proc.url
    finally:
        canary.stop.set()
        canary.join(60)
        healthy = httpx.get(f"{proc.url}/health").status_code == 200
        proc.stop()
        log = (where / "server.log").read_text()
        assert healthy and "Traceback" not in log, log[-3000:]
        assert canary.problems == [] and canary.steps > 0, canary.problems
        ledger.record(PHASE, note=f"a second /ws session played {canary.steps} steps meanwhile")


class Session:
    """A fuzzing client: one socket, reopened when a frame legitimately closes it."""

    def __init__(self, url: str) -> None:
        self.url = url.replace("http://", "ws://") + "/ws"
        self.sockets = ExitStack()
        self.ws = self.sockets.enter_context(ws_client.connect(self.url, max_size=None))

    def reopen(self) -> None:
        self.sockets.close()
        self.ws = self.sockets.enter_context(ws_client.connect(self.url, max_size=None))

    def ask(self, frame: Frame) -> str | None:
        """Send the frame; what is wrong with how the server took it (None: nothing)."""
        self.ws.send(frame.payload)
        try:
            reply = self.ws.recv(timeout=60)
        except websockets.ConnectionClosed as closed:
            self.reopen()
            if frame.kind == "close":
                return None
            return f"closed ({closed.rcvd}) after {frame.payload[:100]!r}"
        problem = check_reply(frame, reply)
        if problem is None and frame.kind != "state":
            # The session still works after whatever that frame was.
            self.ws.send(json.dumps({"type": "state"}))
            state = json.loads(self.ws.recv(timeout=60))
            if state.get("type") != "state":
                problem = f"the session no longer answers after {frame.payload[:100]!r}: {state}"
        return problem


def test_fuzzed_frames_get_one_proper_reply_and_the_session_survives(server):
    session = Session(server)
    problems: list[str] = []

    @settings(
        max_examples=ledger.scaled(300, 1500),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(frame=frames)
    def run(frame: Frame) -> None:
        ledger.record(PHASE, fuzz_cases=1)
        problem = session.ask(frame)
        if problem:
            problems.append(problem)
        assert problem is None, problem

    try:
        run()
    finally:
        session.sockets.close()
    assert problems == []


def test_a_flood_of_frames_is_answered_in_order(server):
    n = ledger.scaled(1000, 5000)
    with ws_client.connect(server.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 11, "max_steps": 1000}}))
        ws.recv(timeout=60)
        junk = ["[]", "not json", json.dumps({"type": "dance"}), b"\x00\xff"]
        step = json.dumps({"type": "step", "data": {"app": "ticketdesk", "method": "list_tickets"}})
        sent = [junk[i % 4] if i % 5 else step for i in range(n)]
        for frame in sent:  # all of it before reading a single reply
            ws.send(frame)
        replies = [json.loads(ws.recv(timeout=120)) for _ in sent]
    kinds = ["observation" if f is step else "error" for f in sent]
    assert [r["type"] for r in replies] == kinds
    steps = [r["data"]["observation"]["step"] for r in replies if r["type"] == "observation"]
    assert steps == list(range(1, len(steps) + 1))
    ledger.record(PHASE, fuzz_cases=n, note=f"{n:,} frames sent unread, answered in order")


def test_huge_frames_close_only_their_own_socket(server):
    ws_url = server.replace("http://", "ws://") + "/ws"
    refused = 0
    for size in (LIMIT + 1, 2 * LIMIT, 8 * LIMIT):
        with ws_client.connect(ws_url, max_size=None) as ws:
            # The server may close while the frame is still going out: send or recv raises.
            with pytest.raises(websockets.ConnectionClosed) as closed:
                ws.send("x" * size)
                ws.recv(timeout=60)
            # 1009 (message too big); or, when the server hung up while the client was still
            # writing, the reset connection lost that close frame on the way back.
            assert closed.value.rcvd is None or closed.value.rcvd.code == 1009
            refused += 1
    # Just under the limit: a frame the server reads, whose oversize value the step refuses.
    with ws_client.connect(ws_url, max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        ws.recv(timeout=60)
        big = {
            "app": "ticketdesk",
            "method": "search_tickets",
            "params": {"query": "q" * (LIMIT - 200)},
        }
        ws.send(json.dumps({"type": "step", "data": big}))
        obs = json.loads(ws.recv(timeout=60))["data"]["observation"]
        assert obs["error"] == "too_large" and obs["step"] == 1
    ledger.record(PHASE, fuzz_cases=4, limits=refused)


def _open_sessions(ws_url: str, n: int) -> bool:
    """Whether ``n`` sessions can be open at once."""
    with ExitStack() as sockets:
        for i in range(n):
            try:
                ws = sockets.enter_context(ws_client.connect(ws_url))
                ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
                if json.loads(ws.recv(timeout=60))["type"] != "observation":
                    return False
            except websockets.ConnectionClosed:
                return False
        return True


def test_a_flood_of_connections_gets_capacity_errors_and_frees_its_slots(server):
    ws_url = server.replace("http://", "ws://") + "/ws"
    replies = []
    with ExitStack() as opened:
        for i in range(MAX_SESSIONS * 2):
            ws = opened.enter_context(ws_client.connect(ws_url))
            # A refused session gets its error frame unasked and is closed: the send may
            # find the socket closed, the frame is still there to read.
            with contextlib.suppress(websockets.ConnectionClosed):
                ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
            try:
                replies.append(json.loads(ws.recv(timeout=60)))
            except websockets.ConnectionClosed:
                replies.append({"type": "closed"})
    capacity = [r for r in replies if r["type"] == "error"]
    assert capacity and all(r["data"]["code"] == "CAPACITY_REACHED" for r in capacity)
    assert len(replies) - len(capacity) <= MAX_SESSIONS - 1  # the canary holds one slot
    # Every slot the flood took is freed (as the server sees each close): a full complement
    # of new sessions opens.
    for _ in range(100):
        if _open_sessions(ws_url, MAX_SESSIONS - 1):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the flood's session slots were never freed")
    ledger.record(PHASE, fuzz_cases=len(replies), limits=len(capacity))
