"""Parquet export of the warehouse: every table as a hive-partitioned dataset (DuckDB's own
``COPY ... TO ... (FORMAT PARQUET, PARTITION_BY ...)``, no extension), readable by DuckDB
(``read_parquet('DIR/steps/**/*.parquet', hive_partitioning = true)``), pandas
(``pandas.read_parquet('DIR/steps')``), pyarrow, Spark and the like: datasets for offline RL.

Layout, one directory per table under the output directory:

=============  ===========================  ==================================================
table          partitioned by               why
=============  ===========================  ==================================================
events         ``type``                     one event type at a time (every ToolCalled, ...)
steps          ``family``, ``difficulty``   transitions of one kind of task at one chaos level;
                                            the two columns are the episode's, added to each
                                            step for the purpose
episodes       ``family``, ``difficulty``   the same split as the steps they join to
failures       ``label``                    the failures of one kind of mistake
taxonomy       (one file)                   a few rows
checkpoint     (one file)                   one row: the log position the export reflects
=============  ===========================  ==================================================

Partition values are a closed vocabulary (event types, family names, difficulty 0-3, taxonomy
labels), never free text such as an agent's name, so every value is a safe directory name.
A partition column is stored in the directory names, not in the files: readers with hive
partitioning put it back as a column (pandas and pyarrow as a category, DuckDB as its type).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import NamedTuple

from .warehouse import Warehouse


class Dataset(NamedTuple):
    select: str
    """The rows to export."""
    partition_by: tuple[str, ...]


DATASETS: dict[str, Dataset] = {
    "events": Dataset("SELECT * FROM events ORDER BY position", ("type",)),
    "steps": Dataset(
        "SELECT s.*, e.family, e.difficulty FROM steps s JOIN episodes e USING (episode_id) "
        "ORDER BY s.episode_id, s.step",
        ("family", "difficulty"),
    ),
    "episodes": Dataset("SELECT * FROM episodes ORDER BY episode_id", ("family", "difficulty")),
    "failures": Dataset("SELECT * FROM failures ORDER BY episode_id", ("label",)),
    "taxonomy": Dataset("SELECT * FROM taxonomy ORDER BY label", ()),
    "checkpoint": Dataset("SELECT * FROM checkpoint", ()),
}
"""What each table exports, and its partition keys."""


def _literal(path: Path) -> str:
    """A path as a SQL string literal (COPY takes no parameter for its target)."""
    return "'" + str(path).replace("'", "''") + "'"


def _copy(warehouse: Warehouse, dataset: Dataset, target: Path) -> None:
    con = warehouse.con
    [(rows,)] = con.execute(f"SELECT count(*) FROM ({dataset.select})").fetchall()
    target.mkdir(parents=True)
    if dataset.partition_by and rows:
        keys = ", ".join(dataset.partition_by)
        options = f"FORMAT PARQUET, PARTITION_BY ({keys}), OVERWRITE_OR_IGNORE true"
        con.execute(f"COPY ({dataset.select}) TO {_literal(target)} ({options})")
    else:
        # One file; an empty table too, so that readers still find its columns (partitioned
        # COPY writes no file at all when there are no rows).
        file = target / "data_0.parquet"
        con.execute(f"COPY ({dataset.select}) TO {_literal(file)} (FORMAT PARQUET)")


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
    for table, dataset in DATASETS.items():
        _copy(warehouse, dataset, targets[table])
    return targets
