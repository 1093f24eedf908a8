"""The optional API key (`COMPANYOS_API_KEY` / `--api-key`): with it set, every route but
`/health` refuses a request without the key (401) or with a wrong one (403), with a message
saying what to send; WebSockets (`/ws`, `/mcp`) are closed with 1008 (policy violation) and that
message as the reason. With the key (`Authorization: Bearer`, `X-API-Key`, or `?api_key=` on a
socket) everything works as without a key: HTTP, `/ws`, OpenEnv's JSON-RPC `/mcp`, the
standard MCP server, the docs."""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets
import websockets.sync.client as ws_client

from companyos.api import auth
from companyos.api.client import CompanyOSClient

from . import ledger
from .serving import ServerProcess

pytestmark = pytest.mark.reliability

KEY = "k3y-for-tests-0123456789"
PHASE = "access: API key on every route but /health"
BODIES: dict[str, Any] = {
    "/reset": {"seed": 1},
    "/step": {"action": {"app": "ticketdesk", "method": "list_tickets"}},
    "/mcp": {"jsonrpc": "2.0", "method": "tools/list", "id": 1},
    "/episodes/{episode_id}/fork": {"at_step": 0},
}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: Any) -> Iterator[str]:
    where = tmp_path_factory.mktemp("auth")
    server = ServerProcess(
        f"sqlite:///{where / 'auth.db'}", env={"COMPANYOS_API_KEY": KEY}, log=where / "server.log"
    )
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
        log = (where / "server.log").read_text()
        assert KEY not in log and "Traceback" not in log, log[-3000:]


def _routes(url: str) -> list[tuple[str, str]]:
    schema = httpx.get(f"{url}/openapi.json", headers={"X-API-Key": KEY}).json()
    routes = [(m.upper(), p) for p, ops in schema["paths"].items() for m in ops]
    extra = [
        ("GET", "/docs"),
        ("GET", "/redoc"),
        ("GET", "/openapi.json"),
        ("POST", "/mcp-server/"),
    ]
    return routes + extra


def _call(
    http: httpx.Client, method: str, path: str, eid: str, headers: dict[str, str]
) -> httpx.Response:
    body = BODIES.get(path)
    concrete = path.replace("{episode_id}", eid)
    params = {"episode_id": eid} if path in ("/render", "/state") else None
    return http.request(method, concrete, json=body, params=params, headers=headers)


def test_every_route_but_health_needs_the_key(guarded):
    with httpx.Client(base_url=guarded, timeout=30) as http:
        assert http.get("/health").status_code == 200
        eid = http.post("/reset", json={"seed": 2}, headers={"X-API-Key": KEY}).json()[
            "observation"
        ]["episode_id"]
        refused = 0
        routes = _routes(guarded)
        assert len(routes) >= 18
        for method, path in routes:
            if path == "/health":
                continue
            missing = _call(http, method, path, eid, {})
            assert missing.status_code == 401, (method, path, missing.text)
            assert missing.json()["detail"] == auth.MISSING
            assert missing.headers["www-authenticate"].startswith("Bearer")
            wrong = _call(http, method, path, eid, {"X-API-Key": KEY + "x"})
            assert wrong.status_code == 403 and wrong.json()["detail"] == auth.WRONG
            bearer_wrong = _call(http, method, path, eid, {"Authorization": f"Bearer {KEY[:-1]}"})
            assert bearer_wrong.status_code == 403
            # A key in the query string is for sockets only: over HTTP it is no key at all.
            query = http.request(method, path.replace("{episode_id}", eid), params={"api_key": KEY})
            assert query.status_code == 401
            refused += 4
            for headers in ({"Authorization": f"Bearer {KEY}"}, {"X-API-Key": KEY}):
                ok = _call(http, method, path, eid, headers)
                assert ok.status_code not in (401, 403) and ok.status_code < 500, (
                    method,
                    path,
                    ok.status_code,
                    ok.text[:300],
                )
    ledger.record(PHASE, limits=refused, note="401 without the key, 403 with a wrong one")


@pytest.mark.parametrize("path", ["/ws", "/mcp"])
def test_sockets_without_the_key_are_closed_with_a_policy_code(guarded, path):
    ws_url = guarded.replace("http://", "ws://") + path
    for suffix, headers, reason in [
        ("", None, auth.MISSING),
        ("?api_key=nope", None, auth.WRONG),
        ("", {"X-API-Key": "nope"}, auth.WRONG),
    ]:
        with ws_client.connect(ws_url + suffix, additional_headers=headers) as ws:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                ws.recv(timeout=30)
            assert closed.value.rcvd is not None
            assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1008, reason)
    ledger.record(PHASE, limits=3)


def test_sockets_with_the_key_play(guarded):
    ws_url = guarded.replace("http://", "ws://")
    for suffix, headers in [
        ("/ws", {"Authorization": f"Bearer {KEY}"}),
        ("/ws", {"X-API-Key": KEY}),
        (f"/ws?api_key={KEY}", None),
    ]:
        with ws_client.connect(ws_url + suffix, additional_headers=headers) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 4}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
            ws.send(
                json.dumps({"type": "step", "data": {"app": "datahub", "method": "list_metrics"}})
            )
            assert json.loads(ws.recv(timeout=30))["data"]["observation"]["step"] == 1
    with ws_client.connect(f"{ws_url}/mcp?api_key={KEY}") as ws:
        ws.send(json.dumps({"jsonrpc": "2.0", "method": "tools/list", "id": 1}))
        assert json.loads(ws.recv(timeout=30))["result"]["tools"]


def test_the_clients_pass_the_key(guarded):
    with CompanyOSClient(guarded, api_key=KEY).sync() as env:
        result = env.reset(seed=6, task_id=0)
        result = env.call("ticketdesk", "get_ticket", ticket_id="TKT-1042")
        assert result.observation.step == 1
    with pytest.raises(websockets.ConnectionClosed), CompanyOSClient(guarded).sync() as env:
        env.reset(seed=6)

    from fastmcp import Client

    async def mcp() -> dict[str, Any]:
        async with Client(f"{guarded}/mcp-server/", auth=KEY) as client:
            out = await client.call_tool("companyos_reset", {"seed": 7, "task_id": 0})
            return dict(out.structured_content or {})

    assert asyncio.run(mcp())["episode_id"]


def test_keys_are_compared_in_constant_time(monkeypatch):
    """Through `hmac.compare_digest` on SHA-256 digests: equal-length inputs whatever the key
    presented, so neither its content nor its length shows in the time taken."""
    seen: list[tuple[bytes, bytes]] = []
    compare = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return compare(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    guard = auth.ApiKeyGuard(app=None, key=KEY)
    assert guard.accepts(KEY.encode()) and not guard.accepts(b"x") and not guard.accepts(b"x" * 999)
    assert len(seen) == 3 and all(len(a) == len(b) == 32 for a, b in seen)
