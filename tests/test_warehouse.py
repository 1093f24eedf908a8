"""The DuckDB warehouse: a full load equals an incremental catch-up in any number of pages and
rounds, on every store backend; its rows are the projections' (replay, summarize, the
decisive mistake); episodes continued after a catch-up are re-derived; rebuild gives the same
tables; a page is all or nothing.

PostgreSQL runs when COMPANYOS_TEST_POSTGRES_URL is set; each test gets a fresh schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from companyos.agents import RandomAgent, in_process_naive, in_process_oracle, play
from companyos.analytics import warehouse as warehouse_module
from companyos.analytics.no_return import point_of_no_return
from companyos.analytics.warehouse import TABLES, Warehouse
from companyos.api import CompanyOSEnvironment
from companyos.domain import FAMILY_NAMES
from companyos.events import EventStore, InMemoryEventStore
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.events.types import ToolCalled
from companyos.projections.mistakes import LABELS
from companyos.projections.mistakes import decisive as diagnose
from companyos.projections.reward import get_profile
from companyos.projections.summary import summarize

from .conftest import POSTGRES_URL, drop_postgres_schema, make_postgres_store

BACKENDS = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventStore]:
    if request.param == "memory":
        yield InMemoryEventStore()
    elif request.param == "sqlite":
        s = SQLEventStore(sqlite_url(tmp_path / "events.db"))
        yield s
        s.close()
    else:
        if not POSTGRES_URL:
            pytest.skip("set COMPANYOS_TEST_POSTGRES_URL")
        s, schema = make_postgres_store(POSTGRES_URL)
        yield s
        s.close()
        drop_postgres_schema(POSTGRES_URL, schema)


# ---------------------------------------------------------------------------- generated logs


def play_round(store: EventStore, seeds: range, families: int = 6) -> list[str]:
    """Oracle, naive and random on the instances of ``seeds``: successes, failures (timeouts,
    chaos the naive agent ignores) and every kind of call outcome."""
    env = CompanyOSEnvironment(store)
    agents = [in_process_oracle(env), in_process_naive(env), RandomAgent(11)]
    ids = []
    for seed in seeds:
        for agent in agents:
            family = FAMILY_NAMES[seed % families]
            r = play(env, agent, seed=seed, task_id=family, difficulty=seed % 4)
            ids.append(r.episode_id)
    return ids


def odd_streams(store: EventStore) -> dict[str, str]:
    """The streams a log holds besides finished episodes: a call made with no episode (a
    non-episode stream), a fork, an abandoned episode and one still running."""
    env = CompanyOSEnvironment(store)
    env.step({"app": "ticketdesk", "method": "list_tickets", "params": {}})  # no episode yet
    orphan = env._session
    source = play(env, in_process_oracle(env), seed=3, task_id=FAMILY_NAMES[1], difficulty=2)
    fork = env.reset(fork_from=source.episode_id, at_step=2, agent="random")
    agent = RandomAgent(5)
    agent.reset(fork)
    for _ in range(3):
        env.step(agent.act(fork))
    env.step({"app": "ticketdesk", "method": "teleport", "params": {}})  # a hallucinated tool
    abandoned = fork.episode_id  # the next reset gives it up
    running = env.reset(seed=4, task_id=FAMILY_NAMES[2], difficulty=1, agent="oracle")
    oracle = in_process_oracle(env)
    obs = env.step(oracle.act(running))
    assert not obs.done
    assert running.episode_id is not None and abandoned is not None
    return {
        "orphan": orphan,
        "source": source.episode_id,
        "fork": abandoned,
        "running": running.episode_id,
    }


def contents(wh: Warehouse) -> dict[str, list[tuple[Any, ...]]]:
    return {t: wh.con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}


def stream_ids(store: EventStore) -> list[str]:
    return [s.stream_id for s in store.streams(limit=1_000_000)]


# ---------------------------------------------------------------------------- full vs incremental


def test_full_load_equals_incremental_catch_up(store: EventStore):
    first = play_round(store, range(0, 4))
    odd = odd_streams(store)
    small = Warehouse(page_size=37)  # pages end mid-episode, mid-step, anywhere
    small.catch_up(store)
    second = play_round(store, range(4, 8))
    # The running episode goes on (and ends), after a catch-up saw its start.
    env = CompanyOSEnvironment(store)
    play(env, in_process_oracle(env), seed=9, task_id=FAMILY_NAMES[0], difficulty=3)
    result = small.catch_up(store)
    assert result.episodes == len(second) + 1
    full = Warehouse()
    loaded = full.catch_up(store)
    assert loaded.events == sum(len(store.read(s)) for s in stream_ids(store))
    assert full.position == small.position == loaded.position
    assert contents(small) == contents(full)
    [(episodes,)] = full.con.execute("SELECT count(*) FROM episodes").fetchall()
    assert episodes == len(first) + len(second) + 1 + 3  # + source, fork, running
    listed = full.con.execute("SELECT episode_id FROM episodes").fetchall()
    assert odd["orphan"] not in {r[0] for r in listed}
    small.close()
    full.close()


def test_many_rounds_of_one_page_each_equal_a_full_load():
    store = InMemoryEventStore()
    step_by_step = Warehouse(page_size=10)
    env = CompanyOSEnvironment(store)
    for seed in range(3):
        obs = env.reset(seed=seed, task_id=FAMILY_NAMES[seed], difficulty=2, agent="oracle")
        oracle = in_process_oracle(env)
        while not obs.done:
            obs = env.step(oracle.act(obs))
            step_by_step.catch_up(store)  # after every single step
    full = Warehouse()
    full.catch_up(store)
    assert contents(step_by_step) == contents(full)


# ---------------------------------------------------------------------------- the projections' rows


def test_rows_are_the_projections(store: EventStore):
    play_round(store, range(0, 6))
    odd = odd_streams(store)
    with Warehouse() as wh:
        wh.catch_up(store)
        episodes = {r[0]: r for r in wh.con.execute("SELECT * FROM episodes").fetchall()}
        columns = [d[0] for d in wh.con.execute("SELECT * FROM episodes LIMIT 0").description]
        failures = {r[0]: r for r in wh.con.execute("SELECT * FROM failures").fetchall()}
        steps = dict(
            wh.con.execute("SELECT episode_id, count(*) FROM steps GROUP BY ALL").fetchall()
        )
        for stream in stream_ids(store):
            records = store.read(stream)
            if stream == odd["orphan"]:
                assert stream not in episodes and stream not in steps
                continue
            row = dict(zip(columns, episodes[stream], strict=True))
            s = summarize(records)
            assert row["total_return"] == s.total_return
            assert row["steps"] == s.steps == steps.get(stream, 0)
            assert s.steps == sum(isinstance(r.event, ToolCalled) for r in records)
            for key in ("scenario", "seed", "difficulty", "max_steps", "outcome", "agent"):
                assert row[key] == getattr(s, key), key
            for key in ("invalid_actions", "rejected_actions", "faults", "forked_from"):
                assert row[key] == getattr(s, key), key
            assert tuple(row["chaos_kinds"]) == s.chaos_kinds
            assert row["success"] == (s.outcome == "success")
            assert row["last_position"] == records[-1].position
            task = records[1].event
            assert row["family"] == task.family and row["instance_id"] == task.instance_id
            if s.outcome in (None, "success"):
                assert stream not in failures
            else:
                mistake = diagnose(records)
                assert mistake is not None and mistake.label in LABELS
                assert failures[stream][1:4] == (mistake.label, mistake.step, mistake.detail)
        assert episodes[odd["fork"]][columns.index("outcome")] == "abandoned"
        assert episodes[odd["running"]][columns.index("outcome")] is None
        assert odd["fork"] in failures and odd["running"] not in failures
        taxonomy = dict(wh.con.execute("SELECT * FROM taxonomy").fetchall())
        assert taxonomy == LABELS


def test_events_are_stored_as_stored(store: EventStore):
    play_round(store, range(0, 2))
    odd_streams(store)
    with Warehouse() as wh:
        wh.catch_up(store)
        rows = wh.con.execute(
            "SELECT position, episode_id, seq, type, schema_version, data, hash, "
            "epoch_us(recorded_at) FROM events ORDER BY position"
        ).fetchall()
    stored = sorted((r for s in stream_ids(store) for r in store.read(s)), key=lambda r: r.position)
    assert [r[0] for r in rows] == [r.position for r in stored]
    for row, r in zip(rows, stored, strict=True):
        assert row[1:5] == (r.stream, r.seq, r.type, r.schema_version)
        assert orjson.loads(row[5]) == r.data
        assert row[6] == r.hash
        assert row[7] == round(r.recorded_at * 1_000_000)


def test_steps_say_what_each_call_did():
    store = InMemoryEventStore()
    play_round(store, range(0, 12), families=12)
    odd_streams(store)
    with Warehouse() as wh:
        wh.catch_up(store)
        outcomes = dict(
            wh.con.execute("SELECT outcome, count(*) FROM steps GROUP BY ALL").fetchall()
        )
        assert set(outcomes) == {"ok", "invalid", "rejected", "fault"}
        bad = wh.con.execute(
            "SELECT count(*) FROM steps WHERE (outcome IN ('invalid', 'rejected')) <> "
            "(error_code IS NOT NULL) OR (outcome = 'fault') <> (fault IS NOT NULL) "
            "OR tool <> app || '.' || method OR clock_minutes > step * 5"
        ).fetchall()
        assert bad == [(0,)]
        # The rewards add up to each episode's return, plus the penalty of an abandonment.
        returns = wh.con.execute(
            "SELECT e.outcome, e.total_return, s.r, s.last, e.steps, e.max_steps FROM episodes "
            "e JOIN (SELECT episode_id, sum(reward) AS r, arg_max(return_so_far, step) AS last "
            "FROM steps GROUP BY ALL) s USING (episode_id)"
        ).fetchall()
        profile = get_profile("default")
        for outcome, total, summed, last, steps, budget in returns:
            penalty = profile.abandoned(steps, budget) if outcome == "abandoned" else 0.0
            assert total == pytest.approx(summed + penalty) == pytest.approx(last + penalty)
        assert "abandoned" in {r[0] for r in returns}


# ---------------------------------------------------------------------------- incremental behaviour


def test_an_episode_continued_after_a_catch_up_is_derived_again(store: EventStore):
    env = CompanyOSEnvironment(store)
    obs = env.reset(seed=21, task_id=FAMILY_NAMES[0], difficulty=2, agent="oracle")
    oracle = in_process_oracle(env)
    for _ in range(2):
        obs = env.step(oracle.act(obs))
    eid = obs.episode_id
    with Warehouse() as wh:
        wh.catch_up(store)
        assert wh.con.execute(
            "SELECT steps, outcome FROM episodes WHERE episode_id = $e", {"e": eid}
        ).fetchall() == [(2, None)]
        while not obs.done:
            obs = env.step(oracle.act(obs))
        result = wh.catch_up(store)
        assert result.episodes == 1 and result.events > 0
        s = summarize(store.read(eid))
        assert wh.con.execute(
            "SELECT steps, outcome, total_return FROM episodes WHERE episode_id = $e", {"e": eid}
        ).fetchall() == [(s.steps, "success", s.total_return)]
        assert wh.con.execute(
            "SELECT count(*), count(DISTINCT step) FROM steps WHERE episode_id = $e", {"e": eid}
        ).fetchall() == [(s.steps, s.steps)]


def test_a_catch_up_with_nothing_new_does_nothing(store: EventStore):
    """(How long it takes is `bench/analytics.py`'s business: about 40 us on the memory store.)"""
    play_round(store, range(0, 2))
    with Warehouse() as wh:
        wh.catch_up(store)
        before = contents(wh)
        result = wh.catch_up(store)
        assert (result.events, result.episodes) == (0, 0)
        assert result.position == wh.position
        assert contents(wh) == before


def test_the_position_survives_reopening_the_file(tmp_path: Path):
    store = InMemoryEventStore()
    play_round(store, range(0, 2))
    path = tmp_path / "wh" / "analytics.duckdb"
    with Warehouse(path) as wh:
        wh.catch_up(store)
        position = wh.position
    play_round(store, range(2, 3))
    with Warehouse(path) as wh:
        assert wh.position == position
        assert wh.catch_up(store).episodes == 3
        reopened = contents(wh)
    with Warehouse() as full:
        full.catch_up(store)
        assert contents(full) == reopened


def test_a_failed_page_leaves_the_warehouse_at_the_last_page(monkeypatch: pytest.MonkeyPatch):
    store = InMemoryEventStore()
    play_round(store, range(0, 4))
    with Warehouse(page_size=200) as wh:
        real = warehouse_module.derive
        calls = {"n": 0}

        def flaky(*args: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == 5:
                raise RuntimeError("crash while deriving")
            return real(*args)

        monkeypatch.setattr(warehouse_module, "derive", flaky)
        with pytest.raises(RuntimeError, match="crash while deriving"):
            wh.catch_up(store)
        stopped = wh.position
        assert 0 < stopped < store.read_all(0, 10**6)[-1].position
        [(events, last)] = wh.con.execute("SELECT count(*), max(position) FROM events").fetchall()
        assert events == last == stopped  # nothing of the failed page
        monkeypatch.setattr(warehouse_module, "derive", real)
        wh.catch_up(store)
        with Warehouse() as full:
            full.catch_up(store)
            assert contents(wh) == contents(full)


def test_identical_streams_get_identical_rows():
    """The oracle is deterministic: its trials of one instance store the same events, and the
    warehouse derives them once (the hash chain names the content)."""
    store = InMemoryEventStore()
    env = CompanyOSEnvironment(store)
    ids = [
        play(env, in_process_oracle(env), seed=5, task_id=FAMILY_NAMES[3], difficulty=3).episode_id
        for _ in range(3)
    ]
    with Warehouse() as wh:
        wh.catch_up(store)
        assert (wh.deriver.derived, wh.deriver.reused) == (1, 2)
        steps = [
            wh.con.execute(
                "SELECT * EXCLUDE (episode_id) FROM steps WHERE episode_id = $e ORDER BY step",
                {"e": eid},
            ).fetchall()
            for eid in ids
        ]
        assert steps[0] == steps[1] == steps[2] and steps[0]
        rows = wh.con.execute(
            "SELECT episode_id, last_position, started_at FROM episodes ORDER BY last_position"
        ).fetchall()
        assert [r[0] for r in rows] == ids
        assert [r[1] for r in rows] == [store.read(e)[-1].position for e in ids]
        for eid in ids:
            s = summarize(store.read(eid))
            assert wh.con.execute(
                "SELECT total_return, steps FROM episodes WHERE episode_id = $e", {"e": eid}
            ).fetchall() == [(s.total_return, s.steps)]


# ---------------------------------------------------------------------------- rebuild, no return


def test_the_load_works_out_each_failures_point_of_no_return(store: EventStore):
    """Derived with the decisive mistake (sharing its forks), in the load: each failure's
    point of no return is the one `point_of_no_return` finds on its own."""
    play_round(store, range(0, 4))
    odd_streams(store)
    with Warehouse(page_size=100) as wh:
        wh.catch_up(store)
        assert wh.failed_without_no_return() == []
        rows = wh.con.execute(
            "SELECT episode_id, point_of_no_return, no_return_checked FROM failures"
        ).fetchall()
        assert len(rows) >= 4
        for eid, k, checked in rows:
            assert checked and k == point_of_no_return(store.read(eid)), eid
        assert any(k is not None for _, k, _ in rows)


def test_rebuild_gives_the_same_tables_and_keeps_points_of_no_return(store: EventStore):
    play_round(store, range(0, 4))
    odd_streams(store)
    with Warehouse(page_size=100) as wh:
        wh.catch_up(store)
        # Set by hand (as `set_points_of_no_return` stores values worked out elsewhere): a
        # rebuild keeps them for the streams that did not change.
        failed = [r[0] for r in wh.con.execute("SELECT episode_id FROM failures").fetchall()]
        assert failed
        values = {eid: (i if i % 3 else None) for i, eid in enumerate(failed)}
        assert wh.set_points_of_no_return({**values, "not-an-episode": 4}) == len(failed)
        assert wh.failed_without_no_return() == []
        before = contents(wh)
        result = wh.rebuild(store)
        assert result.position == wh.position
        assert contents(wh) == before
        stored = dict(
            wh.con.execute("SELECT episode_id, point_of_no_return FROM failures").fetchall()
        )
        assert stored == values


def test_points_of_no_return_are_dropped_when_the_episode_changes():
    store = InMemoryEventStore()
    env = CompanyOSEnvironment(store)
    obs = env.reset(seed=2, task_id=FAMILY_NAMES[0], difficulty=2, agent="random")
    env.step({"app": "ticketdesk", "method": "list_tickets", "params": {}})
    env.reset(seed=3, task_id=FAMILY_NAMES[0], difficulty=2, agent="random")  # abandons it
    with Warehouse() as wh:
        wh.catch_up(store)
        assert wh.failed_without_no_return() == []  # worked out in the load
        wh.con.execute("UPDATE failures SET no_return_checked = false")  # as before issue 16
        assert wh.failed_without_no_return() == [obs.episode_id]
        wh.set_points_of_no_return({obs.episode_id: 0})
        assert wh.failed_without_no_return() == []
        assert wh.set_points_of_no_return({}) == 0


def test_the_appender_path_gives_the_arrow_paths_tables(monkeypatch: pytest.MonkeyPatch):
    """Without pyarrow (a dev extra) rows go through DuckDB's appender: the same tables."""
    store = InMemoryEventStore()
    play_round(store, range(0, 4))
    odd_streams(store)
    with Warehouse() as arrow:
        arrow.catch_up(store)
        assert warehouse_module.pyarrow is not None
        monkeypatch.setattr(warehouse_module, "pyarrow", None)
        with Warehouse(page_size=300) as appender:
            appender.catch_up(store)
            assert contents(appender) == contents(arrow)
