"""The LLM agent's raw replies in the event log: each call it makes carries the reply it was
read from, and the environment appends that as an `AgentReplied` event to the stream
``replies:<episode id>`` before the call's own events. The episode itself (its events, seqs,
rewards, replay and re-simulation) is exactly what the same calls make without replies, and
the agent's observation is the same. A bad reply is refused before anything is written."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from companyos.agents import play
from companyos.agents.llm import reply_of
from companyos.api import CompanyOSEnvironment
from companyos.api.verify import verify_episode
from companyos.events.sql import sqlite_url
from companyos.events.types import AgentReplied, ToolCalled, replies_stream
from companyos.projections.replay import replay

from .audit import audit_store
from .fake_llm import fake_endpoint, tool
from .serving import running_server
from .test_llm_agent import INSTANCE, agent_for

SCRIPT = [
    tool("ticketdesk_list_tickets"),
    (
        "text",
        'Reading it. <tool_call>{"name": "ticketdesk_get_ticket", "arguments": '
        '{"ticket_id": "TKT-1"}}</tool_call>',
    ),
    ("text", "I am not sure."),
    tool("datahub_list_metrics"),
]


class Recording:
    """An environment that keeps every observation the agent was shown."""

    def __init__(self, env: CompanyOSEnvironment) -> None:
        self.env, self.shown, self.actions = env, [], []

    def reset(self, **options: Any) -> Any:
        obs = self.env.reset(**options)
        self.shown.append(obs.model_dump())
        return obs

    def step(self, action: Any) -> Any:
        self.actions.append(action)
        obs = self.env.step(action)
        self.shown.append(obs.model_dump())
        return obs


def body(events: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """The episode's events without its id and agent label (two runs differ only there)."""
    out = []
    for e in events:
        payload = {k: v for k, v in e.payload().items() if k not in ("episode_id", "agent")}
        out.append((e.type, payload))
    return out


def test_replies_are_logged_beside_the_episode_and_change_nothing_in_it():
    with fake_endpoint(SCRIPT) as (url, _):
        env = Recording(CompanyOSEnvironment())
        result = play(env, agent_for(url), max_steps=4, **INSTANCE)
    store, eid = env.env.store, result.episode_id
    replies = [r.event for r in store.read(replies_stream(eid))]
    assert [type(e) for e in replies] == [AgentReplied] * 4
    assert [e.step for e in replies] == [1, 2, 3, 4] and {e.episode_id for e in replies} == {eid}
    # The raw reply as the model wrote it: text, the server's tool calls, tokens and time.
    assert replies[1].content == SCRIPT[1][1] and replies[1].tool_calls is None
    assert replies[2].content == "I am not sure."
    assert json.loads(replies[0].tool_calls)[0]["name"] == "ticketdesk_list_tickets"
    assert all(e.prompt_tokens == 1 and e.latency_s >= 0 for e in replies)
    # Each reply is written before the call it became (global positions).
    calls = [r for r in store.read(eid) if isinstance(r.event, ToolCalled)]
    positions = [r.position for r in store.read(replies_stream(eid))]
    assert all(p < c.position for p, c in zip(positions, calls, strict=True))
    assert all(p > c.position for p, c in zip(positions[1:], calls, strict=False))

    # The same calls without replies: the same episode, event for event, and the same
    # observations shown to the agent.
    bare = Recording(CompanyOSEnvironment())
    bare.reset(**INSTANCE, max_steps=4)
    for action in env.actions:
        bare.step({k: v for k, v in action.items() if k != "reply"})
    assert (
        body([r.event for r in store.read(eid)])[1:]
        == body([r.event for r in bare.env.store.read(bare.env.episode.id)])[1:]
    )
    other = bare.env.episode.id
    assert [json.dumps(o).replace(eid, "-") for o in env.shown] == [
        json.dumps(o).replace(other, "-") for o in bare.shown
    ]
    assert bare.env.store.version(replies_stream(bare.env.episode.id)) == -1
    # Replay and re-simulation read the episode's stream only.
    assert replay(store.read(eid)).total == pytest.approx(result.total_return)
    assert verify_episode(store, eid).ok
    audit = audit_store(store)
    assert audit.clean and audit.episodes == 1 and audit.streams == 2, audit.problems()


def test_a_bad_reply_is_refused_before_anything_is_written():
    env = CompanyOSEnvironment()
    obs = env.reset(**INSTANCE)
    before = env.store.version(obs.episode_id)
    call = {"app": "datahub", "method": "list_metrics", "params": {}}
    bad_replies = ({"content": 3}, {"content": "x", "mood": "good"}, {"latency_s": -1}, "text")
    # The one input rule holds for replies too: nothing a store cannot keep reaches the log.
    hostile = ({"content": "a\x00b"}, {"error": "\ud800"}, {"latency_s": float("inf")})
    for bad in (*bad_replies, *hostile, {"latency_s": False}, {"prompt_tokens": 2.0}):
        with pytest.raises(ValidationError):
            env.step({**call, "reply": bad})
    assert env.store.version(obs.episode_id) == before
    assert env.store.version(replies_stream(obs.episode_id)) == -1


def test_replies_over_http(tmp_path):
    """The reply travels in the action over HTTP; a bad one is a 422 that changes nothing."""
    with running_server(sqlite_url(tmp_path / "s.db")) as url:
        started = httpx.post(f"{url}/reset", json=INSTANCE).json()
        eid = started["observation"]["episode_id"]
        call = {"app": "datahub", "method": "list_metrics", "params": {}, "episode_id": eid}
        bad = httpx.post(f"{url}/step", json={"action": {**call, "reply": {"content": 1}}})
        assert bad.status_code == 422
        ok = httpx.post(f"{url}/step", json={"action": {**call, "reply": {"content": "hi"}}})
        assert ok.status_code == 200 and ok.json()["observation"]["step"] == 1
        assert "reply" not in json.dumps(ok.json()["observation"])
        events = httpx.get(f"{url}/episodes/{eid}/events").json()["events"]
        assert sum(e["type"] == "ToolCalled" for e in events) == 1
        assert not any(e["type"] == "AgentReplied" for e in events)


def test_the_agent_logs_what_a_model_wrote_escaped():
    """A model can write a NUL or a lone surrogate; the agent's reply keeps them escaped, so
    the step is taken and the log keeps the reply."""
    entry = {"content": "a\x00b\ud800", "error": "\x00", "latency_s": float("nan")}
    reply = reply_of(entry)
    assert reply["content"] == "a\\x00b\\ud800" and "latency_s" not in reply
    env = CompanyOSEnvironment()
    obs = env.reset(**INSTANCE)
    env.step({"app": "datahub", "method": "list_metrics", "params": {}, "reply": reply})
    logged = list(env.store.read(replies_stream(obs.episode_id)))
    assert len(logged) == 1 and logged[0].event.content == reply["content"]
