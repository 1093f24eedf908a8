"""One test per bug the fuzzers found, as the request that found it: each used to get a 500, a
503 for a client mistake, a dropped session or a silently wrong answer; now a clear 4xx (or an
error frame) that changes nothing else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets.sync.client as ws_client

from .serving import running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: Any) -> Iterator[str]:
    where = tmp_path_factory.mktemp("regressions")
    with running_server(f"sqlite:///{where / 'r.db'}", log=where / "server.log") as url:
        yield url
    log = (where / "server.log").read_text()
    assert "Traceback" not in log, log[-3000:]


@pytest.fixture(scope="module")
def http(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=30) as client:
        yield client


def started(http: httpx.Client, **options: Any) -> str:
    r = http.post("/reset", json={"seed": 1, **options})
    assert r.status_code == 200, r.text
    return str(r.json()["observation"]["episode_id"])


def test_numbers_past_the_store_columns_are_422_not_500(http):
    eid = started(http)
    for path, params in [
        ("/episodes", {"after": 2**70}),
        (f"/episodes/{eid}/events", {"from_seq": 2**70}),
        (f"/episodes/{eid}/state", {"step": 2**40}),
    ]:
        r = http.get(path, params=params)
        assert r.status_code == 422, (path, r.status_code, r.text)
    r = http.post(f"/episodes/{eid}/fork", json={"at_step": 2**70})
    assert r.status_code == 422


def test_an_unhashable_action_type_is_a_422_and_an_error_frame(http, server):
    r = http.post("/step", json={"action": {"metadata": {}, "type": {}}})
    assert r.status_code == 422 and isinstance(r.json()["detail"], list)
    with ws_client.connect(server.replace("http://", "ws://") + "/ws") as ws:
        ws.send(json.dumps({"type": "step", "data": {"type": ["x"]}}))
        reply = json.loads(ws.recv(timeout=30))
        assert reply["data"]["code"] == "VALIDATION_ERROR", reply
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=30))["type"] == "state"


@pytest.mark.parametrize("key", ["self", "func", "session_id"])
def test_keys_named_like_the_servers_own_parameters_are_not_a_500(http, server, key):
    r = http.post("/reset", json={key: 1})
    assert r.status_code == 400 and "unknown reset option" in r.json()["detail"]
    eid = started(http)
    action = {"app": "ticketdesk", "method": "list_tickets", "episode_id": eid}
    r = http.post("/step", json={"action": action, key: 1, "render": True})
    assert r.status_code == 200 and r.json()["observation"]["step"] == 1
    with ws_client.connect(server.replace("http://", "ws://") + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {key: 1}}))
        reply = json.loads(ws.recv(timeout=30))
        assert "unknown reset option" in reply["data"]["message"], reply


@pytest.mark.parametrize(
    "options",
    [
        {"fork_from": {}, "at_step": 0},
        {"fork_from": 5, "at_step": 0},
        {"reward_profile": [1]},
        {"reward_profile": ""},
    ],
    ids=["fork_from-object", "fork_from-number", "profile-list", "profile-empty"],
)
def test_reset_options_of_the_wrong_type_are_400(http, options):
    r = http.post("/reset", json=options)
    assert r.status_code == 400, r.text
    assert r.json()["detail"]


def test_an_episode_id_taken_is_a_409_conflict(http):
    eid = started(http)
    r = http.post("/reset", json={"episode_id": eid})
    assert r.status_code == 409 and "already exists" in r.json()["detail"]
    r = http.post(f"/episodes/{eid}/fork", json={"at_step": 0, "episode_id": eid})
    assert r.status_code == 409


def test_expected_step_false_is_not_step_zero(http):
    eid = started(http)
    action = {"app": "ticketdesk", "method": "list_tickets", "episode_id": eid}
    r = http.post("/step", json={"action": {**action, "expected_step": False}})
    assert r.status_code == 422 and "boolean" in r.text
    assert http.get(f"/episodes/{eid}").json()["steps"] == 0


@pytest.mark.parametrize(
    ("frame", "says"),
    [
        ("[]", "not an array"),
        ("5", "not a number"),
        ("null", "not null"),
        (b"\x00binary", "binary frames"),
        ("[" * 50_000 + "]" * 50_000, "nests too deeply"),
        ('{"type": "reset", "data": {"seed": ' + "9" * 10_000 + "}}", "not acceptable JSON"),
    ],
    ids=["array", "number", "null", "binary", "deep", "huge-int"],
)
def test_frames_that_once_dropped_the_session_get_an_error_frame(server, frame, says):
    with ws_client.connect(server.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 2}}))
        eid = json.loads(ws.recv(timeout=30))["data"]["observation"]["episode_id"]
        ws.send(frame)
        reply = json.loads(ws.recv(timeout=30))
        assert reply["type"] == "error" and says in reply["data"]["message"], reply
        # The same session, the same episode: nothing else changed.
        ws.send(
            json.dumps({"type": "step", "data": {"app": "ticketdesk", "method": "list_tickets"}})
        )
        obs = json.loads(ws.recv(timeout=30))["data"]["observation"]
        assert obs["episode_id"] == eid and obs["step"] == 1


def test_mcp_socket_answers_a_non_object_with_a_json_rpc_error(server):
    with ws_client.connect(server.replace("http://", "ws://") + "/mcp") as ws:
        ws.send("[1, 2]")
        reply = json.loads(ws.recv(timeout=30))
        assert reply["error"]["code"] == -32600 and reply["id"] is None
        ws.send(json.dumps({"jsonrpc": "2.0", "method": "tools/list", "id": 1}))
        assert "result" in json.loads(ws.recv(timeout=30))


@pytest.mark.parametrize("seed", [False, True, "7", "seven"])
def test_a_seed_that_is_no_number_is_refused_not_turned_into_one(http, seed):
    r = http.post("/reset", json={"seed": seed, "task_id": 0})
    assert r.status_code == 422 and "seed must be an integer" in r.text, r.text


def test_a_seed_given_as_a_whole_json_float_is_that_integer(http):
    r = http.post("/reset", json={"seed": 7.0, "task_id": 0})
    assert r.status_code == 200 and r.json()["observation"]["seed"] == 7


def test_a_query_parameter_given_twice_is_a_422_not_the_last_value(http):
    eid = started(http)
    r = http.get(f"/episodes/{eid}/state?step=.exe&step=+0.0")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "step"]
    assert "once" in r.json()["detail"][0]["msg"]
    r = http.get("/episodes?limit=5&limit=6&outcome=running")
    assert r.status_code == 422
    assert http.get(f"/episodes/{eid}/state?step=0").status_code == 200
