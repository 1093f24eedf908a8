"""Two keys, two roles (`--api-key` for the trainer, `--agent-key` for the agent): the agent's
key reaches only what an agent acts through, with nothing of the grader, against a real
server. Before, an agent holding the one key (or any client of an open server) could read its
own episode's goal from `GET /episodes/{id}/events`, its progress from `/state` or its session's
`state` message, list every episode and act in them, or reset with a curriculum or a fork."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets.sync.client as ws_client

from companyos.api.roles import AGENT_PATHS, reaches
from companyos.api.settings import Settings

from .serving import ServerProcess

TRAINER = "trainer-key-0123456789"
AGENT = "agent-key-9876543210"


@pytest.fixture(scope="module")
def server(tmp_path_factory: Any) -> Iterator[str]:
    where = tmp_path_factory.mktemp("roles")
    proc = ServerProcess(
        f"sqlite:///{where / 'roles.db'}",
        env={"COMPANYOS_API_KEY": TRAINER, "COMPANYOS_AGENT_KEY": AGENT},
        log=where / "server.log",
    )
    proc.start()
    try:
        yield proc.url
    finally:
        proc.stop()
        log = (where / "server.log").read_text()
        assert AGENT not in log and "Traceback" not in log, log[-3000:]


def as_agent(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"X-API-Key": AGENT}, timeout=30)


def as_trainer(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"X-API-Key": TRAINER}, timeout=30)


def test_the_agent_plays_through_reset_and_step(server):
    agent = as_agent(server)
    obs = agent.post("/reset", json={"seed": 3, "task_id": "expense_report"}).json()
    eid = obs["observation"]["episode_id"]
    step = agent.post(
        "/step",
        json={"action": {"app": "ticketdesk", "method": "list_tickets", "episode_id": eid}},
    )
    assert step.status_code == 200 and step.json()["observation"]["step"] == 1
    assert agent.get("/manifest").status_code == 200
    assert agent.get("/schema").status_code == 200


@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "/state"),
        ("GET", "/episodes"),
        ("GET", "/episodes/{eid}"),
        ("GET", "/episodes/{eid}/events"),
        ("GET", "/episodes/{eid}/state"),
        ("GET", "/episodes/{eid}/timeline"),
        ("POST", "/episodes/{eid}/fork"),
        ("POST", "/episodes/{eid}/verify"),
        ("GET", "/render"),
        ("POST", "/analytics/query"),
        ("GET", "/analytics/report"),
        ("GET", "/viewer/"),
        ("GET", "/original/render"),
        ("POST", "/original/reset"),
        ("GET", "/openapi.json"),
        ("GET", "/docs"),
    ],
)
def test_the_grader_and_other_episodes_are_the_trainers(server, method, path):
    trainer = as_trainer(server)
    eid = trainer.post("/reset", json={"seed": 4}).json()["observation"]["episode_id"]
    url = path.format(eid=eid)
    body = {"at_step": 0} if url.endswith("/fork") else {"name": "x"} if "query" in url else None
    refused = as_agent(server).request(method, url, json=body)
    assert refused.status_code == 403 and "agent" in refused.json()["detail"], url
    allowed = trainer.request(method, url, json=body)
    assert allowed.status_code != 403, url


@pytest.mark.parametrize(
    "option",
    [
        {"show_progress": True},
        {"fork_from": "x", "at_step": 1},
        {"max_steps": 900},
        {"reward_profile": "original"},
        {"agent": "someone"},
    ],
)
def test_an_agents_reset_chooses_only_the_task(server, option):
    agent = as_agent(server)
    refused = agent.post("/reset", json={"seed": 1, **option})
    assert refused.status_code == 403 and "trainer" in refused.json()["detail"]
    assert as_trainer(server).post("/reset", json={"seed": 1, **option}).status_code != 403
    with ws_client.connect(f"{server.replace('http', 'ws')}/ws?api_key={AGENT}") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1, **option}}))
        answer = json.loads(ws.recv())
        assert answer["type"] == "error" and "trainer" in answer["data"]["message"]
        # The session carries on: a plain reset and a step work.
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1, "task_id": "expense_report"}}))
        assert json.loads(ws.recv())["type"] == "observation"


def test_an_agents_session_has_no_state_message(server):
    with ws_client.connect(f"{server.replace('http', 'ws')}/ws?api_key={AGENT}") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 2, "task_id": "expense_report"}}))
        assert json.loads(ws.recv())["type"] == "observation"
        ws.send(json.dumps({"type": "state"}))
        answer = json.loads(ws.recv())
        assert answer["type"] == "error" and "not for agents" in answer["data"]["message"]
        ws.send(
            json.dumps({"type": "step", "data": {"app": "ticketdesk", "method": "list_tickets"}})
        )
        assert json.loads(ws.recv())["data"]["observation"]["step"] == 1
    with ws_client.connect(f"{server.replace('http', 'ws')}/ws?api_key={TRAINER}") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 2}}))
        ws.recv()
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv())["type"] == "state"


def test_every_route_is_either_the_agents_or_the_trainers(server):
    """The agent's surface is a short list; every other route of the OpenAPI schema is refused
    to its key (so a route added later is the trainer's until someone decides otherwise)."""
    schema = as_trainer(server).get("/openapi.json").json()
    agent = as_agent(server)
    for path, ops in schema["paths"].items():
        if "{" in path or path == "/health":
            continue
        for method in ops:
            if method.upper() not in ("GET", "POST"):
                continue
            status = agent.request(method.upper(), path, json={}).status_code
            assert (status == 403) is (not reaches(path)), (method, path, status)
    assert {"/reset", "/step", "/ws"} <= AGENT_PATHS


def test_an_agent_key_needs_a_trainer_key():
    with pytest.raises(ValueError, match="trainer key"):
        Settings(agent_key="a")
    with pytest.raises(ValueError, match="differ"):
        Settings(api_key="same", agent_key="same")
