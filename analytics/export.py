"""Parquet export of the warehouse: every table as a partitioned dataset whose files all have
the very same columns, in the table's order, with the table's types: datasets for offline RL,
readable by DuckDB, pandas, pyarrow, Spark and the like.

Layout, one directory per table under the output directory, one sub-directory per partition
value (``KEY-VALUE``), a ``part-0.parquet`` file in each:

=============  ===========================  ==================================================
table          partitioned by               why
=============  ===========================  ==================================================
events         ``type``                     one event type at a time (every ToolCalled, ...)
steps          ``family``, ``difficulty``   transitions of one kind of task at one chaos level;
                                            the two columns are the episode's, added to each
                                            step for the purpose
episodes       ``family``, ``difficulty``   the same split as the steps they join to
failures       ``label``                    the failures of one kind of mistake
approvals,     ``family``                   the requests and the chaos of one kind of task (the
chaos                                       episode's family, added to each row)
taxonomy       (one file)                   a few rows
checkpoint     (one file)                   one row: the log position the export reflects
=============  ===========================  ==================================================

Why not hive ``key=value`` directories: a hive reader takes the key out of the path and guesses
its type (DuckDB reads ``difficulty=2`` as BIGINT even in a file that stores INTEGER; pandas
and pyarrow make it a category, and refuse a file that also holds the column), so the columns
and types a reader sees would depend on how many partitions it read. Here the partition columns
are in every file, typed by an explicit schema (each column cast to the warehouse's type), and
the directory names are for people and for globbing: ``steps/family-expense_report/**``.

Read back with DuckDB: ``read_parquet('DIR/steps/**/*.parquet')`` (several partitions:
``read_parquet(['DIR/steps/family-a/**/*.parquet', 'DIR/steps/family-b/**/*.parquet'])``);
pandas: ``pandas.read_parquet('DIR/steps')``; pyarrow: ``pyarrow.dataset.dataset('DIR/steps')``.

Memory stays bounded whatever the size of the log: each partition is its own ``COPY`` of the
rows with that value (DuckDB streams a scan to the file), run with a memory limit (DuckDB spills
beyond it to its temporary directory); the warehouse's own limit is put back afterwards.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, NamedTuple

from .warehouse import Warehouse


class Dataset(NamedTuple):
    select: str
    """The rows to export (every column of the table, and any partition column added)."""
    partition_by: tuple[str, ...]
    order_by: str
    """The order of the rows within a partition's file(s)."""


_FAMILY = "(SELECT family FROM episodes e WHERE e.episode_id = t.episode_id)"

DATASETS: dict[str, Dataset] = {
    "events": Dataset("SELECT * FROM events", ("type",), "position"),
    "steps": Dataset(
        "SELECT s.*, e.family, e.difficulty FROM steps s JOIN episodes e USING (episode_id)",
        ("family", "difficulty"),
        "episode_id, step",
    ),
    "episodes": Dataset("SELECT * FROM episodes", ("family", "difficulty"), "episode_id"),
    "failures": Dataset("SELECT * FROM failures", ("label",), "episode_id"),
    "mistakes": Dataset("SELECT * FROM mistakes", ("label",), "episode_id, step, label"),
    "approvals": Dataset(
        f"SELECT t.*, {_FAMILY} AS family FROM approvals t",
        ("family",),
        "episode_id, requested_step, approval_id",
    ),
    "chaos": Dataset(
        f"SELECT t.*, {_FAMILY} AS family FROM chaos t",
        ("family",),
        "episode_id, step, kind, target",
    ),
    "taxonomy": Dataset("SELECT * FROM taxonomy", (), "label"),
    "checkpoint": Dataset("SELECT * FROM checkpoint", (), "position"),
}
"""What each table exports, and its partition keys."""

MEMORY_LIMIT = "400MB"
"""DuckDB's memory limit while exporting (it spills to a temporary directory beyond)."""


def _literal(text: str | Path) -> str:
    """A SQL string literal (COPY takes no parameter for its target)."""
    return "'" + str(text).replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def schema(warehouse: Warehouse, dataset: Dataset) -> list[tuple[str, str]]:
    """The exported columns and their DuckDB types: what every file of the dataset holds."""
    cur = warehouse.con.execute(f"DESCRIBE {dataset.select}")
    return [(name, kind) for name, kind, *_ in cur.fetchall()]


def _dirname(key: str, value: Any) -> str:
    # Partition values are a closed vocabulary (event types, family names, difficulty 0-3,
    # taxonomy labels): safe as directory names; anything else is refused, not escaped.
    text = str(value)
    if not text or any(not (c.isalnum() or c in "_-") for c in text):
        raise ValueError(f"partition value {text!r} of {key} is not a safe directory name")
    return f"{key}-{text}"


def _sql_value(value: Any) -> str:
    return _literal(value) if isinstance(value, str) else str(int(value))


def _copy(warehouse: Warehouse, dataset: Dataset, target: Path) -> None:
    con = warehouse.con
    columns = schema(warehouse, dataset)
    typed = ", ".join(f"CAST({_ident(n)} AS {t}) AS {_ident(n)}" for n, t in columns)
    source = f"SELECT {typed} FROM ({dataset.select})"
    target.mkdir(parents=True)
    keys = dataset.partition_by
    values: list[tuple[Any, ...]] = [()]
    if keys:
        values = con.execute(
            f"SELECT DISTINCT {', '.join(keys)} FROM ({dataset.select}) ORDER BY ALL"
        ).fetchall()
    if not values:
        values = [()]  # an empty table: one file, so that readers still find its columns
    for value in values:
        pairs = list(zip(keys, value, strict=True)) if value else []
        # COPY takes no parameters: the values (a closed vocabulary, see _dirname) are inlined.
        where = " AND ".join(f"{_ident(k)} = {_sql_value(v)}" for k, v in pairs)
        folder = target.joinpath(*(_dirname(k, v) for k, v in pairs))
        folder.mkdir(parents=True, exist_ok=True)
        rows = f"{source}{' WHERE ' + where if where else ''} ORDER BY {dataset.order_by}"
        con.execute(
            f"COPY ({rows}) TO {_literal(folder / 'part-0.parquet')} "
            f"(FORMAT PARQUET, ROW_GROUP_SIZE 100000)"
        )


def export_parquet(
    warehouse: Warehouse, out_dir: str | Path, *, overwrite: bool = False
) -> dict[str, Path]:
    """Write every table under ``out_dir`` (created if need be), one directory per table;
    returns the directories. A table's directory that exists already is an error unless
    ``overwrite`` (then that directory, and only it, is replaced)."""
    root = Path(out_dir)
    targets = {table: root / table for table in DATASETS}
    existing = [t for t, path in targets.items() if path.exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"{root} already holds an export ({', '.join(existing)}): choose another directory "
            "or pass overwrite=True"
        )
    for path in targets.values():
        if path.exists():
            shutil.rmtree(path)
    con = warehouse.con
    # Only the memory limit is changed (and put back): DuckDB spills beyond it to its
    # temporary directory (beside a warehouse file), which cannot be switched once used.
    try:
        con.execute(f"SET memory_limit = {_literal(MEMORY_LIMIT)}")
        for table, dataset in DATASETS.items():
            _copy(warehouse, dataset, targets[table])
    finally:
        # The warehouse's own limit (a setting reads back rounded, so not that).
        own = getattr(warehouse, "memory_limit", None)
        con.execute(f"SET memory_limit = {_literal(own)}" if own else "RESET memory_limit")
    return targets
