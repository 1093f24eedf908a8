"""Episodes derived by worker processes give the very rows this process derives: every table,
with streams spanning pages, identical streams and a catch-up after the load."""

from __future__ import annotations

import pytest

from companyos.analytics.setups import SetupCache
from companyos.analytics.warehouse import TABLES, Warehouse, default_workers
from companyos.events import InMemoryEventStore
from companyos.events.types import EpisodeStarted
from companyos.projections.replay import replay

from .test_warehouse import contents, odd_streams, play_round


def test_workers_derive_the_same_rows(tmp_path, monkeypatch):
    store = InMemoryEventStore()
    play_round(store, range(0, 5))
    serial = Warehouse(page_size=400, workers=0)
    parallel = Warehouse(tmp_path / "p.duckdb", page_size=400, workers=1)
    assert parallel.pool is not None
    parallel.pool.min_streams = 1  # every page through the worker, however small
    try:
        serial.catch_up(store)
        parallel.catch_up(store)
        assert parallel.deriver.derived > 0
        play_round(store, range(5, 7))  # more, after the load
        serial.catch_up(store)
        parallel.catch_up(store)
        a, b = contents(serial), contents(parallel)
        for table in TABLES:
            if table != "events":  # recorded_at and hashes are the same stored values too
                assert a[table] == b[table], table
        assert a["events"] == b["events"]
        assert parallel.pool._executor is not None  # the workers did the work
    finally:
        serial.close()
        parallel.close()
    monkeypatch.setenv("COMPANYOS_ANALYTICS_WORKERS", "3")
    assert default_workers() == 3
    monkeypatch.setenv("COMPANYOS_ANALYTICS_WORKERS", "many")
    with pytest.raises(ValueError, match="COMPANYOS_ANALYTICS_WORKERS"):
        default_workers()


def test_the_setup_cache_replays_as_replay_does():
    store = InMemoryEventStore()
    play_round(store, range(0, 4))
    play_round(store, range(0, 4))  # the same instances again: set-ups shared
    odd = odd_streams(store)
    cache = SetupCache()
    compared = 0
    for s in store.streams(limit=10_000):
        records = store.read(s.stream_id)
        events = [r.event for r in records]
        if not isinstance(events[0], EpisodeStarted):
            assert s.stream_id == odd["orphan"]
            continue
        want = replay(events)
        got = cache.replay(events, [r.hash for r in records])
        assert (got.outcome, got.total, got.score) == (want.outcome, want.total, want.score)
        assert [(x.step, x.score, x.world, x.first_index) for x in got.steps] == [
            (x.step, x.score, x.world, x.first_index) for x in want.steps
        ]
        compared += 1
    assert compared > 20 and cache.hits > 10
