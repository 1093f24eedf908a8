"""The sandbox's limits hold for every function, not only those DuckDB's buffer manager counts:

- no path: the snapshot's file and folder, the temporary directory, the home directory and the
  working directory appear in no answer, whatever table function or setting is asked for;
- memory: each query runs in a process whose address space is capped, so a string built by
  ``repeat`` (outside ``memory_limit``) fails cleanly, and concurrent bombs stay within
  (queries at once) x (cap);
- time: at the timeout the query's process is killed; nothing of it keeps running;
- concurrency: at most `MAX_CONCURRENT` run at once; the rest wait, then get `SandboxBusy`;
- leftovers: the analytics folders of processes killed without a shutdown are swept at start.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

import duckdb
import pytest

from companyos.analytics import sandbox
from companyos.analytics.sandbox import (
    QueryFailed,
    QueryRefused,
    SandboxBusy,
    run_query,
    snapshot,
)
from companyos.analytics.service import PREFIX, sweep_stale

from . import ledger
from .analytics_fixtures import fill_warehouse

pytestmark = pytest.mark.reliability

SLOW = "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = -1"
BOMBS = [
    "SELECT length(repeat('x', 1e9::BIGINT))",
    "SELECT length(repeat('x', 2000000000))",
    "SELECT length(string_agg(repeat('x', 100000000), '')) FROM range(30)",
    "SELECT count(DISTINCT range) FROM range(500000000)",
]


@pytest.fixture(scope="module")
def snap(tmp_path_factory) -> Path:
    warehouse = tmp_path_factory.mktemp("warehouse") / "warehouse.duckdb"
    fill_warehouse(warehouse)
    return snapshot(warehouse, tmp_path_factory.mktemp("snapshots"))


def secrets_of(snap: Path) -> list[str]:
    """Paths no answer may contain."""
    return [
        str(snap),
        str(snap.parent),
        tempfile.gettempdir().rstrip("/") + "/",
        str(Path.home()),
        os.getcwd(),
    ]


def _table_functions() -> list[str]:
    con = duckdb.connect()
    try:
        rows = con.execute(
            "SELECT DISTINCT function_name FROM duckdb_functions() "
            "WHERE function_type = 'table' AND (parameters = [] OR parameters IS NULL)"
        ).fetchall()
    finally:
        con.close()
    return sorted(r[0] for r in rows)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM duckdb_databases()",
        "SELECT path FROM main.duckdb_databases()",
        'SELECT * FROM "duckdb_databases"()',
        "SELECT * FROM duckdb_settings()",
        "SUMMARIZE SELECT * FROM duckdb_settings()",
        "SELECT current_setting('secret_directory')",
        "SELECT current_setting('home_directory')",
        "SELECT current_setting(name) FROM (SELECT 'allowed_paths' AS name)",
        "SELECT * FROM pragma_database_list()",
        "SELECT * FROM duckdb_extensions()",
        "SELECT * FROM duckdb_temporary_files()",
        "SELECT * FROM query('SELECT path FROM duckdb_databases()')",
        "SELECT * FROM query_table('duckdb_settings')",
        "SELECT reverse(path) FROM duckdb_databases()",
        "EXPLAIN ANALYZE SELECT * FROM duckdb_databases()",
        "SHOW DATABASES",
        "SHOW ALL TABLES",
    ],
)
def test_no_answer_names_a_path(sql, snap):
    try:
        result = run_query(snap, sql)
    except (QueryRefused, QueryFailed) as refused:
        text = refused.message
    else:
        text = repr(result.to_dict())
    for secret in secrets_of(snap):
        assert secret not in text and secret[::-1] not in text, (sql, secret, text[:500])


def test_no_table_function_reveals_a_path(snap):
    """Every table function DuckDB has that takes no argument, called in the sandbox."""
    called = 0
    for name in _table_functions():
        try:
            text = repr(run_query(snap, f"SELECT * FROM {name}()", max_rows=1000).to_dict())
        except (QueryRefused, QueryFailed) as refused:
            text = refused.message
        called += 1
        for secret in secrets_of(snap):
            assert secret not in text, (name, secret, text[:500])
    assert called > 20


@pytest.mark.parametrize("bomb", BOMBS[:2])
def test_memory_outside_the_buffer_manager_is_capped(bomb, snap):
    with pytest.raises(QueryFailed) as failed:
        run_query(snap, bomb, memory_limit="512MB", timeout_s=60)
    assert "memory limit" in failed.value.message
    assert sandbox.high_water_kib() * 1024 <= sandbox.address_space_limit("512MB")
    assert run_query(snap, "SELECT count(*) FROM events").rows[0][0] > 0


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def test_concurrent_bombs_stay_within_the_cap(snap):
    bombs = ledger.scaled(6, 16)
    limit = sandbox.address_space_limit("512MB")
    outcomes: list[str] = []
    before = _rss_kib()

    def bomb(i: int) -> None:
        try:
            run_query(snap, BOMBS[i % len(BOMBS)], memory_limit="512MB", timeout_s=60)
            outcomes.append("ran")
        except SandboxBusy:
            outcomes.append("busy")
        except QueryFailed as e:
            outcomes.append("memory" if "memory limit" in e.message else e.message)

    threads = [threading.Thread(target=bomb, args=(i,)) for i in range(bombs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    peak = sandbox.high_water_kib() * 1024
    grown = (_rss_kib() - before) * 1024
    assert set(outcomes) <= {"memory", "busy"}, outcomes
    assert outcomes.count("memory") >= sandbox.MAX_CONCURRENT
    assert peak <= limit
    assert grown < 256 * 2**20  # the bombs' memory was the query processes', not the server's
    ledger.record(
        "limits: analytics sandbox under concurrent memory bombs",
        limits=len(outcomes),
        note=f"{bombs} bombs ({sandbox.MAX_CONCURRENT} at once): {outcomes.count('memory')} "
        f"stopped at the cap, {outcomes.count('busy')} told to retry; high-water "
        f"{peak / 2**20:,.0f} MiB per query process against a cap of {limit / 2**20:,.0f} MiB "
        f"(512MB memory_limit + {sandbox.HEADROOM // 2**20} MiB), at most "
        f"{sandbox.MAX_CONCURRENT * limit / 2**30:.1f} GiB at once; the server grew "
        f"{max(grown, 0) / 2**20:.0f} MiB",
    )


def _children_of_the_forkserver() -> list[int]:
    from multiprocessing import forkserver

    server = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    if server is None:
        return []
    out = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line
            )
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(server) and fields["State"][0] != "Z":
            out.append(int(status.parent.name))
    return out


def test_a_timed_out_query_leaves_nothing_running(snap):
    threads = threading.active_count()
    with pytest.raises(QueryFailed) as failed:
        run_query(snap, SLOW, timeout_s=1.0)
    assert "time limit" in failed.value.message
    assert _children_of_the_forkserver() == [] and not sandbox._LIVE
    assert threading.active_count() <= threads
    assert run_query(snap, "SELECT 1").rows == [[1]]


def test_queries_beyond_the_cap_wait_then_are_told_to_retry(snap):
    outcome: list[str] = []

    def slow() -> None:
        try:
            run_query(snap, SLOW, timeout_s=3.0)
        except QueryFailed as e:
            outcome.append(e.message)

    running = [threading.Thread(target=slow) for _ in range(sandbox.MAX_CONCURRENT)]
    for t in running:
        t.start()
    try:
        while len(sandbox._LIVE) < sandbox.MAX_CONCURRENT:
            threading.Event().wait(0.05)
        with pytest.raises(SandboxBusy) as busy:
            run_query(snap, "SELECT 1", timeout_s=0.5)
        assert "retry" in busy.value.message
    finally:
        for t in running:
            t.join()
    assert len(outcome) == sandbox.MAX_CONCURRENT
    assert run_query(snap, "SELECT 1").rows == [[1]]


def test_folders_of_dead_processes_are_swept_at_start(tmp_path):
    import subprocess
    import sys

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(dead.stdout)
    stale = tmp_path / f"{PREFIX}{dead_pid}-abc"
    (stale / "snapshots").mkdir(parents=True)
    (stale / "warehouse.duckdb").write_bytes(b"x" * 1000)
    live = tmp_path / f"{PREFIX}{os.getpid()}-def"
    live.mkdir()
    parent = tmp_path / f"{PREFIX}{os.getppid()}-ghi"
    parent.mkdir()
    unrelated = tmp_path / "companyos-analytics-notapid"
    unrelated.mkdir()
    assert sweep_stale(tmp_path) == [stale]
    assert not stale.exists() and live.exists() and parent.exists() and unrelated.exists()
