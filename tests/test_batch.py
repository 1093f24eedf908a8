"""The batched API (issue 17): many episodes reset and stepped in one call, in-process and in
one /ws message through the typed client; each call applied exactly as alone (same logs), a
call naming an episode outside the session's batch refused without writing anything."""

from __future__ import annotations

import asyncio

import pytest

from companyos.api import CompanyOSEnvironment
from companyos.api.client import CompanyOSClient
from companyos.domain import plan
from companyos.events import StoreError, first_broken_link
from companyos.events.sql import SQLEventStore, sqlite_url

from .helpers import failing_commit
from .serving import running_server


def _calls(env: CompanyOSEnvironment, ids: list[str]) -> list[dict]:
    out = []
    for eid in ids:
        ep = env._batch[eid]
        call = plan(ep.world)
        action = call.as_action() if call else {"app": "ticketdesk", "method": "list_tickets"}
        out.append({**action, "episode_id": eid})
    return out


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_batch_gives_the_logs_of_episodes_played_alone(store, tmp_path):
    # On SQLite each message's steps are made durable together (`deferred_commit`).
    env = CompanyOSEnvironment(
        SQLEventStore(sqlite_url(tmp_path / "b.db")) if store == "sqlite" else None
    )
    resets = [{"seed": 40 + i, "task_id": i % 5, "difficulty": i % 4} for i in range(8)]
    ids = [o.episode_id for o in env.reset_batch(resets)]
    assert env.episode is None  # the session's own episode is untouched
    played: dict[str, list[dict]] = {eid: [] for eid in ids}
    live = list(ids)
    while live:
        calls = _calls(env, live)
        for c in calls:
            played[c["episode_id"]].append({k: v for k, v in c.items() if k != "episode_id"})
        results = env.step_batch(calls)
        live = [c["episode_id"] for c, o in zip(calls, results, strict=True) if not o.done]
    for options, eid in zip(resets, ids, strict=True):
        alone = CompanyOSEnvironment()
        alone.reset(**options)
        for a in played[eid]:
            alone.step(a)
        assert alone.episode is not None
        assert [r.hash for r in env.store.read(eid)] == [
            r.hash for r in alone.store.read(alone.episode.id)
        ]


def test_a_batch_the_store_fails_to_keep_leaves_the_episodes_as_the_store_has_them(tmp_path):
    store = SQLEventStore(sqlite_url(tmp_path / "b.db"))
    env = CompanyOSEnvironment(store)
    ids = [o.episode_id for o in env.reset_batch([{"seed": 5}, {"seed": 6}])]
    env.step_batch(_calls(env, ids))  # one step each, kept
    versions = [store.version(eid) for eid in ids]
    with failing_commit(store), pytest.raises(StoreError):  # the disk fails at the commit
        env.step_batch(_calls(env, ids))
    assert [store.version(eid) for eid in ids] == versions  # nothing of the failed message
    for eid in ids:  # our copies are the store's again: step 1, and the next step is step 2
        assert env._batch[eid].world.step == 1
    out = env.step_batch(_calls(env, ids))
    assert [o.step for o in out] == [2, 2] and [o.error for o in out] == [None, None]
    for eid in ids:
        assert first_broken_link(store.read(eid)) is None
        assert [r.event.step for r in store.read(eid) if r.type == "ToolCalled"] == [1, 2]


def test_a_call_outside_the_batch_is_refused_and_writes_nothing():
    env = CompanyOSEnvironment()
    other = CompanyOSEnvironment(env.store)
    stranger = other.reset(seed=1).episode_id
    ids = [o.episode_id for o in env.reset_batch([{"seed": 2}])]
    before = env.store.version(stranger)
    out = env.step_batch(
        [
            {"episode_id": stranger, "app": "ticketdesk", "method": "list_tickets"},
            {"app": "ticketdesk", "method": "list_tickets"},
            {"episode_id": ids[0], "app": "ticketdesk", "method": "list_tickets"},
        ]
    )
    assert [o.error for o in out] == ["not_in_batch", "not_in_batch", None]
    assert env.store.version(stranger) == before


def test_bad_batch_resets_say_which_item():
    env = CompanyOSEnvironment()
    with pytest.raises(ValueError, match=r"batch\[1\]"):
        env.reset_batch([{"seed": 1}, {"seed": -5}])
    assert env.store.streams() == []  # all or nothing: the good item was not started either
    with pytest.raises(ValueError, match="only batch"):
        env.reset(seed=3, batch=[{"seed": 1}])


def test_one_ws_message_each_way_through_the_typed_client(tmp_path):
    async def play(url: str) -> list[int]:
        async with CompanyOSClient(url) as client:
            started = await client.reset_batch([{"seed": s, "task_id": 0} for s in range(16)])
            ids = [r.observation.episode_id for r in started]
            steps = [{"episode_id": e, "app": "ticketdesk", "method": "list_tickets"} for e in ids]
            await client.step_batch(steps)
            results = await client.step_batch(steps)
            return [r.observation.step for r in results]

    with running_server("memory://") as url:
        assert asyncio.run(play(url)) == [2] * 16
