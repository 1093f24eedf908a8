"""Episodes derived by worker processes give the very rows this process derives: every table,
with streams spanning pages, identical streams and a catch-up after the load; and every fast
path (memo, set-up cache, parser cache, workers, chunks taken back) gives the rows of deriving
each stream on its own, the plain way."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest

from companyos.analytics import warehouse as warehouse_module
from companyos.analytics.setups import SetupCache
from companyos.analytics.source import RawEvent
from companyos.analytics.warehouse import (
    EPISODE_TABLES,
    TABLES,
    DerivePool,
    Warehouse,
    WorkerShare,
    _derive_in_worker,
    default_workers,
    derive,
)
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
    parallel.pool.min_share = 0  # whatever share of the machine the load gets
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


# ---------------------------------------------------------------------------- the fast paths


def _straightforward(store: InMemoryEventStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every episode's rows derived the plain way: each stream on its own, its events as the
    store parses them (every one validated), `replay` from scratch, no memo, no set-up cache,
    no worker."""
    out: dict[str, list[tuple[Any, ...]]] = {t: [] for t in EPISODE_TABLES}
    for s in store.streams(limit=1_000_000):
        records = store.read(s.stream_id)
        events = [r.event for r in records]
        if not isinstance(events[0], EpisodeStarted):
            continue  # not an episode: events only
        rows = [
            RawEvent(
                r.stream, r.seq, r.position, r.type, r.schema_version, "", r.hash, r.recorded_at
            )
            for r in records
        ]
        d = derive(rows, events)
        out["steps"] += d.steps
        out["episodes"].append(d.episode)
        out["failures"] += [] if d.failure is None else [d.failure]
        out["mistakes"] += d.mistakes
        out["approvals"] += d.approvals
        out["chaos"] += d.chaos
    return out


def _episode_tables(wh: Warehouse) -> dict[str, list[tuple[Any, ...]]]:
    return {
        t: sorted(wh.con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in EPISODE_TABLES
    }


class _SlowPool(DerivePool):
    """A pool whose first third of chunks is done (by the worker's own function, in this
    process), the next one started by a worker that never finishes it (a worker starved by
    other processes), and the rest not started: the loading process takes the last back and derives
    the started ones itself rather than wait."""

    def submit(self, chunks: list[list[Any]]) -> list[Future[WorkerShare]]:
        futures: list[Future[WorkerShare]] = []
        for i, chunk in enumerate(chunks):
            f: Future[WorkerShare] = Future()
            if i < len(chunks) // 3:
                f.set_result(_derive_in_worker([list(map(tuple, s)) for s in chunk]))
            elif i == len(chunks) // 3:
                assert f.set_running_or_notify_cancel()  # started: it cannot be cancelled
            futures.append(f)
        return futures


def test_every_path_gives_the_straightforward_rows(tmp_path):
    """The memo of identical streams, the set-up cache, the parser's cache, pages that cut
    episodes, worker processes, chunks taken back from them and chunks derived here while a
    worker is on them: the rows of every episode table are those of deriving each stream on its
    own, the plain way."""
    store = InMemoryEventStore()
    play_round(store, range(0, 6))
    play_round(store, range(0, 3))  # the deterministic agents' trials again: identical streams
    odd_streams(store)
    want = {t: sorted(rows, key=repr) for t, rows in _straightforward(store).items()}
    assert want["failures"] and want["mistakes"] and want["approvals"] and want["chaos"]
    serial = Warehouse(page_size=300, workers=0)
    stolen = Warehouse(page_size=300, workers=0)
    stolen.pool = _SlowPool(1, min_streams=1, min_chunk=1, min_share=0)
    parallel = Warehouse(tmp_path / "p.duckdb", page_size=300, workers=1)
    assert parallel.pool is not None
    parallel.pool.min_streams, parallel.pool.min_share = 1, 0
    try:
        for wh in (serial, stolen, parallel):
            wh.catch_up(store)
            assert _episode_tables(wh) == want
        assert serial.deriver.reused > 0  # the memo was used (and gave the same rows)
        d = stolen.deriver
        assert d.stolen > 0 and d.backed_up > 0 and d.derived > d.stolen + d.backed_up
        assert contents(serial) == contents(stolen) == contents(parallel)
    finally:
        for wh in (serial, stolen, parallel):
            wh.close()


def test_a_dead_worker_leaves_the_load_to_this_process():
    store = InMemoryEventStore()
    play_round(store, range(0, 3))

    class Dead(DerivePool):
        def submit(self, chunks: list[list[Any]]) -> list[Future[WorkerShare]]:
            futures: list[Future[WorkerShare]] = []
            for _ in chunks:
                f: Future[WorkerShare] = Future()
                f.set_exception(BrokenProcessPool("a worker died"))
                futures.append(f)
            return futures

    serial = Warehouse(page_size=200, workers=0)
    broken = Warehouse(page_size=200, workers=0)
    broken.pool = Dead(1, min_streams=1, min_chunk=1)
    try:
        serial.catch_up(store)
        broken.catch_up(store)
        assert broken.pool.broken
        assert contents(serial) == contents(broken)
        assert broken.deriver.derived == serial.deriver.derived
    finally:
        serial.close()
        broken.close()


def test_workers_by_default_on_every_cpu_but_one(monkeypatch):
    monkeypatch.delenv("COMPANYOS_ANALYTICS_WORKERS", raising=False)
    monkeypatch.setattr(warehouse_module, "_cpus", lambda: 1)
    assert default_workers() == 0
    monkeypatch.setattr(warehouse_module, "_cpus", lambda: 4)
    assert default_workers() == 3
    monkeypatch.setenv("COMPANYOS_ANALYTICS_WORKERS", "0")
    assert default_workers() == 0


def test_workers_rest_while_the_load_gets_no_more_than_a_core():
    """A page derived with the workers that got under ``min_share`` cores (the machine busy
    with other work) sends the next pages to this process: 1, then 2, 4 ... up to 16 pages
    before trying again; a page that got them resets it."""
    pool = DerivePool(1, min_share=1.3)
    assert pool.wanted()

    def rests() -> int:
        n = 0
        while not pool.wanted():
            n += 1
        return n

    pool.measured(1.0)
    assert rests() == 1
    for expected in (2, 4, 8, 16, 16):
        pool.measured(1.1)
        assert rests() == expected
    pool.measured(1.9)
    assert rests() == 0
    pool.measured(0.8)
    assert rests() == 1


def _default_in(tmp_path: Path, script: str | None, code: str, workers: str | None = None) -> str:
    """What `default_workers` answers in a fresh interpreter: running ``code`` as the script
    ``script`` (by path), or with ``python -c`` when None; ``workers``: the value of
    COMPANYOS_ANALYTICS_WORKERS (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "COMPANYOS_ANALYTICS_WORKERS"}
    if workers is not None:
        env["COMPANYOS_ANALYTICS_WORKERS"] = workers
    if script is None:
        argv = [sys.executable, "-c", code]
    else:
        path = tmp_path / script
        path.write_text(code)
        argv = [sys.executable, str(path)]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=True)
    return out.stdout.strip()


ASK = "import companyos.analytics.warehouse as w\nw._cpus = lambda: 4\nprint(w.default_workers())\n"


def test_no_default_workers_where_a_worker_would_run_the_main_script_again(tmp_path):
    # Unguarded top-level code would run again in every spawned worker: none by default.
    assert _default_in(tmp_path, "unguarded.py", ASK) == "0"
    guarded = "if __name__ == '__main__':\n" + "".join(f"    {line}\n" for line in ASK.splitlines())
    assert _default_in(tmp_path, "guarded.py", guarded) == "3"
    assert _default_in(tmp_path, None, ASK) == "3"  # python -c: nothing to import again
    # Asked for explicitly, a script gets them (guarding its entry point is then its business).
    assert _default_in(tmp_path, "asks.py", ASK, workers="2") == "2"
