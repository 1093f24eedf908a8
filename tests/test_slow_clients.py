"""Slow clients are timed out (`api.slowclients`): over raw sockets, clients that connect and
send nothing, send their headers a byte at a time, or trickle their body, are answered 408 (or
just closed) and lose their sockets once ``--request-timeout`` has passed, while a fast client is
served all along and a WebSocket session that idles longer than the deadline keeps working."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync import client as ws_client

from . import ledger
from .serving import ServerProcess

pytestmark = pytest.mark.reliability

PHASE = "limits: slow clients (silent, trickled headers, trickled bodies) disconnected"
DEADLINE = 2.0
GIVE_UP = 60.0
"""Far beyond the deadline: a socket still open by then was never going to be closed."""


def _open_fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


class SlowClient:
    def __init__(self, port: int, kind: str) -> None:
        self.kind = kind
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setblocking(False)
        if kind == "headers":
            self.pending = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10_000
        elif kind == "body":
            body = json.dumps({"seed": 1}).encode() + b" " * 10_000
            self.sock.sendall(
                b"POST /reset HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n" % len(body)
            )
            self.pending = body
        else:
            self.pending = b""
        self.answer = b""
        self.closed_after: float | None = None

    def tick(self, started: float) -> None:
        """Send one more byte; notice an answer or the server closing."""
        if self.closed_after is not None:
            return
        try:
            if self.pending:
                self.sock.send(self.pending[:1])
                self.pending = self.pending[1:]
            data = self.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:  # reset, broken pipe: the server closed it
            data = b""
        if data:
            self.answer += data
            return
        self.closed_after = time.monotonic() - started
        self.sock.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: Any) -> Any:
    where = tmp_path_factory.mktemp("slow")
    proc = ServerProcess(
        f"sqlite:///{where / 'slow.db'}",
        "--request-timeout",
        str(DEADLINE),
        log=where / "server.log",
    )
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()
        assert "Traceback" not in (where / "server.log").read_text()


def test_slow_clients_lose_their_sockets_and_fast_ones_are_served(server):
    per_kind = ledger.scaled(20, 80)
    baseline = _open_fds(server.pid)
    started = time.monotonic()
    clients = [
        SlowClient(server.port, kind)
        for kind in ("silent", "headers", "body")
        for _ in range(per_kind)
    ]
    served = 0
    with httpx.Client(base_url=server.url, timeout=30) as fast:
        while time.monotonic() - started < GIVE_UP:
            for c in clients:
                c.tick(started)
            if all(c.closed_after is not None for c in clients):
                break
            assert fast.get("/health").status_code == 200  # a fast client is served meanwhile
            served += 1
            time.sleep(0.2)
    still_open = [c.kind for c in clients if c.closed_after is None]
    for c in clients:
        if c.closed_after is None:
            c.sock.close()
    assert still_open == [], f"{len(still_open)} slow sockets still open after {GIVE_UP:.0f} s"
    # Whoever had not begun to be answered was told why.
    for c in clients:
        assert c.answer == b"" or c.answer.startswith(b"HTTP/1.1 408"), c.answer[:200]
    assert sum(c.answer.startswith(b"HTTP/1.1 408") for c in clients) >= 2 * per_kind
    slowest = max(c.closed_after or 0 for c in clients)
    # The server's descriptors are back to what they were (the fast client's pool closed).
    deadline = time.monotonic() + 10
    while _open_fds(server.pid) > baseline + 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _open_fds(server.pid) <= baseline + 2
    assert served > 0
    ledger.record(
        PHASE,
        limits=len(clients),
        note=f"{len(clients)} raw sockets ({per_kind} silent, {per_kind} trickling headers, "
        f"{per_kind} trickling bodies) all closed by the server within {slowest:.1f} s of a "
        f"{DEADLINE:g} s --request-timeout; {served} fast requests served meanwhile",
    )


def test_a_websocket_idle_beyond_the_deadline_keeps_working(server):
    url = server.url.replace("http", "ws") + "/ws"
    with ws_client.connect(url) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1, "task_id": 0}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"
        time.sleep(DEADLINE * 1.5)
        ws.send(json.dumps({"type": "step", "data": {"app": "ticketdesk", "method": "x"}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"


def test_a_request_that_arrived_is_not_timed(server):
    """Keep-alive: requests on one connection, each whole, with pauses beyond the deadline
    between them shorter than the keep-alive timeout, then a new connection."""
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for _ in range(2):
            assert http.post("/reset", json={"seed": 2}).status_code == 200
            time.sleep(DEADLINE + 0.5)  # idle between requests: keep-alive's (5 s), not ours
