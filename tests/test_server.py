"""The server, over real sockets: a uvicorn process on loopback per fixture (no TestClient)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from openenv.core import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

from companyos.agents import RandomAgent
from companyos.agents.remote import EventFeed
from companyos.api import CompanyOSAction, CompanyOSEnvironment, CompanyOSObservation
from companyos.api.client import CompanyOSClient
from companyos.domain import BY_NAME, plan

from .serving import running_server


def task_ticket(observation: dict) -> str:
    """The task's ticket: ids are drawn from the seed, and the task text names it."""
    found = re.search(r"TKT-\d+", observation["task"])
    assert found, observation["task"]
    return found.group(0)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("server") / "events.db"


@pytest.fixture(scope="module")
def server(db) -> Any:
    with running_server(f"sqlite:///{db}", log=db.parent / "server.log") as url:
        yield url


@pytest.fixture(scope="module")
def http(server) -> Any:
    with httpx.Client(base_url=server, timeout=30) as client:
        yield client


def reset(http: httpx.Client, **kw: Any) -> dict[str, Any]:
    r = http.post("/reset", json=kw)
    assert r.status_code == 200, r.text
    return r.json()


def step(http: httpx.Client, episode_id: str, app: str, method: str, **params: Any) -> dict:
    r = http.post(
        "/step",
        json={"action": {"app": app, "method": method, "params": params, "episode_id": episode_id}},
    )
    assert r.status_code == 200, r.text
    return r.json()


def chain(http: httpx.Client, episode_id: str) -> list[str]:
    out, seq = [], 0
    while seq is not None:
        body = http.get(f"/episodes/{episode_id}/events", params={"from_seq": seq}).json()
        out += [e["hash"] for e in body["events"]]
        seq = body["next_seq"]
    return out


def solo_chain(seed: int, task: Any, difficulty: int, actions: list[dict]) -> list[str]:
    env = CompanyOSEnvironment()
    env.reset(seed=seed, task_id=task, difficulty=difficulty)
    for a in actions:
        env.step(a)
    assert env.episode is not None
    return [r.hash for r in env.store.read(env.episode.id)]


# ---------------------------------------------------------------------------- OpenEnv routes


def test_openenv_routes(http):
    assert http.get("/health").json() == {"status": "healthy"}
    meta = http.get("/metadata").json()
    assert meta["name"] == "CompanyOS" and meta["description"]
    schema = http.get("/schema").json()
    assert {"action", "observation", "state"} <= set(schema)
    assert "CompanyOSAction" in json.dumps(schema["action"])
    assert "episode_id" in schema["observation"]["properties"]
    assert http.get("/state").json()["episode_id"] is None
    assert http.get("/openapi.json").json()["info"]["version"] == "0.1.0"
    assert http.get("/docs").status_code == 200
    tools = http.get("/manifest").json()["tools"]
    assert {t["name"] for t in tools} == set(BY_NAME)


def test_reset_and_stateful_http_steps(http):
    obs = reset(http, seed=11, task_id="vendor_onboarding", difficulty=0)["observation"]
    eid, tid = obs["episode_id"], task_ticket(obs)
    assert obs["seed"] == 11 and obs["tools"] and obs["step"] == 0
    r = step(http, eid, "ticketdesk", "get_ticket", ticket_id=tid)
    assert r["observation"]["step"] == 1 and r["observation"]["last_result"]["ticket_id"] == tid
    r = step(http, eid, "ticketdesk", "update_ticket", ticket_id=tid, field="verified", value=True)
    assert r["reward"] == pytest.approx(1.4) and r["observation"]["step"] == 2
    state = http.get("/state", params={"episode_id": eid}).json()
    assert state["step_count"] == 2 and state["world"]["ticketdesk"]["tickets"]
    render = http.get("/render", params={"episode_id": eid}).json()
    assert {"ticketdesk", "datahub", "approvalflow"} <= set(render)
    assert chain(http, eid) == solo_chain(
        11,
        "vendor_onboarding",
        0,
        [
            {"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": tid}},
            {
                "app": "ticketdesk",
                "method": "update_ticket",
                "params": {"ticket_id": tid, "field": "verified", "value": True},
            },
        ],
    )


def test_step_without_episode_id_says_what_to_do(http):
    r = http.post("/step", json={"action": {"app": "ticketdesk", "method": "list_tickets"}})
    assert r.status_code == 200
    obs = r.json()["observation"]
    assert obs["error"] == "no_episode" and "episode_id" in obs["message"]


# ---------------------------------------------------------------------------- isolation


def test_32_concurrent_ws_sessions_stay_isolated(server, http):
    async def play(seed: int) -> tuple[str, list[dict]]:
        agent, actions = RandomAgent(seed), []
        async with CompanyOSClient(server) as env:
            result = await env.reset(seed=seed, task_id=seed % 5, difficulty=seed % 4)
            agent.reset(result.observation)
            for _ in range(12):
                action = agent.act(result.observation)
                actions.append(action)
                result = await env.step(CompanyOSAction(**action))
                await asyncio.sleep(0)
                if result.done:
                    break
            assert result.observation.episode_id is not None
            return result.observation.episode_id, actions

    async def main() -> list[tuple[str, list[dict]]]:
        return await asyncio.gather(*(play(1000 + i) for i in range(32)))

    played = asyncio.run(main())
    assert len({eid for eid, _ in played}) == 32
    for i, (eid, actions) in enumerate(played):
        seed = 1000 + i
        assert chain(http, eid) == solo_chain(seed, seed % 5, seed % 4, actions)


def test_two_processes_serve_alternating_steps(server, db, http):
    """One SQLite file, two servers: steps alternate between them; the log is the same as the
    episode played alone, and each server's cache notices the other's writes."""
    with (
        running_server(f"sqlite:///{db}") as other,
        httpx.Client(base_url=other, timeout=30) as http_b,
    ):
        feed = EventFeed(server)
        obs = reset(http, seed=21, task_id="expense_report", difficulty=3)["observation"]
        eid, actions, clients, i = obs["episode_id"], [], [http, http_b], 0
        done = False
        while not done:
            call = plan(feed.world(eid))
            assert call is not None
            actions.append(call.as_action())
            r = step(clients[i % 2], eid, call.app, call.method, **call.params)
            assert r["observation"]["error"] != "conflict"
            assert r["observation"]["step"] == i + 1
            done, i = r["done"], i + 1
        assert r["observation"]["outcome"] == "success"
        assert (
            chain(http_b, eid) == chain(http, eid) == solo_chain(21, "expense_report", 3, actions)
        )
        assert http_b.post(f"/episodes/{eid}/verify").json()["ok"]


def test_concurrent_double_step_gives_one_success_and_one_conflict(http):
    obs = reset(http, seed=5, task_id=0, difficulty=0)["observation"]
    eid, tid = obs["episode_id"], task_ticket(obs)
    results: list[dict] = []
    barrier = threading.Barrier(2)

    def go() -> None:
        barrier.wait()
        r = http.post(
            "/step",
            json={
                "action": {
                    "app": "ticketdesk",
                    "method": "update_ticket",
                    "episode_id": eid,
                    "expected_step": 0,
                    "params": {"ticket_id": tid, "field": "verified", "value": True},
                }
            },
        )
        results.append(r.json()["observation"])

    threads = [threading.Thread(target=go) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(str(o["error"]) for o in results) == ["None", "conflict"]
    conflict = next(o for o in results if o["error"] == "conflict")
    assert "step 1" in conflict["message"] and conflict["step"] == 1
    body = http.get(f"/episodes/{eid}").json()
    assert body["steps"] == 1
    assert http.post(f"/episodes/{eid}/verify").json()["ok"]


def test_racing_steps_never_corrupt_the_stream(http):
    eid = reset(http, seed=6, task_id=1, difficulty=0)["observation"]["episode_id"]
    outcomes: list[str | None] = []
    barrier = threading.Barrier(8)

    def go() -> None:
        barrier.wait()
        r = http.post(
            "/step",
            json={"action": {"app": "ticketdesk", "method": "list_tickets", "episode_id": eid}},
        )
        outcomes.append(r.json()["observation"]["error"])

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(outcomes) <= {None, "conflict"}
    applied = outcomes.count(None)
    summary = http.get(f"/episodes/{eid}").json()
    assert summary["steps"] == applied >= 1
    assert http.post(f"/episodes/{eid}/verify").json()["ok"]


# ---------------------------------------------------------------------------- the log, browsed


def test_time_travel_and_fork_agree_with_the_stream(http):
    feed = EventFeed(str(http.base_url))
    eid = reset(http, seed=8, task_id="bug_escalation", difficulty=2)["observation"]["episode_id"]
    for _ in range(5):
        call = plan(feed.world(eid))
        assert call is not None
        step(http, eid, call.app, call.method, **call.params)
    before = chain(http, eid)
    from companyos.projections import render_world, replay

    local = replay(feed.events(eid))
    for k in range(6):
        at = http.get(f"/episodes/{eid}/state", params={"step": k}).json()
        assert at["step"] == k and at["world"] == json.loads(
            json.dumps(render_world(local.world_at(k)), default=str)
        )
    assert http.get(f"/episodes/{eid}/state", params={"step": 9}).status_code == 400
    fork = http.post(f"/episodes/{eid}/fork", json={"at_step": 3}).json()
    fid = fork["episode_id"]
    assert fork["observation"]["step"] == 3
    assert (
        http.get(f"/episodes/{fid}/state").json()["world"]["ticketdesk"]
        == http.get(f"/episodes/{eid}/state", params={"step": 3}).json()["world"]["ticketdesk"]
    )
    assert chain(http, eid) == before
    assert http.get(f"/episodes/{fid}").json()["forked_from"] == eid
    r = step(http, fid, "ticketdesk", "list_tickets")
    assert r["observation"]["step"] == 4


def test_verify_flags_a_tampered_event(http, db):
    feed = EventFeed(str(http.base_url))
    eid = reset(http, seed=9, task_id=0, difficulty=2)["observation"]["episode_id"]
    for _ in range(4):
        call = plan(feed.world(eid))
        assert call is not None
        step(http, eid, call.app, call.method, **call.params)
    assert http.post(f"/episodes/{eid}/verify").json()["ok"] is True
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE events SET payload = replace(payload, 'high', 'low') "
            "WHERE episode_id = ? AND type = 'TicketUpdated'",
            (eid,),
        )
    report = http.post(f"/episodes/{eid}/verify").json()
    assert report["ok"] is False and report["first_broken_seq"] is not None


def test_episode_listing_filters_and_pages(http):
    ids = set()
    for seed in range(6):
        ids.add(
            reset(http, seed=300 + seed, task_id="handbook_update", difficulty=1)["observation"][
                "episode_id"
            ]
        )
    rows, after = [], 0
    while after is not None:
        page = http.get(
            "/episodes",
            params={"scenario": "handbook_update", "difficulty": 1, "limit": 4, "after": after},
        ).json()
        rows += page["episodes"]
        assert len(page["episodes"]) <= 4
        after = page["next"] if page["episodes"] else None
    assert ids <= {r["episode_id"] for r in rows}
    assert all(r["scenario"] == "handbook_update" and r["difficulty"] == 1 for r in rows)
    running = http.get("/episodes", params={"outcome": "running", "limit": 200}).json()
    assert all(r["outcome"] is None for r in running["episodes"])
    assert http.get("/episodes", params={"limit": 500}).status_code == 422
    assert http.get("/episodes/nope").status_code == 404
    assert http.get("/episodes/../etc").status_code == 404


# ---------------------------------------------------------------------------- other clients


def test_generic_env_client_completes_an_oracle_episode(server):
    feed = EventFeed(server)
    with GenericEnvClient(base_url=server).sync() as env:
        result = env.reset(seed=12, task_id="license_renewal", difficulty=2)
        eid = result.observation["episode_id"]
        while not result.done:
            call = plan(feed.world(eid))
            assert call is not None
            result = env.step(call.as_action())
        assert result.observation["outcome"] == "success"


def test_mcp_tool_client_completes_an_oracle_episode(server):
    feed = EventFeed(server)

    async def main() -> dict[str, Any]:
        async with MCPToolClient(base_url=server) as env:
            await env.reset(seed=13, task_id="vendor_onboarding", difficulty=2)
            tools = {t.name: t for t in await env.list_tools()}
            assert set(tools) == set(BY_NAME)
            assert tools["ticketdesk_update_ticket"].input_schema["required"] == [
                "ticket_id",
                "field",
                "value",
            ]
            state = await env.state()
            eid = state.episode_id
            for _ in range(40):
                call = plan(feed.world(eid))
                if call is None:
                    break
                from openenv.core.env_server.mcp_types import CallToolAction

                result = await env.step(
                    CallToolAction(tool_name=f"{call.app}_{call.method}", arguments=call.params)
                )
                if result.done:
                    return result.observation.result
            raise AssertionError("the oracle did not finish")

    final = asyncio.run(main())
    # The tool result is the agent's view (no outcome: the grade); the trainer reads it.
    assert "outcome" not in final and "reward" not in final and final["episode_id"]
    assert feed.world(final["episode_id"]).outcome == "success"


def test_any_mcp_client_can_play(server):
    """A standard MCP client (FastMCP's, over streamable HTTP) finds the tools, starts an
    episode with companyos_reset and plays it to success."""
    from fastmcp import Client

    feed = EventFeed(server)

    async def main() -> dict[str, Any]:
        async with Client(f"{server}/mcp-server/") as client:
            names = {t.name for t in await client.list_tools()}
            assert names == set(BY_NAME) | {"companyos_reset"}
            started = (
                await client.call_tool(
                    "companyos_reset", {"seed": 14, "task_id": "bug_escalation", "difficulty": 3}
                )
            ).structured_content
            eid = started["episode_id"]
            assert started["task"].startswith("Escalate")
            for _ in range(40):
                call = plan(feed.world(eid))
                assert call is not None
                out = (
                    await client.call_tool(
                        f"{call.app}_{call.method}", {**call.params, "episode_id": eid}
                    )
                ).structured_content
                if out["done"]:
                    return out
            raise AssertionError("no end")

    final = asyncio.run(main())
    assert "outcome" not in final and "seed" not in final
    assert feed.world(final["episode_id"]).outcome == "success"


def test_openenv_json_rpc_mcp(http):
    tools = http.post("/mcp", json={"jsonrpc": "2.0", "method": "tools/list", "id": 1}).json()
    names = {t["name"] for t in tools["result"]["tools"]}
    assert "companyos_reset" in names and "datahub_query_metric" in names
    started = http.post(
        "/mcp",
        json={
            "jsonrpc": "2.0",
            "method": "tools/call",
            "id": 2,
            "params": {"name": "companyos_reset", "arguments": {"seed": 15, "task_id": 0}},
        },
    ).json()["result"]
    eid = started["episode_id"]
    got = http.post(
        "/mcp",
        json={
            "jsonrpc": "2.0",
            "method": "tools/call",
            "id": 3,
            "params": {
                "name": "datahub_query_metric",
                "arguments": {"metric_name": "vendor_compliance_score", "episode_id": eid},
            },
        },
    ).json()
    assert got["result"]["step"] == 1 and got["result"]["episode_id"] == eid
    bad = http.post("/mcp", content=b"{nope").json()
    assert bad["error"]["code"] == -32700


@pytest.mark.parametrize(
    "option",
    [
        {"show_progress": True},
        {"fork_from": "an-earlier-episode", "at_step": 3},
        {"max_steps": 500},
        {"reward_profile": "original"},
        {"agent": "someone-else"},
    ],
)
def test_an_agent_resetting_through_mcp_chooses_only_the_task(http, server, option):
    """companyos_reset is the agent's: a curriculum, a fork (which would continue, or take the
    outcome of, a stored episode), another budget or reward profile are the trainer's to set.
    Refused with a message on OpenEnv's /mcp and the standard MCP server alike; no episode is
    started."""
    from fastmcp import Client

    def newest() -> list[str]:
        got = http.get("/episodes", params={"limit": 1, "order": "newest"}).json()["episodes"]
        return [e["episode_id"] for e in got]

    before = newest()
    arguments = {"seed": 21, "task_id": "expense_report", **option}
    got = http.post(
        "/mcp",
        json={
            "jsonrpc": "2.0",
            "method": "tools/call",
            "id": 1,
            "params": {"name": "companyos_reset", "arguments": arguments},
        },
    ).json()["result"]
    assert got["error"] == "invalid_reset" and "trainer" in got["message"]

    async def standard() -> dict[str, Any]:
        async with Client(f"{server}/mcp-server/") as client:
            out = await client.call_tool("companyos_reset", arguments, raise_on_error=False)
            return out.structured_content or {"error": "refused by the schema"}

    assert asyncio.run(standard())["error"] in ("invalid_reset", "refused by the schema")
    assert newest() == before


def test_a_stateless_mcp_call_names_its_episode(server):
    """A 2026-07-28 MCP connection lasts one request: there is no session to remember an
    episode, so a call without episode_id is told to name one (nothing is acted on)."""
    from fastmcp import Client

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(f"{server}/mcp-server/") as client:
            started = (
                await client.call_tool("companyos_reset", {"seed": 5, "task_id": "expense_report"})
            ).structured_content
            bare = (await client.call_tool("ticketdesk_list_tickets", {})).structured_content
            named = (
                await client.call_tool(
                    "ticketdesk_list_tickets", {"episode_id": started["episode_id"]}
                )
            ).structured_content
            return bare, named

    bare, named = asyncio.run(main())
    assert bare["error"] == "no_episode" and "episode_id" in bare["message"]
    assert named["error"] is None and named["step"] == 1


# ---------------------------------------------------------------------------- limits and errors


def test_malformed_requests_get_4xx_with_a_message(http):
    big = {"action": {"app": "x", "method": "y", "params": {"q": "x" * (2 << 20)}}}
    r = http.post("/step", json=big)
    assert r.status_code == 413 and "limit" in r.json()["detail"]
    r = http.post("/step", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422
    r = http.post("/step", json={"action": {"method": "get_ticket"}})
    assert r.status_code == 422 and "app" in r.text
    r = http.post("/reset", json={"task_id": "payroll"})
    assert r.status_code == 400 and "vendor_onboarding" in r.json()["detail"]
    r = http.post("/reset", json={"seed": -4})
    assert r.status_code == 422
    r = http.post("/reset", json={"dificulty": 2})
    assert r.status_code == 400 and "unknown reset option" in r.json()["detail"]
    r = http.post("/episodes/nope/fork", json={"at_step": 1})
    assert r.status_code == 404
    assert http.get("/health").status_code == 200


def test_websocket_errors_are_frames_and_the_server_stays_up(server):
    ws_url = server.replace("http://", "ws://") + "/ws"

    async def main() -> list[dict]:
        frames = []
        async with websockets.connect(ws_url, max_size=None) as ws:
            for raw in [
                "not json",
                json.dumps({"type": "dance"}),
                json.dumps({"type": "step", "data": {"app": 1}}),
                json.dumps({"type": "reset", "data": {"task_id": "payroll"}}),
                json.dumps(
                    {"type": "step", "data": {"app": "ticketdesk", "method": "list_tickets"}}
                ),
            ]:
                await ws.send(raw)
                frames.append(json.loads(await ws.recv()))
        ws = await websockets.connect(ws_url, max_size=None)
        try:
            # The server may close (1009) while the frame is still being sent: then the send
            # itself reports the close, on a loaded machine as often as not.
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.send("x" * (2 << 20))
                await ws.recv()
            # 1009 (message too big); or, when the server hung up while the client was still
            # writing, the reset connection lost that close frame on the way back.
            assert closed.value.rcvd is None or closed.value.rcvd.code == 1009
        finally:
            # The server closes the TCP connection right after its 1009 frame; on a loaded
            # machine our closing handshake can meet a reset socket, which is not a failure.
            with contextlib.suppress(ConnectionResetError, websockets.ConnectionClosed):
                await ws.close()
        return frames

    frames = asyncio.run(main())
    assert [f["type"] for f in frames] == ["error", "error", "error", "error", "observation"]
    assert frames[3]["data"]["message"].startswith("unknown task")
    assert frames[4]["data"]["observation"]["error"] == "no_episode"
    assert httpx.get(f"{server}/health").status_code == 200


def test_session_cap_gives_a_clear_error(tmp_path):
    with running_server(f"sqlite:///{tmp_path / 'cap.db'}", "--max-sessions", "2") as url:
        ws_url = url.replace("http://", "ws://") + "/ws"

        async def main() -> dict:
            async with websockets.connect(ws_url) as a, websockets.connect(ws_url) as b:
                for ws in (a, b):
                    await ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
                    assert json.loads(await ws.recv())["type"] == "observation"
                async with websockets.connect(ws_url) as c:
                    return json.loads(await c.recv())

        frame = asyncio.run(main())
        assert frame["type"] == "error" and frame["data"]["code"] == "CAPACITY_REACHED"
        assert "2" in frame["data"]["message"]
        assert httpx.get(f"{url}/health").status_code == 200


def test_typed_client_sync_form(server):
    with CompanyOSClient(server).sync() as env:
        result = env.reset(seed=16, task_id="expense_report")
        assert isinstance(result.observation, CompanyOSObservation)
        result = env.call("datahub", "query_metric", metric_name="expense_amount")
        assert result.observation.step == 1 and result.reward is not None
        state = env.state()
        assert state.episode_id == result.observation.episode_id and state.step_count == 1


# ---------------------------------------------------------------------------- OpenEnv tooling

ROOT = Path(__file__).resolve().parents[1]


def _openenv(*args: str) -> Any:
    import shutil
    import subprocess
    import sys

    exe = shutil.which("openenv") or str(Path(sys.executable).parent / "openenv")
    return subprocess.run([exe, "validate", *args], capture_output=True, text=True, timeout=120)


def test_openenv_validate_passes_on_the_repo():
    done = _openenv("--json", str(ROOT))
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["passed"] is True


def test_openenv_validate_passes_on_the_running_server(server):
    done = _openenv("--url", server)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["passed"], json.dumps(report["criteria"], indent=1)
    assert report["mode"] == "simulation"


def test_the_conventional_entry_point_serves(tmp_path):
    """`uvicorn server.app:app` (OpenEnv's convention, used by `openenv serve` and Spaces)."""
    import os

    os.environ["COMPANYOS_STORE"] = f"sqlite:///{tmp_path / 'conv.db'}"
    try:
        with running_server("", module="server.app:app") as url:
            r = httpx.post(f"{url}/reset", json={"seed": 1})
            assert r.status_code == 200 and r.json()["observation"]["episode_id"]
    finally:
        del os.environ["COMPANYOS_STORE"]


def test_mcp_over_the_websocket_session(server):
    """OpenEnv's `mcp` WebSocket message: JSON-RPC on the session's own environment."""
    ws_url = server.replace("http://", "ws://") + "/ws"

    async def main() -> list[dict]:
        async with websockets.connect(ws_url) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 17, "task_id": 0}}))
            eid = json.loads(await ws.recv())["data"]["observation"]["episode_id"]
            replies = []
            for i, (name, args) in enumerate(
                [
                    ("tools/list", {}),
                    (
                        "tools/call",
                        {"name": "ticketdesk_get_ticket", "arguments": {"ticket_id": "TKT-0001"}},
                    ),
                ]
            ):
                await ws.send(
                    json.dumps(
                        {
                            "type": "mcp",
                            "data": {"jsonrpc": "2.0", "method": name, "params": args, "id": i},
                        }
                    )
                )
                replies.append(json.loads(await ws.recv())["data"])
            replies.append({"episode_id": eid})
            return replies

    listed, called, ids = asyncio.run(main())
    assert len(listed["result"]["tools"]) == len(BY_NAME) + 1
    assert called["result"]["episode_id"] == ids["episode_id"] and called["result"]["step"] == 1
