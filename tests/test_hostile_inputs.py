"""Values no part of the system can keep or send back, in every field of every route: a lone
surrogate, a NUL, NaN, the infinities, 1e400 and integers beyond 64 bits (`domain.inputs`).

Every one gets a clear refusal (a 422 naming the field, an `invalid_reset`, or, for a tool
call's own arguments in a live episode, an invalid action with a message and a penalty), never
a 5xx; the answer is strict JSON holding nothing hostile itself (no echo of the value); and a
refusal writes nothing to the store. Over HTTP, `/ws`, MCP and in-process alike."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync import client as ws_client

from companyos.api import CompanyOSEnvironment, ResetError
from companyos.api.environment import RESET_OPTIONS
from companyos.domain.inputs import hostile, printable
from companyos.events import InMemoryEventStore

from . import ledger
from .conftest import POSTGRES_URL, drop_postgres_schema, postgres_schema_url
from .serving import ServerProcess

pytestmark = pytest.mark.reliability

PHASE = "fuzz: hostile text and numbers in every field of every route"

RAW: dict[str, str] = {
    "lone surrogate": '"\\ud800"',
    "NUL": '"a\\u0000b"',
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "1e400": "1e400",
    "int beyond 64 bits": "1" + "0" * 30,
}
"""Each class as it goes on the wire (valid JSON, or the non-standard literals Python's JSON
writer sends)."""
VALUES: dict[str, Any] = {k: json.loads(v) for k, v in RAW.items()}


def strict_json(text: str) -> Any:
    """``text`` as strict JSON holding nothing hostile, or an AssertionError."""

    def refuse(literal: str) -> Any:
        raise AssertionError(f"non-standard JSON literal {literal} in an answer")

    value = json.loads(text, parse_constant=refuse)
    assert hostile(value) is None, (hostile(value), text[:300])
    return value


def templates(eid: str) -> list[tuple[str, str, str]]:
    """(route, field, body with X where the hostile value goes)."""
    out = [("/reset", opt, f'{{"{opt}": X}}') for opt in RESET_OPTIONS]
    out += [
        ("/reset", "a key", '{"seed": 1, "X": 1}'),
        ("/reset", "batch[0].seed", '{"batch": [{"seed": X}]}'),
        ("/step", "action.app", '{"action": {"app": X, "method": "list_tickets"}}'),
        ("/step", "action.method", '{"action": {"app": "ticketdesk", "method": X}}'),
        (
            "/step",
            "action.episode_id",
            '{"action": {"app": "ticketdesk", "method": "list_tickets", "episode_id": X}}',
        ),
        (
            "/step",
            "action.expected_step",
            '{"action": {"app": "ticketdesk", "method": "list_tickets", '
            f'"episode_id": "{eid}", "expected_step": X}}}}',
        ),
        ("/step", "action.params (no app)", '{"action": {"params": X}}'),
        ("/step", "batch[0].params (extra key)", '{"action": {"batch": [{"params": X}], "x": 1}}'),
        (
            "/step",
            "action.arguments",
            '{"action": {"type": "call_tool", "tool_name": "t", "arguments": X}}',
        ),
        ("/step", "timeout_s", '{"action": {"app": "ticketdesk", "method": "x"}, "timeout_s": X}'),
        (f"/episodes/{eid}/fork", "at_step", '{"at_step": X}'),
        (f"/episodes/{eid}/fork", "episode_id", '{"at_step": 0, "episode_id": X}'),
        ("/analytics/query", "sql", '{"sql": X}'),
        ("/analytics/query", "name", '{"name": X}'),
        ("/analytics/query", "max_rows", '{"sql": "SELECT 1", "max_rows": X}'),
        ("/mcp", "method", '{"jsonrpc": "2.0", "id": 1, "method": X}'),
        ("/mcp", "id", '{"jsonrpc": "2.0", "id": X, "method": "tools/list"}'),
        (
            "/mcp",
            "params.name",
            '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
            '"params": {"name": X, "arguments": {}}}',
        ),
        ("/mcp-server/", "method", '{"jsonrpc": "2.0", "id": 1, "method": X}'),
    ]
    return out


def event_count(db: Path) -> int:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT count(*) FROM events").fetchone()[0]


@pytest.fixture(scope="module")
def served(tmp_path_factory: Any) -> Iterator[tuple[str, Path]]:
    where = tmp_path_factory.mktemp("hostile")
    db = where / "hostile.db"
    proc = ServerProcess(f"sqlite:///{db}", log=where / "server.log")
    proc.start()
    try:
        yield proc.url, db
    finally:
        proc.stop()
        log = (where / "server.log").read_text()
        assert "Traceback" not in log, log[-3000:]


def _reset(http: httpx.Client) -> str:
    r = http.post("/reset", json={"seed": 3, "task_id": 0, "difficulty": 0})
    assert r.status_code == 200, r.text
    return r.json()["observation"]["episode_id"]


def test_every_field_of_every_route_refuses_hostile_values_cleanly(served):
    url, db = served
    tried = 0
    with httpx.Client(base_url=url, timeout=60) as http:
        eid = _reset(http)
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        for route, field, template in templates(eid):
            for name, raw in RAW.items():
                before = event_count(db)
                r = http.post(route, content=template.replace("X", raw), headers=headers)
                tried += 1
                ledger.record(PHASE, fuzz_cases=1, http_5xx=int(r.status_code >= 500))
                case = f"{route} {field} = {name}: {r.status_code} {r.text[:300]}"
                assert r.status_code < 500, case
                body = strict_json(r.text) if r.text else None
                if route == "/mcp" and r.status_code == 200:
                    assert body.get("error"), case  # a JSON-RPC error, not a result
                else:
                    assert 400 <= r.status_code < 500, case
                assert event_count(db) == before, f"a refusal wrote to the store: {case}"
        # A query string or a path can carry a NUL (percent-encoded) but never a surrogate.
        for path in (
            "/episodes?agent=%00",
            "/episodes?scenario=a%00",
            "/state?episode_id=a%00b",
            "/render?episode_id=%00",
            f"/episodes/{eid}%00",
            f"/episodes/{eid}/state?step=1e400",
            "/episodes?after=Infinity",
            "/viewer/%00",
            "/analytics/report?format=%00",
        ):
            r = http.get(path)
            tried += 1
            ledger.record(PHASE, fuzz_cases=1, http_5xx=int(r.status_code >= 500))
            assert 400 <= r.status_code < 500, (path, r.status_code, r.text[:300])
            strict_json(r.text)
    ledger.record(PHASE, note=f"{len(RAW)} classes ({', '.join(RAW)}) in every field")
    assert tried == len(templates(eid)) * len(RAW) + 9


def test_hostile_tool_arguments_are_an_invalid_action_with_a_penalty(served):
    url, db = served
    with httpx.Client(base_url=url, timeout=60) as http:
        eid = _reset(http)
        step = 0
        for name, raw in RAW.items():
            for params in ('{"ticket_id": X}', '{"a": [1, {"b": X}]}', "{X: 1}"):
                if params.startswith("{X") and not raw.startswith('"'):
                    continue  # a key is a string
                before = event_count(db)
                body = (
                    '{"action": {"app": "ticketdesk", "method": "get_ticket", '
                    f'"episode_id": "{eid}", "params": {params.replace("X", raw)}}}}}'
                )
                r = http.post("/step", content=body, headers={"content-type": "application/json"})
                ledger.record(PHASE, fuzz_cases=1, http_5xx=int(r.status_code >= 500))
                assert r.status_code == 200, (name, params, r.text[:300])
                answer = strict_json(r.text)
                obs = answer["observation"]
                step += 1
                assert obs["error"] in ("invalid_text", "invalid_number"), (name, obs)
                assert answer["reward"] < 0 and obs["step"] == step and obs["message"]
                assert event_count(db) > before  # the mistake is in the log, with its penalty


def test_hostile_frames_over_ws_get_an_error_frame_and_the_session_goes_on(served):
    url, _ = served
    with ws_client.connect(url.replace("http", "ws") + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1, "task_id": 0}}))
        assert json.loads(ws.recv(timeout=60))["type"] == "observation"
        frames = [
            '{"type": "reset", "data": {"agent": X}}',
            '{"type": "reset", "data": {"seed": X}}',
            '{"type": "step", "data": {"app": X, "method": "list_tickets"}}',
            '{"type": "step", "data": {"app": "ticketdesk", "method": "list_tickets", '
            '"expected_step": X}}',
            '{"type": "step", "data": {"app": "ticketdesk", "method": "x", "episode_id": X}}',
            '{"type": X}',
            # Not an action: a validator's error would quote the whole of it, params included.
            '{"type": "step", "data": {"params": X}}',
            '{"type": "step", "data": {"batch": [{"params": X}], "extra": 1}}',
            '{"type": "step", "data": {"type": "call_tool", "tool_name": "t", "arguments": X}}',
            '{"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
            '"params": {"name": "ticketdesk_get_ticket", "arguments": {"ticket_id": X}}}}',
        ]
        for frame in frames:
            for name, raw in RAW.items():
                ws.send(frame.replace("X", raw))
                reply = strict_json(ws.recv(timeout=60))
                ledger.record(PHASE, fuzz_cases=1)
                assert reply["type"] == "error" and reply["data"]["message"], (frame, name, reply)
                for internal in ("Traceback", "object has no attribute", "codec"):
                    assert internal not in reply["data"]["message"]
        for raw in RAW.values():  # a tool's own arguments: an invalid action
            ws.send(
                '{"type": "step", "data": {"app": "ticketdesk", "method": "get_ticket", '
                f'"params": {{"ticket_id": {raw}}}}}}}'
            )
            reply = strict_json(ws.recv(timeout=60))
            assert reply["type"] == "observation", reply
            assert reply["data"]["observation"]["error"] in ("invalid_text", "invalid_number")
            assert reply["data"]["reward"] < 0
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=60))["type"] == "state"


def test_a_step_refused_over_http_writes_nothing(served):
    url, db = served
    with httpx.Client(base_url=url, timeout=60) as http:
        before = event_count(db)
        params = {f"k{i}": "x" * 1000 for i in range(15)}
        for episode_id in ("no-such-episode", None):
            action = {"app": "ticketdesk", "method": "get_ticket", "params": params}
            if episode_id:
                action["episode_id"] = episode_id
            r = http.post("/step", json={"action": action})
            assert r.status_code == 200
            assert r.json()["observation"]["error"] in ("episode_not_found", "no_episode")
        with sqlite3.connect(db) as con:
            sessions = con.execute(
                "SELECT count(*) FROM events WHERE episode_id LIKE 'session-%'"
            ).fetchone()[0]
        assert event_count(db) == before and sessions == 0


def test_hostile_tool_arguments_over_a_standard_mcp_session(served):
    """`/mcp-server/` (a standard MCP client's way in): hostile tool arguments are refused
    by MCP's parser or by the environment (`invalid_reset`, an error code), never a 5xx."""
    url, db = served
    accept = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=url, timeout=60) as http:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "hostile", "version": "1"},
            },
        }
        r = http.post("/mcp-server/", json=init, headers=accept)
        assert r.status_code == 200, r.text
        headers = {
            **accept,
            "mcp-session-id": r.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        http.post(
            "/mcp-server/",
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=headers,
        )
        before = event_count(db)
        for raw in RAW.values():
            for name, arguments in (
                ("companyos_reset", f'{{"seed": {raw}}}'),
                ("companyos_reset", f'{{"episode_id": {raw}}}'),
                ("ticketdesk_get_ticket", f'{{"ticket_id": {raw}, "episode_id": "nope"}}'),
                ("ticketdesk_get_ticket", f'{{"ticket_id": "T", "episode_id": {raw}}}'),
            ):
                body = (
                    '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", '
                    f'"params": {{"name": "{name}", "arguments": {arguments}}}}}'
                )
                r = http.post("/mcp-server/", content=body, headers=headers)
                ledger.record(PHASE, fuzz_cases=1, http_5xx=int(r.status_code >= 500))
                assert r.status_code < 500, (name, raw, r.text[:300])
                if r.status_code == 200:
                    data = r.text.split("data: ", 1)[-1]
                    answer = strict_json(data)
                    text = json.loads(answer["result"]["content"][0]["text"])
                    assert text["error"] in ("invalid_reset", "episode_not_found", "no_episode")
        assert event_count(db) == before


# ---------------------------------------------------------------------- in-process


@pytest.mark.parametrize("name", list(VALUES))
def test_in_process_step_never_raises_on_hostile_values(name):
    value = VALUES[name]
    env = CompanyOSEnvironment()
    env.reset(seed=1, task_id=0, difficulty=0)
    ep = env.episode
    assert ep is not None
    for action in (
        {"app": value, "method": "list_tickets"},
        {"app": "ticketdesk", "method": value},
        {"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": value}},
        {"app": "ticketdesk", "method": "get_ticket", "params": {printable(value): value}},
    ):
        version = ep.version
        obs = env.step(action)
        assert obs.error and obs.message and obs.reward is not None and obs.reward < 0
        strict_json(json.dumps(obs.model_dump(), ensure_ascii=False))
        assert env.store.version(ep.id) > version  # an invalid action, in the log
    # Naming an episode by a hostile id answers "not found" and writes nothing anywhere.
    fresh = CompanyOSEnvironment(env.store)
    streams = [(s.stream_id, s.version) for s in env.store.streams()]
    obs = fresh.step({"app": "ticketdesk", "method": "list_tickets", "episode_id": value})
    assert obs.error == ("episode_not_found" if isinstance(value, str) else "no_episode")
    strict_json(json.dumps(obs.model_dump(), ensure_ascii=False))
    assert [(s.stream_id, s.version) for s in env.store.streams()] == streams
    # The MCP way in.
    obs = env.call_tool("ticketdesk_get_ticket", {"ticket_id": value})
    assert obs.error in ("invalid_text", "invalid_number")


@pytest.mark.parametrize("name", list(VALUES))
def test_in_process_reset_refuses_hostile_values_with_a_reset_error(name):
    value = VALUES[name]
    store = InMemoryEventStore()
    env = CompanyOSEnvironment(store)
    env.reset(seed=1, task_id=0, episode_id="source")
    before = [(s.stream_id, s.version) for s in store.streams()]
    for option in RESET_OPTIONS:
        with pytest.raises(ResetError) as refused:
            env.reset(**{option: value})
        message = str(refused.value)
        assert option in message and hostile(message) is None
        assert [(s.stream_id, s.version) for s in store.streams()] == before
    with pytest.raises(ResetError):
        env.reset(fork_from="source", at_step=value)


def test_mcp_reset_with_hostile_values_is_an_invalid_reset():
    from companyos.api.mcp import RESET_TOOL, call

    env = CompanyOSEnvironment()
    for value in VALUES.values():
        for option in ("seed", "episode_id", "task_id", "difficulty"):
            out = call(env, RESET_TOOL, {option: value})
            assert out["error"] == "invalid_reset" and hostile(out) is None, out


# ---------------------------------------------------------------------- PostgreSQL


@pytest.mark.postgres
@pytest.mark.skipif(not POSTGRES_URL, reason="set COMPANYOS_TEST_POSTGRES_URL to run")
def test_nul_in_an_episode_id_is_not_found_on_postgresql_not_an_outage(tmp_path):
    import uuid

    from sqlalchemy import create_engine, text

    assert POSTGRES_URL
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    admin.dispose()
    proc = ServerProcess(postgres_schema_url(POSTGRES_URL, schema), log=tmp_path / "pg.log")
    proc.start()
    try:
        with httpx.Client(base_url=proc.url, timeout=60) as http:
            step = {"app": "ticketdesk", "method": "list_tickets"}
            # In-process over the store: NUL in an id is a "not found", no query is sent.
            r = http.post("/step", json={"action": {**step, "episode_id": "ab"}})
            assert r.status_code == 200 and r.json()["observation"]["error"] == "episode_not_found"
            for path in ("/state?episode_id=a%00b", "/render?episode_id=a%00b", "/episodes/a%00b"):
                r = http.get(path)
                assert 400 <= r.status_code < 500, (path, r.status_code, r.text)
            env_nul = '{"action": {"app": "ticketdesk", "method": "x", "episode_id": "a\\u0000b"}}'
            r = http.post("/step", content=env_nul, headers={"content-type": "application/json"})
            assert r.status_code == 422, r.text
            assert "NUL" in r.text and "503" not in r.text
        from companyos.events.sql import SQLEventStore

        store = SQLEventStore(postgres_schema_url(POSTGRES_URL, schema), create_tables=False)
        try:
            env = CompanyOSEnvironment(store)
            obs = env.step({**step, "episode_id": "a\x00b"})
            assert obs.error == "episode_not_found"
        finally:
            store.close()
    finally:
        proc.stop()
        drop_postgres_schema(POSTGRES_URL, schema)
    assert "Traceback" not in (tmp_path / "pg.log").read_text()
