"""The SQL sandbox: attack SQL is refused and changes nothing; legitimate SQL answers.

"Changes nothing" is checked on the bytes: the snapshot's and the warehouse's hashes, and the
listings of every directory involved (no file created, not even a WAL or a temporary file).
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import math
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from companyos.analytics import sandbox
from companyos.analytics.sandbox import (
    QueryFailed,
    QueryRefused,
    QueryResult,
    SnapshotError,
    jsonable,
    run_query,
    snapshot,
)

from .analytics_fixtures import fill_warehouse


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("warehouse") / "warehouse.duckdb"
    fill_warehouse(path)
    return path


@pytest.fixture(scope="module")
def snap(warehouse: Path, tmp_path_factory) -> Path:
    return snapshot(warehouse, tmp_path_factory.mktemp("snapshots"))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(*dirs: Path) -> dict[str, list[str]]:
    return {str(d): sorted(p.name for p in d.iterdir()) if d.exists() else [] for d in dirs}


@pytest.fixture
def unchanged(warehouse: Path, snap: Path, tmp_path: Path) -> Iterator[Path]:
    """Yields a scratch directory the attacks aim at; afterwards, asserts that the snapshot,
    the warehouse and every directory involved are exactly as before."""
    target = tmp_path / "target"
    target.mkdir()
    dirs = (warehouse.parent, snap.parent, target)
    before = (digest(warehouse), digest(snap), listing(*dirs))
    yield target
    assert (digest(warehouse), digest(snap), listing(*dirs)) == before


def table_counts(path: Path) -> dict[str, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[index]
            for t in sandbox.TABLES
        }
    finally:
        con.close()


# --- attacks -----------------------------------------------------------------------------------

# Statements the policy refuses before anything runs. {target} is a scratch directory,
# {snap} the snapshot, {warehouse} the live warehouse file.
REFUSED = [
    "COPY (SELECT * FROM events) TO '{target}/out.csv'",
    "COPY events TO '{target}/events.parquet' (FORMAT parquet)",
    "COPY events FROM '/etc/passwd'",
    "EXPORT DATABASE '{target}/export'",
    "ATTACH '{target}/new.duckdb' AS fresh",
    "ATTACH '{snap}' AS rw (READ_WRITE)",
    "ATTACH '{warehouse}' AS live",
    "ATTACH ':memory:' AS scratch",
    "DETACH warehouse",
    "USE memory",
    "INSTALL httpfs",
    "LOAD httpfs",
    "FORCE INSTALL sqlite",
    "SET enable_external_access = true",
    "SET threads = 64",
    "SET memory_limit = '64GB'",
    "SET lock_configuration = false",
    "RESET memory_limit",
    "SET GLOBAL access_mode = 'READ_WRITE'",
    "SET VARIABLE x = 1",
    "PRAGMA enable_profiling",
    "PRAGMA version",
    "PRAGMA database_list",
    "CALL pragma_version()",
    "CALL enable_logging()",
    "CREATE TABLE stolen AS SELECT * FROM events",
    "CREATE TEMP TABLE scratch (a INTEGER)",
    "CREATE VIEW v AS SELECT 1",
    "CREATE MACRO m() AS 1",
    "CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 's')",
    "INSERT INTO checkpoint VALUES (0)",
    "UPDATE episodes SET success = true",
    "DELETE FROM events",
    "DROP TABLE events",
    "ALTER TABLE events ADD COLUMN x INTEGER",
    "TRUNCATE events",
    "CHECKPOINT",
    "FORCE CHECKPOINT",
    "VACUUM",
    "BEGIN TRANSACTION",
    "PREPARE p AS SELECT 1",
    "PIVOT episodes ON agent USING count(*)",
    "EXPLAIN ANALYZE COPY (SELECT 1) TO '{target}/x.csv'",
    "EXPLAIN CREATE TABLE t AS SELECT 1",
    # Several statements: the first harmless, the rest not.
    "SELECT 1; DROP TABLE events",
    "SELECT 1; SELECT 2",
    "DETACH warehouse; ATTACH '{snap}' AS warehouse (READ_WRITE); DELETE FROM events",
    "SELECT count(*) FROM events; COPY events TO '{target}/x.csv'",
    "",
    "   ;  ",
]


@pytest.mark.parametrize("sql", REFUSED)
def test_refused_statements_change_nothing(sql, snap, warehouse, unchanged):
    text = sql.format(target=unchanged, snap=snap, warehouse=warehouse)
    with pytest.raises(QueryRefused) as refused:
        run_query(snap, text)
    message = refused.value.message
    assert "SELECT" in message or "empty" in message  # it says what is allowed
    assert not list(unchanged.iterdir())


# Statements that are SELECTs, so the policy lets them through, but that try to reach outside
# the snapshot: the configuration stops them (permission errors are reported as refusals).
READS_OUTSIDE = [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_csv_auto('/etc/passwd', header = false)",
    "SELECT content FROM read_text('/etc/passwd')",
    "SELECT content FROM read_blob('/etc/passwd')",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM read_json_auto('/etc/passwd')",
    "SELECT * FROM read_parquet('/etc/passwd')",
    "SELECT * FROM sniff_csv('/etc/passwd')",
    "SELECT * FROM read_text('{warehouse}')",
    "SELECT * FROM read_csv('https://example.com/data.csv')",
    "SELECT * FROM duckdb_extensions()",
    "WITH x AS (SELECT * FROM read_text('/etc/passwd')) SELECT * FROM x",
    "SELECT (SELECT content FROM read_text('/etc/hostname'))",
    "EXPLAIN ANALYZE SELECT * FROM read_blob('/etc/passwd')",
]


@pytest.mark.parametrize("sql", READS_OUTSIDE)
def test_reading_outside_the_snapshot_is_refused(sql, snap, warehouse, unchanged):
    with pytest.raises(QueryRefused) as refused:
        run_query(snap, sql.format(warehouse=warehouse))
    assert "the tables are events" in refused.value.message


# SELECTs that try to smuggle a statement in, or files DuckDB would look up as tables.
SMUGGLED = [
    "SELECT * FROM query('DROP TABLE events')",
    "SELECT * FROM query('SET threads = 8')",
    "SELECT * FROM query('ATTACH ''{snap}'' AS rw (READ_WRITE)')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT getenv('HOME')",
    "SELECT * FROM events WHERE 1 = (SELECT count(*) FROM '{target}/x.csv')",
]


@pytest.mark.parametrize("sql", SMUGGLED)
def test_smuggled_statements_fail_and_change_nothing(sql, snap, unchanged):
    with pytest.raises((QueryRefused, QueryFailed)):
        run_query(snap, sql.format(snap=snap, target=unchanged))


# A cross join of 10^12 pairs that no optimiser can shortcut (no equality to hash on).
SLOW = "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = -1"


# SELECTs that run but must stay harmless: table functions with a side effect in a writable
# database (a checkpoint), settings read back, the random seed of the session.
HARMLESS = [
    "SELECT * FROM checkpoint()",
    "SELECT current_setting('memory_limit'), current_setting('enable_external_access')",
    "SELECT setseed(0.5), random()",
]


@pytest.mark.parametrize("sql", HARMLESS)
def test_harmless_selects_run_and_change_nothing(sql, snap, unchanged):
    try:
        json.dumps(run_query(snap, sql).to_dict(), allow_nan=False)
    except QueryFailed as e:  # e.g. FORCE CHECKPOINT: not within a query's transaction
        assert "the tables are" in e.message


def test_a_huge_cross_join_times_out_and_the_next_query_works(snap, unchanged):
    started = time.perf_counter()
    with pytest.raises(QueryFailed) as failed:
        run_query(
            snap,
            "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = -1",
            timeout_s=1.0,
        )
    assert time.perf_counter() - started < 1.0 + sandbox.GRACE_S + 1.0
    assert "time limit" in failed.value.message
    assert "LIMIT" in failed.value.message  # says what to do
    assert run_query(snap, "SELECT count(*) FROM episodes").rows[0][0] > 0


def test_a_cross_join_that_lists_rows_streams_and_is_capped(snap, unchanged):
    result = run_query(snap, "SELECT * FROM events a, events b", max_rows=500)
    assert len(result.rows) == 500
    assert result.truncated


def test_the_memory_limit_holds_without_spilling_to_disk(snap, unchanged):
    with pytest.raises(QueryFailed) as failed:
        run_query(snap, "SELECT count(DISTINCT range) FROM range(50000000)", memory_limit="64MB")
    assert "64MB memory limit" in failed.value.message


def test_a_syntax_error_is_a_failure_that_names_the_tables(snap, unchanged):
    with pytest.raises(QueryFailed) as failed:
        run_query(snap, "SELEC * FROM events")
    assert "syntax" in failed.value.message and "episodes" in failed.value.message
    with pytest.raises(QueryFailed) as failed:
        run_query(snap, "SELECT * FROM no_such_table")
    assert "no_such_table" in failed.value.message and "the tables are" in failed.value.message


def test_overlong_sql_is_refused(snap):
    with pytest.raises(QueryRefused):
        run_query(snap, "SELECT 1 " + "-" * sandbox.MAX_SQL_CHARS)


def test_the_connection_itself_resists_what_the_policy_refuses(snap, unchanged):
    """Defence in depth: even with the statement check bypassed, the handle's configuration
    refuses writes, escapes and reconfiguration."""
    con = sandbox._open(snap, "256MB", 1)
    try:
        (name,) = con.execute("SELECT current_database()").fetchone()  # type: ignore[misc]
        attempts = [
            "SET enable_external_access = true",
            "SET threads = 8",
            "RESET memory_limit",
            "SET lock_configuration = false",
            f"ATTACH '{snap}' AS rw (READ_WRITE)",
            f"ATTACH '{unchanged}/new.duckdb' AS fresh",
            "ATTACH ':memory:' AS scratch",
            f'DETACH "{name}"',
            f'DETACH "{name}"; ATTACH \'{snap}\' AS "{name}" (READ_WRITE)',
            f"COPY (SELECT 1) TO '{unchanged}/x.csv'",
            f"EXPORT DATABASE '{unchanged}/export'",
            "INSTALL httpfs",
            "LOAD httpfs",
            "CREATE TABLE t (a INTEGER)",
            "INSERT INTO checkpoint VALUES (0)",
            "DROP TABLE events",
            "SELECT * FROM read_text('/etc/passwd')",
        ]
        for sql in attempts:
            with pytest.raises(duckdb.Error):
                con.execute(sql).fetchall()
        settings = dict(
            con.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN ('access_mode', "
                "'enable_external_access', 'lock_configuration', 'threads', "
                "'autoload_known_extensions', 'autoinstall_known_extensions')"
            ).fetchall()
        )
        assert settings == {
            "access_mode": "read_only",
            "enable_external_access": "false",
            "lock_configuration": "true",
            "threads": "1",
            "autoload_known_extensions": "false",
            "autoinstall_known_extensions": "false",
        }
    finally:
        con.close()


def test_why_an_in_memory_database_with_a_read_only_attach_is_not_a_sandbox(tmp_path, warehouse):
    """The design this module avoids: DETACH and a read-write ATTACH of the same file escapes
    it (shown on a copy of the warehouse)."""
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(warehouse.read_bytes())
    con = duckdb.connect()
    con.execute(f"ATTACH '{copy}' AS wh (READ_ONLY)")
    with pytest.raises(duckdb.Error):
        con.execute("DELETE FROM wh.events")
    con.execute("DETACH wh")
    con.execute(f"ATTACH '{copy}' AS wh (READ_WRITE)")
    con.execute("DELETE FROM wh.events")  # escaped
    assert con.execute("SELECT count(*) FROM wh.events").fetchone() == (0,)
    con.close()


# --- legitimate queries ------------------------------------------------------------------------


def test_every_table_reads_as_in_the_warehouse(snap, warehouse, unchanged):
    expected = table_counts(warehouse)
    for table, count in expected.items():
        assert run_query(snap, f"SELECT count(*) AS n FROM {table}").rows == [[count]]
    assert expected["episodes"] > 0 and expected["events"] > 0


def test_rows_match_sql_on_the_warehouse(snap, warehouse, unchanged):
    sql = (
        "SELECT coalesce(agent, '(none)') AS agent, count(*) AS n, "
        "avg(total_return) AS mean_return FROM episodes GROUP BY ALL ORDER BY agent"
    )
    con = duckdb.connect(str(warehouse), read_only=True)
    expected = [list(r) for r in con.execute(sql).fetchall()]
    con.close()
    result = run_query(snap, sql)
    assert isinstance(result, QueryResult)
    assert result.columns == ["agent", "n", "mean_return"]
    assert result.types == ["VARCHAR", "BIGINT", "DOUBLE"]
    assert result.rows == expected
    assert not result.truncated and result.seconds >= 0


@pytest.mark.parametrize(
    "sql",
    [
        "WITH ended AS (SELECT * FROM episodes WHERE outcome IS NOT NULL) "
        "SELECT family, avg(success::INTEGER) FROM ended GROUP BY family",
        "FROM steps SELECT tool, count(*) GROUP BY tool",
        "SELECT label, description FROM failures JOIN taxonomy USING (label) LIMIT 5",
        "VALUES (1, 'a'), (2, 'b')",
        "(SELECT 1) UNION ALL (SELECT 2)",
        "DESCRIBE episodes",
        "SHOW TABLES",
        "SUMMARIZE steps",
        "EXPLAIN SELECT count(*) FROM events",
        "EXPLAIN ANALYZE SELECT count(*) FROM events",
        "-- a comment first\nSELECT 1;",
        "/* block */ SELECT position FROM checkpoint;  ",
        "SELECT current_setting('threads'), current_setting('memory_limit')",
        "SELECT * FROM duckdb_tables()",
        "SELECT data->>'$.scenario' AS scenario FROM events WHERE type = 'EpisodeStarted'",
    ],
)
def test_read_only_forms_are_accepted(sql, snap, unchanged):
    result = run_query(snap, sql)
    assert result.columns
    json.dumps(result.to_dict(), allow_nan=False)


def test_the_tables_listed_in_messages_are_the_schema(snap):
    assert set(sandbox.TABLES) == {
        "events",
        "steps",
        "episodes",
        "failures",
        "mistakes",
        "approvals",
        "chaos",
        "taxonomy",
        "checkpoint",
    }
    assert sorted(r[0] for r in run_query(snap, "SHOW TABLES").rows) == sorted(sandbox.TABLES)


def test_settings_can_be_read(snap):
    result = run_query(
        snap,
        "SELECT current_setting('threads') AS threads, "
        "current_setting('enable_external_access') AS ext",
        threads=1,
    )
    assert result.rows == [[1, False]]


def test_rows_are_json_ready(snap):
    result = run_query(
        snap,
        "SELECT [1, 2] AS l, {'a': 1.5::DECIMAL(4, 2)} AS s, TIMESTAMP '2025-01-02 03:04:05' AS t,"
        " DATE '2025-01-02' AS d, TIME '10:00' AS tm, INTERVAL 90 MINUTE AS i, 'nan'::DOUBLE AS n,"
        " 'inf'::DOUBLE AS inf, '-inf'::DOUBLE AS ninf,"
        " '00000000-0000-0000-0000-000000000001'::UUID AS u, '\\xAA'::BLOB AS b,"
        " MAP {1: 'x'} AS m, 12345678901234567890123::HUGEINT AS h, '{\"k\": 1}'::JSON AS j,"
        " [1, 2]::INTEGER[2] AS arr, chaos_kinds, started_at FROM episodes LIMIT 1",
    )
    row = dict(zip(result.columns, result.rows[0], strict=True))
    json.dumps(result.rows, allow_nan=False)
    assert row["l"] == [1, 2] and row["s"] == {"a": 1.5} and row["arr"] == [1, 2]
    assert (
        row["t"] == "2025-01-02T03:04:05" and row["d"] == "2025-01-02" and row["tm"] == "10:00:00"
    )
    assert row["i"] == 5400.0
    assert (row["n"], row["inf"], row["ninf"]) == ("NaN", "Infinity", "-Infinity")
    assert row["u"] == "00000000-0000-0000-0000-000000000001"
    assert row["b"] == "qg==" and row["m"] == {"1": "x"}
    assert row["h"] == 12345678901234567890123 and row["j"] == '{"k": 1}'
    assert isinstance(row["chaos_kinds"], list) and isinstance(row["started_at"], str)


def test_jsonable_converts_python_values():
    assert jsonable(decimal.Decimal("2.50")) == 2.5
    assert jsonable(dt.datetime(2025, 1, 1, tzinfo=dt.UTC)) == "2025-01-01T00:00:00+00:00"
    assert jsonable((1, {2: [dt.date(2025, 1, 1)]})) == [1, {"2": ["2025-01-01"]}]
    assert jsonable(uuid.UUID(int=0)) == str(uuid.UUID(int=0))
    assert jsonable(math.nan) == "NaN"


def test_rows_are_capped(snap):
    result = run_query(snap, "SELECT * FROM steps", max_rows=10)
    assert len(result.rows) == 10 and result.truncated
    total = run_query(snap, "SELECT count(*) FROM steps").rows[0][0]
    exact = run_query(snap, "SELECT * FROM steps", max_rows=total)
    assert len(exact.rows) == total and not exact.truncated


def test_concurrent_queries_share_the_snapshot(snap):
    results: list[object] = []

    def one(i: int) -> None:
        try:
            results.append(run_query(snap, f"SELECT count(*) + {i} FROM events").rows[0][0])
        except Exception as e:
            results.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    base = table_counts(snap)["events"]
    assert sorted(results) == [base + i for i in range(8)]  # type: ignore[type-var]


def test_queries_with_other_limits_run_while_one_is_running(snap):
    """Each query has a process and a DuckDB instance of its own: a slow one holds no lock
    that another query with other limits would have to wait for."""
    outcome: list[BaseException] = []

    def slow_query() -> None:
        try:
            run_query(snap, SLOW, timeout_s=2.0)
        except QueryFailed as e:
            outcome.append(e)

    slow = threading.Thread(target=slow_query)
    slow.start()
    time.sleep(0.3)
    try:
        assert run_query(snap, "SELECT 1", memory_limit="128MB").rows == [[1]]
    finally:
        slow.join()
    assert len(outcome) == 1 and "time limit" in str(outcome[0])


def test_a_missing_snapshot_is_a_clear_failure(tmp_path):
    with pytest.raises(QueryFailed) as failed:
        run_query(tmp_path / "nope.duckdb", "SELECT 1")
    assert "build the warehouse" in failed.value.message


# --- snapshots ---------------------------------------------------------------------------------


def test_a_snapshot_is_reused_until_the_warehouse_moves_on(tmp_path):
    path = tmp_path / "wh.duckdb"
    fill_warehouse(path, instances=4)
    dest = tmp_path / "snaps"
    first = snapshot(path, dest)
    assert snapshot(path, dest) == first
    assert table_counts(first) == table_counts(path)

    con = duckdb.connect(str(path))
    try:
        assert snapshot(con, dest) == first  # a checkpoint with nothing new rewrites nothing
        con.execute("INSERT INTO checkpoint VALUES (999999)")
        second = snapshot(con, dest)  # committed but only in the WAL: the checkpoint folds it
        assert second != first
        assert run_query(second, "SELECT max(position) FROM checkpoint").rows == [[999999]]
        assert run_query(first, "SELECT max(position) FROM checkpoint").rows != [[999999]]
        con.execute("INSERT INTO checkpoint VALUES (1000000)")
        third = snapshot(con, dest)
    finally:
        con.close()
    names = sorted(p.name for p in dest.iterdir())
    # The current snapshot and the previous one (a query may be about to open it); no more,
    # and no temporary file left behind.
    assert names == sorted([second.name, third.name])


def test_a_snapshot_of_a_path_folds_its_wal_without_touching_it(tmp_path):
    path = tmp_path / "wh.duckdb"
    fill_warehouse(path, instances=2)
    writer = duckdb.connect(str(path))
    try:
        writer.execute("INSERT INTO taxonomy VALUES ('new_label', 'only in the WAL')")
        wal = Path(f"{path}.wal")
        assert wal.exists()
        before = (digest(path), digest(wal))
        snap = snapshot(path, tmp_path / "snaps")
        assert (digest(path), digest(wal)) == before
    finally:
        writer.close()
    assert run_query(snap, "SELECT description FROM taxonomy WHERE label = 'new_label'").rows == [
        ["only in the WAL"]
    ]
    assert not Path(f"{snap}.wal").exists()


def test_snapshot_errors_are_clear(tmp_path):
    with pytest.raises(SnapshotError, match="build the warehouse"):
        snapshot(tmp_path / "missing.duckdb", tmp_path / "snaps")
    with pytest.raises(SnapshotError, match="in-memory"):
        snapshot(duckdb.connect(), tmp_path / "snaps")
