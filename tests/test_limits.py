"""Every limit the server enforces, configured both ways (`COMPANYOS_*` environment variables
and `companyos serve` flags) and proven on a running server: request bodies, WebSocket frames,
parameter values, steps per episode, sessions per server, idle sessions (closed, their slots
freed, their episodes kept), and page sizes of the episode listing and of an episode's events.
Each refusal is a clear 4xx, an error observation or a close code, and changes nothing else."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import websockets
import websockets.sync.client as ws_client

from companyos.api.settings import Settings
from companyos.domain import Limits
from companyos.domain.limits import clean_params

from . import ledger
from .serving import ServerProcess

pytestmark = pytest.mark.reliability

PHASE = "limits: configured by flags and COMPANYOS_* variables"


@dataclass(frozen=True)
class Config:
    body: int = 8192
    sessions: int = 3
    idle: float = 2.0
    steps: int = 30
    page: int = 5
    events_page: int = 10
    value: int = 100
    params: int = 400

    def env(self) -> dict[str, str]:
        return {
            "COMPANYOS_MAX_BODY_BYTES": str(self.body),
            "COMPANYOS_MAX_SESSIONS": str(self.sessions),
            "COMPANYOS_SESSION_TIMEOUT": str(self.idle),
            "COMPANYOS_MAX_EPISODE_STEPS": str(self.steps),
            "COMPANYOS_MAX_PAGE": str(self.page),
            "COMPANYOS_MAX_EVENTS_PAGE": str(self.events_page),
            "COMPANYOS_MAX_VALUE_CHARS": str(self.value),
            "COMPANYOS_MAX_PARAMS_CHARS": str(self.params),
        }

    def flags(self) -> list[str]:
        return [
            f"--max-body-bytes={self.body}",
            f"--max-sessions={self.sessions}",
            f"--session-timeout={self.idle}",
            f"--max-episode-steps={self.steps}",
            f"--max-page={self.page}",
            f"--max-events-page={self.events_page}",
            f"--max-value-chars={self.value}",
            f"--max-params-chars={self.params}",
        ]


SMALL = Config()
LARGE = Config(body=65536, sessions=4, steps=60, page=7, events_page=12, value=6000, params=9000)
"""A value limit above the default (4096): what the server accepts must still verify."""


@pytest.fixture(scope="module", params=["environment", "flags"])
def limited(request: Any, tmp_path_factory: Any) -> Iterator[tuple[str, Config]]:
    where = tmp_path_factory.mktemp(f"limits-{request.param}")
    config = SMALL if request.param == "environment" else LARGE
    store = f"sqlite:///{where / 'limits.db'}"
    if request.param == "environment":
        server = ServerProcess(store, env=config.env(), log=where / "server.log")
    else:
        server = ServerProcess(store, *config.flags(), log=where / "server.log")
    server.start()
    try:
        yield server.url, config
    finally:
        server.stop()
        log = (where / "server.log").read_text()
        assert "Traceback" not in log, log[-3000:]


def _reset(http: httpx.Client, **options: Any) -> dict[str, Any]:
    r = http.post("/reset", json={"seed": 3, "task_id": 0, "difficulty": 0, **options})
    assert r.status_code == 200, r.text
    return r.json()["observation"]


def _step(http: httpx.Client, eid: str, method: str, **params: Any) -> dict[str, Any]:
    action = {"app": "ticketdesk", "method": method, "params": params, "episode_id": eid}
    r = http.post("/step", json={"action": action})
    assert r.status_code == 200, r.text
    return r.json()["observation"]


def test_request_bodies_and_frames_over_the_limit(limited):
    url, c = limited
    with httpx.Client(base_url=url, timeout=30) as http:
        eid = _reset(http)["episode_id"]
        pad = {"app": "ticketdesk", "method": "list_tickets", "episode_id": eid}
        over = json.dumps({"action": pad, "pad": "x" * c.body})
        r = http.post("/step", content=over, headers={"content-type": "application/json"})
        assert r.status_code == 413 and str(c.body) in r.json()["detail"]
        under = json.dumps({"action": pad, "pad": "x" * (c.body - 200)})
        r = http.post("/step", content=under, headers={"content-type": "application/json"})
        assert r.status_code == 200 and r.json()["observation"]["step"] == 1
    ws_url = url.replace("http://", "ws://") + "/ws"
    with ws_client.connect(ws_url, max_size=None) as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            ws.send(json.dumps({"type": "state", "pad": "x" * c.body}))
            ws.recv(timeout=30)
        assert closed.value.rcvd is None or closed.value.rcvd.code == 1009
    ledger.record(PHASE, limits=2)


def _all_events(http: httpx.Client, eid: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seq: int | None = 0
    while seq is not None:
        body = http.get(f"/episodes/{eid}/events", params={"from_seq": seq}).json()
        out += body["events"]
        seq = body["next_seq"]
    return out


def test_parameter_values_over_the_limit_are_refused_and_not_stored(limited):
    url, c = limited
    with httpx.Client(base_url=url, timeout=30) as http:
        eid = _reset(http)["episode_id"]
        obs = _step(http, eid, "search_tickets", query="q" * (c.value + 1))
        assert obs["error"] == "too_large" and str(c.value) in obs["message"]
        obs = _step(http, eid, "search_tickets", query="q" * c.value)
        assert obs["error"] != "too_large" and obs["step"] == 2
        many = {f"k{i}": "v" * 20 for i in range(c.params // 20 + 1)}
        r = http.post(
            "/step",
            json={
                "action": {
                    "app": "approvalflow",
                    "method": "submit_approval",
                    "params": {"approval_type": "x", "approver": "y", "data": many},
                    "episode_id": eid,
                }
            },
        )
        assert r.json()["observation"]["error"] == "too_large"
        events = _all_events(http, eid)
        refused = [e for e in events if e["type"] == "ToolCalled" and e["data"]["refused"]]
        assert len(refused) == 2 and all(e["data"]["params"] is None for e in refused)
        # What the server accepted, under whatever limits, re-simulates and verifies.
        assert http.post(f"/episodes/{eid}/verify").json()["ok"]
    ledger.record(PHASE, limits=2)


def test_steps_per_episode(limited):
    url, c = limited
    with httpx.Client(base_url=url, timeout=30) as http:
        r = http.post("/reset", json={"max_steps": c.steps + 1})
        assert r.status_code == 400 and f"1 to {c.steps}" in r.json()["detail"]
        assert _reset(http, max_steps=c.steps)["max_steps"] == c.steps
    ledger.record(PHASE, limits=1)


def test_page_sizes(limited):
    url, c = limited
    with httpx.Client(base_url=url, timeout=30) as http:
        for n in range(c.page + 2):
            _reset(http, seed=100 + n)
        assert http.get("/episodes", params={"limit": c.page + 1}).status_code == 422
        page = http.get("/episodes", params={"limit": c.page}).json()
        assert len(page["episodes"]) == c.page and page["next"] is not None
        eid = page["episodes"][0]["episode_id"]
        assert (
            http.get(f"/episodes/{eid}/events", params={"limit": c.events_page + 1}).status_code
            == 422
        )
        events = http.get(f"/episodes/{eid}/events", params={"limit": c.events_page}).json()
        assert len(events["events"]) == c.events_page and events["next_seq"] == c.events_page
        assert http.get(f"/episodes/{eid}/events").status_code == 200  # the default fits the cap
    ledger.record(PHASE, limits=2)


def _session(stack: ExitStack, ws_url: str, seed: int) -> tuple[Any, dict[str, Any]]:
    ws = stack.enter_context(ws_client.connect(ws_url))
    # A refused session gets its error frame unasked and is closed: the send may find the
    # socket closed; the frame is still there to read.
    with contextlib.suppress(websockets.ConnectionClosed):
        ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
    return ws, json.loads(ws.recv(timeout=30))


def test_sessions_per_server_and_idle_reaping(limited):
    url, c = limited
    ws_url = url.replace("http://", "ws://") + "/ws"
    with ExitStack() as stack:
        sessions = [_session(stack, ws_url, i) for i in range(c.sessions)]
        assert all(reply["type"] == "observation" for _, reply in sessions)
        _, refused = _session(stack, ws_url, 99)
        assert refused["data"]["code"] == "CAPACITY_REACHED"
        assert str(c.sessions) in refused["data"]["message"]
        # A session that keeps talking is not idle, however long it lives.
        busy = sessions[0][0]
        until = time.monotonic() + 2 * c.idle
        while time.monotonic() < until:
            busy.send(json.dumps({"type": "state"}))
            assert json.loads(busy.recv(timeout=30))["type"] == "state"
            time.sleep(c.idle / 10)
        # The silent ones are closed by the server, with a reason...
        for ws, reply in sessions[1:]:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                ws.recv(timeout=30 + c.idle)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
            assert "idle" in closed.value.rcvd.reason
            # ...and their episodes stay stored: plain HTTP continues them.
            eid = reply["data"]["observation"]["episode_id"]
            r = httpx.post(
                f"{url}/step",
                json={"action": {"app": "ticketdesk", "method": "list_tickets", "episode_id": eid}},
            )
            assert r.json()["observation"]["step"] == 1
        # ...and their slots are free again: as many new sessions as were reaped open.
        fresh = [_session(stack, ws_url, 200 + i) for i in range(c.sessions - 1)]
        assert all(reply["type"] == "observation" for _, reply in fresh)
    ledger.record(PHASE, limits=2)


@pytest.mark.parametrize("limit", [1, 100, 255, 256, 257, 4096])
def test_a_value_limit_below_the_fast_path_still_holds(limit):
    """Regression: the fast path for small calls took any string up to 256 characters, so a
    server configured with a lower value limit let longer ones through."""
    limits = Limits(max_string=limit)
    assert clean_params({"q": "x" * limit}, limits)[1] is None
    cleaned, problem = clean_params({"q": "x" * (limit + 1)}, limits)
    assert cleaned is None and problem is not None and problem.code == "too_large"


def test_settings_refuse_nonsense_with_a_message(monkeypatch):
    monkeypatch.setenv("COMPANYOS_MAX_PAGE", "lots")
    with pytest.raises(ValueError, match="COMPANYOS_MAX_PAGE must be an integer"):
        Settings.from_env()
    with pytest.raises(ValueError, match="max_sessions must be at least 1"):
        Settings(max_sessions=0)
    with pytest.raises(ValueError, match="API key must not be empty"):
        Settings(api_key=" ")
    monkeypatch.setenv("COMPANYOS_MAX_PAGE", "9")
    monkeypatch.setenv("COMPANYOS_MAX_VALUE_CHARS", "77")
    monkeypatch.setenv("COMPANYOS_SESSION_TIMEOUT", "0")
    s = Settings.from_env()
    assert s.max_page == 9 and s.limits.max_string == 77 and s.session_timeout is None
    for argv, env in [
        (["serve", "--max-sessions", "0"], {}),
        (["serve"], {"COMPANYOS_MAX_EPISODE_STEPS": "x"}),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "companyos", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env},
        )
        assert done.returncode == 2 and done.stderr.startswith("companyos: "), done.stderr
