"""Invariant 10: snapshots are a cache. Snapshot + remaining events = the full fold, at every
step boundary of random episodes; a load from a snapshot equals a load that folds everything;
a snapshot that does not fit the stream (another tag, a rewritten event) is ignored; and a
snapshot row can describe state but never run code."""

from __future__ import annotations

import os
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companyos.api import CompanyOSEnvironment
from companyos.api.episode import FOLD_TAG, SNAPSHOT_EVERY, Episode
from companyos.domain import FAMILY_NAMES
from companyos.events import EventStore, InMemoryEventStore
from companyos.events.snapshots import Snapshot, UnsafeSnapshot, decode
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.events.types import EpisodeEnded, StepScored
from companyos.projections import replay, resume

from .strategies import action, call_for


def _play(store: EventStore, seed: int, task: int, difficulty: int, actions: list) -> str:
    env = CompanyOSEnvironment(store)
    env.reset(seed=seed, task_id=task, difficulty=difficulty, max_steps=400)
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
    actions=st.lists(action, min_size=1, max_size=25),
)
def test_snapshot_plus_remaining_events_equals_the_full_fold(seed, task, difficulty, actions):
    store = InMemoryEventStore()
    records = store.read(_play(store, seed, task, difficulty, actions))
    full = replay(records)
    # Every version a snapshot can be taken at: the end of the set-up and of each append.
    ends = [i for i, r in enumerate(records) if isinstance(r.event, StepScored | EpisodeEnded)]
    first_call = next((i for i, r in enumerate(records) if r.type == "ToolCalled"), len(records))
    for cut in sorted({first_call - 1, *ends}):
        prefix = replay(records[: cut + 1])
        world, score, _, _ = resume(prefix.world, prefix.score, records[cut + 1 :])
        assert world == full.world
        assert score == full.score


@pytest.fixture(params=["memory", "sqlite", "sqlite-group"])
def store(request, tmp_path):
    if request.param == "memory":
        s: EventStore = InMemoryEventStore()
    else:
        group = 8 if request.param == "sqlite-group" else 1
        s = SQLEventStore(sqlite_url(tmp_path / "events.db"), group_commit=group)
    yield s
    s.close()


def _long_episode(store: EventStore, steps: int = 150) -> str:
    return _play(store, 11, 2, 3, [{"app": "ticketdesk", "method": "list_tickets"}] * steps)


def test_a_load_from_a_snapshot_equals_folding_everything_and_reads_only_the_tail(store):
    eid = _long_episode(store)
    snap = store.load_snapshot(eid)
    assert snap is not None and snap.tag == FOLD_TAG
    assert store.version(eid) - snap.version < SNAPSHOT_EVERY
    reads: list[int] = []
    real_read = store.read

    def counting_read(stream, from_seq=0, to_seq=None):
        out = real_read(stream, from_seq, to_seq)
        reads.append(len(out))
        return out

    store.read = counting_read  # type: ignore[method-assign]
    loaded = Episode.load(store, eid)
    store.read = real_read  # type: ignore[method-assign]
    assert sum(reads) <= SNAPSHOT_EVERY + 1
    full = Episode.from_records(store, store.read(eid))
    assert loaded.world == full.world
    assert loaded.score == full.score
    assert loaded.version == full.version


def test_a_snapshot_that_does_not_fit_is_ignored(store):
    eid = _long_episode(store, 40)
    full = Episode.from_records(store, store.read(eid))
    head = store.read(eid)[-1]
    wrong = (full.world._replace(step=999), full.score._replace(total=12345.0))
    for bad in (
        Snapshot(eid, head.seq, head.hash, "fold/other-code", wrong),  # another tag
        Snapshot(eid, head.seq, "0" * 64, FOLD_TAG, wrong),  # not this stream's event
    ):
        if isinstance(store, InMemoryEventStore):
            store._snapshots[eid] = bad
        else:
            with store.engine.begin() as conn:
                conn.exec_driver_sql("DELETE FROM snapshots")
            store.save_snapshot(bad)
        loaded = Episode.load(store, eid)
        assert loaded.world == full.world and loaded.score == full.score


def test_a_snapshot_row_cannot_run_code():
    class Payload:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    with pytest.raises(UnsafeSnapshot):
        decode(pickle.dumps(Payload()))


def test_a_stale_copy_caught_up_equals_a_fresh_load(store):
    env = CompanyOSEnvironment(store)
    env.reset(seed=5, task_id=1, difficulty=2)
    stale = env.episode
    assert stale is not None
    for _ in range(6):  # another process moves the episode on
        env.step({"app": "ticketdesk", "method": "list_tickets"})
    caught = stale.caught_up()
    fresh = Episode.from_records(store, store.read(stale.id))
    assert caught is not None
    assert (caught.world, caught.score, caught.version) == (
        fresh.world,
        fresh.score,
        fresh.version,
    )
