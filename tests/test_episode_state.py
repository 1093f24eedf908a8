"""`GET /episodes/{id}/state` without a step answers from the episode's fold as loaded (its
snapshot and the events after it) and the stream's tail, not from a replay of the whole
stream: the answer must be the replay's, for every kind of episode."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from companyos.api import CompanyOSEnvironment
from companyos.api.episode import SNAPSHOT_EVERY
from companyos.api.episode_state import TAIL, latest_state, state_at
from companyos.api.server import build_app
from companyos.api.settings import Settings
from companyos.domain import FAMILY_NAMES
from companyos.events import EventStore, InMemoryEventStore
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.events.types import ChaosInjected

from .strategies import ORACLE, action, call_for


def _same_as_replay(store: EventStore, episode_id: str) -> dict:
    fast = latest_state(store, episode_id)
    assert fast == state_at(store.read(episode_id), episode_id, None)
    return fast


def _play(env: CompanyOSEnvironment, actions: list, **reset: object) -> str:
    env.reset(**reset)
    for a in actions:
        ep = env.episode
        assert ep is not None
        a = call_for(a, ep.world)
        if env.step(a).done:
            break
    assert env.episode is not None
    return env.episode.id


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    task=st.integers(0, len(FAMILY_NAMES) - 1),
    difficulty=st.integers(0, 3),
    profile=st.sampled_from(["default", "original", "original_per_action"]),
    max_steps=st.integers(1, 40),
    actions=st.lists(action, max_size=45),
    fork_at=st.none() | st.integers(0, 45),
    then=st.lists(action, max_size=10),
)
def test_the_latest_state_is_the_replay_s(
    seed, task, difficulty, profile, max_steps, actions, fork_at, then
):
    """Random play of every family, reward profile and length (ended or running, timed out,
    no call at all), then a fork of it and more play."""
    store = InMemoryEventStore()
    env = CompanyOSEnvironment(store)
    reset = dict(seed=seed, task_id=task, difficulty=difficulty, max_steps=max_steps)
    eid = _play(env, actions, reward_profile=profile, **reset)
    state = _same_as_replay(store, eid)
    if fork_at is not None:
        # An episode that has ended is forked before its last step.
        at = min(fork_at, state["steps"] - (state["outcome"] is not None))
        env.reset(fork_from=eid, at_step=at)
        for a in then:
            ep = env.episode
            assert ep is not None
            if env.step(call_for(a, ep.world)).done:
                break
        assert env.episode is not None
        _same_as_replay(store, env.episode.id)


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_long_abandoned_and_refused_episodes(tmp_path, backend):
    """Past a snapshot (more than `SNAPSHOT_EVERY` events), with a last step whose events
    outnumber the first tail read, abandoned by a new reset, and with a refused call."""
    store: EventStore = (
        InMemoryEventStore()
        if backend == "memory"
        else SQLEventStore(sqlite_url(tmp_path / "s.db"))
    )
    env = CompanyOSEnvironment(store)
    env.reset(seed=3, task_id=2, difficulty=1, max_steps=400)
    for _ in range(SNAPSHOT_EVERY):
        env.step({"app": "ticketdesk", "method": "list_tickets"})
    assert env.episode is not None
    long_id = env.episode.id
    assert store.load_snapshot(long_id) is not None  # the load starts from a snapshot
    state = _same_as_replay(store, long_id)
    assert state["steps"] == SNAPSHOT_EVERY and state["outcome"] is None

    # A refusal (a call naming another episode) is a step of the session's own episode.
    env.step({"app": "ticketdesk", "method": "list_tickets", "episode_id": "someone-else"})
    assert _same_as_replay(store, long_id)["last_call"]["method"] == "list_tickets"

    env.reset(seed=4, task_id=0, difficulty=0)  # abandons the long episode
    assert _same_as_replay(store, long_id)["outcome"] == "abandoned"
    assert _same_as_replay(store, env.episode.id)["steps"] == 0  # type: ignore[union-attr]

    # A stream whose last call lies further back than the first read of its tail (widened):
    # records after the last step, which no fold reads (only caches and markers sit there in
    # a stream the environment wrote).
    env.reset(seed=5, task_id=2, difficulty=1, max_steps=400)
    ep = env.episode
    assert ep is not None
    env.step({"app": "ticketdesk", "method": "list_tickets"})
    for _ in range(TAIL * 2):
        store.extend(ep.id, [_padding()], store.version(ep.id))
    assert _same_as_replay(store, ep.id)["last_call"]["method"] == "list_tickets"
    store.close()


def _padding() -> ChaosInjected:
    return ChaosInjected(kind="approval_sla", target="approvalflow", params={"minutes": 1})


def test_the_route_answers_the_latest_state_and_a_404(tmp_path):
    """Through the server, whose cache holds the episode once it has served it: a step made
    by another process (here another store on the same file) is in the next answer."""
    url = sqlite_url(tmp_path / "r.db")
    store = SQLEventStore(url)
    env = CompanyOSEnvironment(store)
    eid = _play(env, [ORACLE] * 2, seed=1, task_id=0, difficulty=0)
    with TestClient(build_app(Settings(store=url))) as http:
        assert http.get(f"/episodes/{eid}/state").json() == state_at(store.read(eid), eid, None)
        env.step({"app": "ticketdesk", "method": "list_tickets"})  # the other process
        after = http.get(f"/episodes/{eid}/state").json()
        assert after == state_at(store.read(eid), eid, None)
        assert after["steps"] == 3 and after["last_call"]["method"] == "list_tickets"
        gone = http.get("/episodes/no-such-episode/state")
        assert gone.status_code == 404
        assert "list them at GET /episodes" in gone.json()["detail"]
    store.close()
