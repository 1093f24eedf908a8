"""Episodes derived by worker processes give the very rows this process derives: every table,
with streams spanning pages, identical streams and a catch-up after the load."""

from __future__ import annotations

import pytest

from companyos.analytics.warehouse import TABLES, Warehouse, default_workers
from companyos.events import InMemoryEventStore

from .test_warehouse import contents, play_round


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
