"""`bench/sqlite_append.py` (in `make bench`): the reference must write exactly the rows the
store writes, or its ratio compares unlike work; two writers taking turns must write what one
writes, in turns that alternate; and every row must be printed."""

from __future__ import annotations

import json

from tests.helpers import bench_probe

PROBE = """
import json, sqlite3
from pathlib import Path
import sqlite_append as bench

tmp = Path({tmp!r})
opening, steps = bench.record(3)
rows = bench.rows_of(opening + steps)
bench.store_run(tmp / "store.db", opening, steps, 4)
bench.raw_run(tmp / "raw.db", rows[: len(opening)], rows[len(opening) :], 4)

def table(path):
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT episode_id, seq, event_id, type, schema_version, payload, hash FROM events "
            "ORDER BY position"
        ).fetchall()

store, raw = table(tmp / "store.db"), table(tmp / "raw.db")
bench.turns_run(tmp / "one.db", opening, steps, 1)
bench.turns_run(tmp / "two.db", opening, steps, 2)
one, two = (sorted(table(tmp / f)) for f in ("one.db", "two.db"))
order, who = bench.in_turns(steps)
kept = all(
    [a for a in order if a[0] == s] == [a for a in steps if a[0] == s] for s, _, _ in steps
)
results = bench.main(["--episodes", "3", "--rounds", "1", "--group", "4"])
print(json.dumps([store == raw, len(store), len(steps), results,
                  one == two == sorted(store), kept, who[:6],
                  sorted(map(id, order)) == sorted(map(id, steps))]))
"""


def test_the_reference_writes_the_stores_rows_and_every_row_is_printed(tmp_path):
    probe = PROBE.format(tmp=str(tmp_path))
    same, n_rows, n_steps, results, turns_same, kept, who, all_there = json.loads(
        bench_probe(probe)
    )
    assert same, "the reference's rows differ from the store's"
    assert turns_same, "two writers in turns wrote other rows than one writer"
    assert kept and all_there, "the turns lost, added or reordered a stream's appends"
    assert who == [0, 1, 0, 1, 0, 1], "the writers do not take turns"
    assert n_steps > 20 and n_rows > 3 * n_steps  # opening events and every step's
    assert results["appends"] == n_steps
    rows = results["rows"]
    assert set(rows) == {
        "raw sqlite3 executemany, a commit each (reference)",
        "SQLEventStore, a commit each",
        "raw sqlite3 executemany, a commit per 4 (reference)",
        "SQLEventStore, group commit 4",
        "of which sealing (canonical JSON, SHA-256)",
        "one SQLEventStore, two episodes' appends in turn (reference)",
        "two SQLEventStores on the file, taking turns",
    }
    assert all(r["us"] > 0 for r in rows.values())
    assert rows["SQLEventStore, a commit each"]["ratio"].endswith("x")
    assert rows["two SQLEventStores on the file, taking turns"]["ratio"].endswith("x")
