"""Invariant 3: the live state equals the fold of the stored log, after every step, for random
action sequences; and the cached rewards equal the reward projection recomputed from the log."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companyos.api import CompanyOSEnvironment
from companyos.domain import FAMILY_NAMES, fold
from companyos.events import EventStore, InMemoryEventStore
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.projections import cached_rewards, replay

from .strategies import action, call_for


@pytest.fixture(scope="module")
def sqlite_module_store(tmp_path_factory):
    store = SQLEventStore(sqlite_url(tmp_path_factory.mktemp("fold") / "events.db"))
    yield store
    store.close()


def check_live_equals_fold(
    store: EventStore, seed: int, task: int, difficulty: int, actions: list
) -> None:
    env = CompanyOSEnvironment(store)
    obs = env.reset(seed=seed, task_id=task, difficulty=difficulty)
    for a in actions:
        ep = env.episode
        assert ep is not None
        a = call_for(a, ep.world)
        obs = env.step(a)
        records = store.read(ep.id)
        assert [r.seq for r in records] == list(range(len(records)))
        events = [r.event for r in records]
        assert fold(events) == ep.world
        r = replay(records)
        assert r.world == ep.world
        assert r.score == ep.score
        assert cached_rewards(records) == [s.score.reward for s in r.steps]
        assert env.state.cumulative_return == ep.score.total
        assert ep.version == records[-1].seq
        if obs.done:
            break


@settings(max_examples=300)
@given(
    seed=st.integers(0, 2**32),
    task=st.integers(0, len(FAMILY_NAMES) - 1),
    difficulty=st.integers(0, 3),
    actions=st.lists(action, min_size=1, max_size=30),
)
def test_live_state_equals_fold_memory(seed, task, difficulty, actions):
    check_live_equals_fold(InMemoryEventStore(), seed, task, difficulty, actions)


@settings(max_examples=200)
@given(
    seed=st.integers(0, 2**32),
    task=st.integers(0, len(FAMILY_NAMES) - 1),
    difficulty=st.integers(0, 3),
    actions=st.lists(action, min_size=1, max_size=30),
)
def test_live_state_equals_fold_sqlite(sqlite_module_store, seed, task, difficulty, actions):
    check_live_equals_fold(sqlite_module_store, seed, task, difficulty, actions)
