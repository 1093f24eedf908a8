"""The SQLite store's append against raw sqlite3 writing the same rows, measured in one run.

The appends are those of real steps: the scripted vendor-onboarding episodes of
`step_throughput.py` (`workload.py`) are played once on a store that records every append,
then the step appends are replayed, episode by episode, into:

- `SQLEventStore` on a SQLite file, committing each append, and with group commit
  (``--group``, 32 appends a commit; the last group committed inside the timing);
- the reference: Python's own `sqlite3` on a file of the same schema and pragmas (WAL,
  ``synchronous=NORMAL``), one ``executemany`` INSERT of the append's rows (the very rows the
  store writes: the events sealed beforehand, untimed), committed the same way.

The streams are created before the timing in both (a reset's opening events), so every timed
append is a step's. The ratio is the reference's time over the store's: what the store's own
work costs on top of SQLite writing the rows (the store also seals the events, checks the
stream's head, moves it, and keeps the append atomic and optimistic). The sealing alone (its
canonical JSON and SHA-256, `store.seal`) is timed too, so the rest is the store's database
work.

Two more rows ask what a second writer on the same file costs (`companyos serve --workers 2`
shares one SQLite file): the same step appends, the streams dealt alternately to two
`SQLEventStore`s on one file that take turns to append (a commit each), against one store
making the same appends in the same order (the reference for that row). In WAL mode a
connection that finds the database changed by another resets its page cache, so each turn
starts cold.

Each row is the best of ``--rounds`` rounds on a fresh file. The store copies its WAL
back into the database on a thread of its own (`events/checkpoints.py`), not inside a commit,
so the reference's automatic checkpoints are off too: neither pays for one in its timing.

    python bench/sqlite_append.py [--episodes N] [--rounds R] [--group G] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import bench_options


def options() -> argparse.ArgumentParser:
    parser = bench_options.parser(__doc__)
    parser.add_argument("--episodes", type=int, default=300, help="episodes (default 300)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--group", type=int, default=32, help="appends per group commit")
    return bench_options.with_json(parser)


if __name__ == "__main__":
    options().parse_args()  # --help answers here, before the imports below (seconds)

from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402
from workload import script_companyos  # noqa: E402

from companyos.api import CompanyOSEnvironment  # noqa: E402
from companyos.events import InMemoryEventStore  # noqa: E402
from companyos.events.sql import SQLEventStore, sqlite_url  # noqa: E402
from companyos.events.store import GENESIS, NEW_STREAM, Head, seal  # noqa: E402
from companyos.events.types import Event  # noqa: E402

clock = time.perf_counter
Append = tuple[str, list[Event], int]
"""(stream, events, the version the stream is expected at)."""


class Recorder(InMemoryEventStore):
    """An in-memory store that also keeps every append made to it, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.appends: list[Append] = []

    def extend(self, stream: str, events: Sequence[Event], expected_version: int) -> Head:
        self.appends.append((stream, list(events), expected_version))
        return super().extend(stream, events, expected_version)


def record(episodes: int) -> tuple[list[Append], list[Append]]:
    """The appends of ``episodes`` scripted episodes: (those creating streams, the steps')."""
    store = Recorder()
    script_companyos(CompanyOSEnvironment(store), range(episodes))
    opening = [a for a in store.appends if a[2] == NEW_STREAM]
    return opening, [a for a in store.appends if a[2] != NEW_STREAM]


Row = tuple[str, int, str, str, int, str, str, float]


def rows_of(appends: list[Append]) -> list[list[Row]]:
    """Each append's rows as the store writes them (sealed after the stream's previous
    event), with one recording time: what the reference inserts."""
    heads: dict[str, str] = {}
    out = []
    for stream, events, expected in appends:
        sealed = seal(stream, events, expected, heads.get(stream, GENESIS))
        heads[stream] = sealed[-1].hash
        out.append(
            [
                (
                    stream,
                    s.seq,
                    s.event_id,
                    s.type,
                    s.schema_version,
                    s.data_json.decode(),
                    s.hash,
                    0.0,
                )
                for s in sealed
            ]
        )
    return out


def store_run(path: Path, opening: list[Append], steps: list[Append], group: int) -> float:
    """Seconds the store took for the step appends (streams created first, untimed)."""
    store = SQLEventStore(sqlite_url(path))
    for stream, events, expected in opening:
        store.extend(stream, events, expected)
    store.close()
    store = SQLEventStore(sqlite_url(path), group_commit=group)
    t = clock()
    for stream, events, expected in steps:
        store.extend(stream, events, expected)
    store.flush()
    spent = clock() - t
    store.close()
    return spent


def in_turns(steps: list[Append]) -> tuple[list[Append], list[int]]:
    """The step appends with the streams dealt alternately to two writers, taking turns (each
    stream's appends keep their order), and which writer makes each."""
    order = list(dict.fromkeys(stream for stream, _, _ in steps))
    writer = {stream: i % 2 for i, stream in enumerate(order)}
    queues: list[list[Append]] = [[], []]
    for a in steps:
        queues[writer[a[0]]].append(a)
    out: list[Append] = []
    who: list[int] = []
    for pair in itertools.zip_longest(*queues):
        for w, a in enumerate(pair):
            if a is not None:
                out.append(a)
                who.append(w)
    return out, who


def turns_run(path: Path, opening: list[Append], steps: list[Append], stores: int) -> float:
    """Seconds ``stores`` stores (1 or 2) on one file took for the step appends in turns
    (`in_turns`): with one, it makes both writers' appends; with two, each makes its own."""
    first = SQLEventStore(sqlite_url(path))
    for stream, events, expected in opening:
        first.extend(stream, events, expected)
    first.close()
    writers = [SQLEventStore(sqlite_url(path)) for _ in range(stores)]
    order, who = in_turns(steps)
    t = clock()
    for (stream, events, expected), w in zip(order, who, strict=True):
        writers[w % stores].extend(stream, events, expected)
    spent = clock() - t
    for store in writers:
        store.close()
    return spent


INSERT = (
    "INSERT INTO events (episode_id, seq, event_id, type, schema_version, payload, hash, "
    "recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def raw_run(path: Path, opening: list[list[Row]], steps: list[list[Row]], group: int) -> float:
    """Seconds raw sqlite3 took to insert the step appends' rows, ``executemany`` an append
    and a commit every ``group`` appends, on a file of the store's schema and pragmas."""
    SQLEventStore(sqlite_url(path)).close()  # the schema, exactly the store's
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")  # the store checkpoints on a thread of its own
    conn.execute("BEGIN IMMEDIATE")
    for rows in opening:
        conn.executemany(INSERT, rows)
    conn.execute("COMMIT")
    t = clock()
    pending = 0
    for rows in steps:
        if not pending:
            conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT, rows)
        pending += 1
        if pending == group:
            conn.execute("COMMIT")
            pending = 0
    if pending:
        conn.execute("COMMIT")
    spent = clock() - t
    conn.close()
    return spent


def seal_run(steps: list[Append], opened: list[list[Row]]) -> float:
    """Seconds `store.seal` took for the step appends, each stream's first after the last of
    its opening rows, as the store seals them."""
    heads = {rows[-1][0]: rows[-1][6] for rows in opened}
    t = clock()
    for stream, events, expected in steps:
        heads[stream] = seal(stream, events, expected, heads[stream])[-1].hash
    return clock() - t


ONE_WRITER = "one SQLEventStore, two episodes' appends in turn (reference)"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = options().parse_args(argv)
    console = Console()
    opening, steps = record(args.episodes)
    rows = rows_of(opening + steps)  # each stream's steps chain on from its opening events
    opening_rows, step_rows = rows[: len(opening)], rows[len(opening) :]
    tmp = Path(tempfile.mkdtemp(prefix="companyos-append-bench-"))
    files = itertools.count()

    def fresh() -> Path:
        return tmp / f"{next(files)}.db"

    g = args.group
    each, grouped = (
        "raw sqlite3 executemany, a commit each (reference)",
        f"raw sqlite3 executemany, a commit per {g} (reference)",
    )
    # Each row: how it runs, and the row its ratio is taken against (None: no ratio).
    runs: dict[str, tuple[Callable[[], float], str | None]] = {
        each: (lambda: raw_run(fresh(), opening_rows, step_rows, 1), each),
        "SQLEventStore, a commit each": (lambda: store_run(fresh(), opening, steps, 1), each),
        grouped: (lambda: raw_run(fresh(), opening_rows, step_rows, g), grouped),
        f"SQLEventStore, group commit {g}": (
            lambda: store_run(fresh(), opening, steps, g),
            grouped,
        ),
        "of which sealing (canonical JSON, SHA-256)": (lambda: seal_run(steps, opening_rows), None),
        ONE_WRITER: (lambda: turns_run(fresh(), opening, steps, 1), ONE_WRITER),
        "two SQLEventStores on the file, taking turns": (
            lambda: turns_run(fresh(), opening, steps, 2),
            ONE_WRITER,
        ),
    }
    best: dict[str, float] = {}
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("rounds", total=args.rounds * len(runs))
        for _ in range(args.rounds):
            for name, (run, _) in runs.items():
                best[name] = min(best.get(name, float("inf")), run())
                progress.advance(task)
    n = len(steps)
    events = sum(len(e) for _, e, _ in steps)
    per = {k: v / n for k, v in best.items()}
    table = Table(
        title=f"A step's append on SQLite ({n:,} appends of {events / n:.1f} events, "
        f"{args.episodes} episodes), best of {args.rounds}"
    )
    for col in ("row", "per append", "ratio to its reference"):
        table.add_column(col, justify="left" if col == "row" else "right")
    results: dict[str, Any] = {"appends": n, "events": events, "rows": {}}
    for name, sec in per.items():
        against = runs[name][1]
        ratio = f"{per[against] / sec:.3f}x" if against else ""
        table.add_row(name, f"{sec * 1e6:,.1f} us", ratio)
        results["rows"][name] = {"us": sec * 1e6, "ratio": ratio}
    console.print(table)
    bench_options.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
