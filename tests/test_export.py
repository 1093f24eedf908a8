"""Parquet export: every table, partitioned, read back by DuckDB and by pandas with the same
rows and values as the warehouse holds; every partition file has the same columns, in the same
order, with the same types, so any set of partitions reads back as one table."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from companyos.agents import in_process_oracle, play
from companyos.analytics.export import DATASETS, export_parquet, schema
from companyos.analytics.warehouse import TABLES, Warehouse
from companyos.api import CompanyOSEnvironment
from companyos.domain import FAMILY_NAMES
from companyos.events import InMemoryEventStore

from .test_warehouse import odd_streams, play_round


@pytest.fixture(scope="module")
def wh() -> Any:
    store = InMemoryEventStore()
    play_round(store, range(0, 6))
    odd_streams(store)
    with Warehouse() as w:
        w.catch_up(store)
        # Points of no return set by hand, None for every other failure: both kinds exported.
        rows = w.con.execute("SELECT episode_id FROM failures ORDER BY 1").fetchall()
        failed = [r[0] for r in rows]
        w.set_points_of_no_return({e: (i if i % 2 else None) for i, e in enumerate(failed)})
        yield w


def expected(w: Warehouse, table: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    cursor = w.con.execute(f"SELECT * FROM ({DATASETS[table].select}) t ORDER BY ALL")
    return [d[0] for d in cursor.description], cursor.fetchall()


def test_every_table_is_exported_partitioned(wh: Warehouse, tmp_path: Path):
    paths = export_parquet(wh, tmp_path / "out")
    assert set(paths) == set(TABLES) == set(DATASETS)
    for table, path in paths.items():
        assert path == tmp_path / "out" / table and path.is_dir()
        keys = DATASETS[table].partition_by
        if keys:
            first = sorted(p.name for p in path.iterdir())
            assert first and all(name.startswith(f"{keys[0]}-") for name in first)
    events = {p.name for p in paths["events"].iterdir()}
    assert {"type-ToolCalled", "type-EpisodeStarted", "type-StepScored"} <= events
    assert any(paths["steps"].glob("family-*/difficulty-*/*.parquet"))


def test_duckdb_reads_back_the_same_rows(wh: Warehouse, tmp_path: Path):
    paths = export_parquet(wh, tmp_path)
    con = duckdb.connect()
    for table, path in paths.items():
        columns, rows = expected(wh, table)
        quoted = ", ".join(f'"{c}"' for c in columns)
        back = con.execute(
            f"SELECT {quoted} FROM read_parquet($glob) ORDER BY ALL",
            {"glob": f"{path}/**/*.parquet"},
        ).fetchall()
        assert len(back) == len(rows) > 0, table
        assert back == rows, table
    con.close()


def _plain(value: Any) -> Any:
    """A value as pandas hands it back, made comparable to DuckDB's Python value."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, bytes):
        return value.decode()
    return value


def test_pandas_reads_back_the_same_rows(wh: Warehouse, tmp_path: Path):
    paths = export_parquet(wh, tmp_path)
    for table, path in paths.items():
        columns, rows = expected(wh, table)
        df = pd.read_parquet(path)
        assert len(df) == len(rows) > 0, table
        assert set(df.columns) == set(columns), table
        back = sorted(
            tuple(_plain(v) for v in record)
            for record in df[columns].astype(object).itertuples(index=False, name=None)
        )
        assert back == rows, table
    timestamps = pd.read_parquet(paths["events"])["recorded_at"]
    assert isinstance(timestamps.iloc[0].to_pydatetime(), dt.datetime)


def test_an_empty_table_is_still_a_readable_dataset(tmp_path: Path):
    store = InMemoryEventStore()
    env = CompanyOSEnvironment(store)
    play(env, in_process_oracle(env), seed=1, task_id=FAMILY_NAMES[0], difficulty=1)
    with Warehouse() as w:
        w.catch_up(store)
        assert w.con.execute("SELECT count(*) FROM failures").fetchall() == [(0,)]
        paths = export_parquet(w, tmp_path)
    df = pd.read_parquet(paths["failures"])
    assert len(df) == 0 and "label" in df.columns
    assert duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{paths['failures']}/**/*.parquet')"
    ).fetchall() == [(0,)]


def test_an_existing_export_is_replaced_only_when_asked(wh: Warehouse, tmp_path: Path):
    export_parquet(wh, tmp_path)
    keep = tmp_path / "notes.txt"
    keep.write_text("mine")
    with pytest.raises(FileExistsError, match="overwrite"):
        export_parquet(wh, tmp_path)
    paths = export_parquet(wh, tmp_path, overwrite=True)
    assert keep.read_text() == "mine"
    assert len(pd.read_parquet(paths["episodes"])) == len(expected(wh, "episodes")[1])


def test_every_partition_has_the_columns_and_types_of_the_table(wh: Warehouse, tmp_path: Path):
    paths = export_parquet(wh, tmp_path)
    con = duckdb.connect()
    for table, path in paths.items():
        want = schema(wh, DATASETS[table])
        files = sorted(path.rglob("*.parquet"))
        assert files, table
        for f in files:
            got = con.execute("DESCRIBE SELECT * FROM read_parquet($f)", {"f": str(f)}).fetchall()
            assert [(n, t) for n, t, *_ in got] == want, f
        # Any few partitions together (DuckDB's union of files, and by name): the same table.
        some = [str(f) for f in files[:3]]
        for options in ("", ", union_by_name = true"):
            got = con.execute(f"DESCRIBE SELECT * FROM read_parquet($f{options})", {"f": some})
            assert [(n, t) for n, t, *_ in got.fetchall()] == want, (table, options)
        union = " UNION ALL ".join(f"SELECT * FROM read_parquet('{f}')" for f in some)
        got = con.execute(f"DESCRIBE {union}").fetchall()
        assert [(n, t) for n, t, *_ in got] == want
    # pyarrow sees one schema over every file of a dataset, the partition columns included.
    import pyarrow.dataset as pads

    steps = pads.dataset(paths["steps"], format="parquet")
    assert steps.schema.names == [n for n, _ in schema(wh, DATASETS["steps"])]
    assert str(steps.schema.field("difficulty").type) == "int32"
    assert len(steps.to_table()) == len(expected(wh, "steps")[1])
    con.close()


def test_the_steps_difficulty_keeps_its_type_in_pandas(wh: Warehouse, tmp_path: Path):
    paths = export_parquet(wh, tmp_path)
    one = next(paths["steps"].rglob("*.parquet"))
    assert str(pd.read_parquet(one)["difficulty"].dtype) == "int32"
    assert str(pd.read_parquet(paths["steps"])["difficulty"].dtype) == "int32"


def test_an_export_that_spills_to_disk_can_be_repeated(tmp_path: Path, monkeypatch):
    from companyos.analytics import export as export_module

    store = InMemoryEventStore()
    play_round(store, range(0, 3))
    monkeypatch.setattr(export_module, "MEMORY_LIMIT", "24MB")  # low: sorts may spill
    with Warehouse(tmp_path / "w.duckdb") as w:
        w.catch_up(store)
        [(before,)] = w.con.execute("SELECT current_setting('memory_limit')").fetchall()
        first = export_parquet(w, tmp_path / "a")
        again = export_parquet(w, tmp_path / "b")  # the spill directory is in use by now
        [(after,)] = w.con.execute("SELECT current_setting('memory_limit')").fetchall()
    assert after == before
    for table in DATASETS:
        assert sorted(p.relative_to(first[table]) for p in first[table].rglob("*.parquet")) == (
            sorted(p.relative_to(again[table]) for p in again[table].rglob("*.parquet"))
        )
