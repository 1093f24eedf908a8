"""The analytics warehouse on a million events: full load, incremental catch-up, canned queries.

The log is shaped like what `companyos eval --agent oracle,naive,random --trials 4` writes:
instances over every family and difficulty, each played four times by each agent. The random
agent's trials are played (each with its own seed, so they differ); the oracle and the naive
agent are deterministic, so their trials 2-4 store the very events of trial 1 (same seed, same
actions, same log: invariant 4) and are copied under new episode ids instead of being played
again. Everything is in an in-memory store.

Measured, on that log:

* reference: the events alone appended to the ``events`` table by DuckDB's appender (no
  projection), the floor of a load; and the same by an Arrow table, the warehouse's way when
  pyarrow is installed (the appender otherwise);
* full load: `Warehouse.catch_up` from empty (events, steps, episodes, failures), and the same
  with every stream derived even when an identical one was (no reuse of identical streams);
* catch-up: 10,000 new events (new episodes) after the full load;
* every canned query on the loaded warehouse (median of several runs).

Ratios compare with the reference measured in the same run. The machine may be shared: wall
and CPU seconds (this process, DuckDB's threads included) are both shown.

    python bench/analytics.py [--events N] [--catch-up M] [--trials K] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
from rich.console import Console
from rich.progress import Progress, TaskID

from companyos.agents import RandomAgent, in_process_naive, in_process_oracle, play
from companyos.analytics.queries import CANNED, run
from companyos.analytics.source import read_raw
from companyos.analytics.warehouse import _MOVE, _STAGE, Deriver, Warehouse, _arrow, pyarrow
from companyos.api import CompanyOSEnvironment
from companyos.domain import DIFFICULTIES, FAMILY_NAMES
from companyos.events import EventStore, InMemoryEventStore

TARGETS = {"full load": 10.0, "catch-up": 0.2, "query": 1.0}
"""Seconds, from issue 5's acceptance."""


@dataclass
class Timing:
    wall: float
    cpu: float


@contextmanager
def timed(out: list[Timing]) -> Iterator[None]:
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    out.append(Timing(time.perf_counter() - wall, time.process_time() - cpu))


# ---------------------------------------------------------------------------- the log


@dataclass
class Log:
    """Streams to write, in order: (source store, stream id) pairs, a stream once per trial."""

    source: InMemoryEventStore = field(default_factory=InMemoryEventStore)
    order: list[str] = field(default_factory=list)
    events: int = 0
    played: int = 0


def generate(target: int, trials: int, progress: Progress) -> Log:
    """Instances until ``target`` events: per instance, ``trials`` trials of each agent."""
    log = Log()
    env = CompanyOSEnvironment(log.source)
    oracle, naive = in_process_oracle(env), in_process_naive(env)
    task = progress.add_task("playing", total=target)
    i = 0
    while log.events < target:
        family = FAMILY_NAMES[i % len(FAMILY_NAMES)]
        kw = {"seed": 50_000 + i, "task_id": family, "difficulty": DIFFICULTIES[i % 4]}
        for agent in (oracle, naive):
            eid = play(env, agent, **kw).episode_id
            size = len(log.source.read(eid))
            log.order += [eid] * trials  # deterministic: every trial is this log
            log.events += size * trials
            log.played += size
        for t in range(trials):
            eid = play(env, RandomAgent(1000 * i + t), **kw).episode_id
            size = len(log.source.read(eid))
            log.order.append(eid)
            log.events += size
            log.played += size
        progress.update(task, completed=min(log.events, target))
        i += 1
    return log


def copy_streams(log: Log, streams: list[str], into: EventStore, n: int) -> int:
    """Append each of ``streams`` to ``into`` as a new episode; returns the events written."""
    written = 0
    for k, eid in enumerate(streams):
        events = [r.event for r in log.source.read(eid)]
        into.append(f"bench-{n + k:07d}", events, -1)
        written += len(events)
    return written


def split(log: Log, catch_up: int) -> tuple[list[str], list[str]]:
    """The streams loaded first, and the last streams (about ``catch_up`` events) after."""
    sizes = {eid: len(log.source.read(eid)) for eid in set(log.order)}
    tail, events = len(log.order), 0
    while tail > 0 and events < catch_up:
        tail -= 1
        events += sizes[log.order[tail]]
    return log.order[:tail], log.order[tail:]


# ---------------------------------------------------------------------------- measurements


def events_only(
    store: EventStore, page: int, arrow: bool, progress: Progress, task: TaskID
) -> None:
    """The events alone into a fresh ``events`` table, the way the warehouse stages them (same
    reads, same conversion in SQL, the cyclic collector paused as there), nothing else: by
    DuckDB's appender, or by an Arrow table (what the warehouse does when pyarrow is there)."""
    gc.disable()
    try:
        _events_only(store, page, arrow, progress, task)
    finally:
        gc.enable()


def _events_only(
    store: EventStore, page: int, arrow: bool, progress: Progress, task: TaskID
) -> None:
    con = duckdb.connect()
    con.execute(resources.files("companyos.analytics.sql").joinpath("schema.sql").read_text())
    con.execute(_STAGE)
    position = 0
    while rows := read_raw(store, position, page):
        con.begin()
        if arrow:
            con.register("page_events", _arrow(rows))
            con.execute(_MOVE.format(source="page_events"))
            con.unregister("page_events")
        else:
            with con.appender("stage_events") as app:
                app.append_rows(rows)
            con.execute(_MOVE.format(source="stage_events"))
            con.execute("DELETE FROM stage_events")
        con.commit()
        position = rows[-1].position
        progress.update(task, completed=position)
    con.close()


def load(
    store: EventStore, reuse: bool, progress: Progress, name: str, total: int
) -> tuple[Warehouse, Timing]:
    wh = Warehouse()
    if not reuse:
        wh.deriver = Deriver(max_memo=0)
    task = progress.add_task(name, total=total)
    out: list[Timing] = []
    with timed(out):
        wh.catch_up(store, lambda loaded, _: progress.update(task, completed=loaded))
    return wh, out[0]


def time_queries(wh: Warehouse, rounds: int) -> dict[str, Timing]:
    out: dict[str, Timing] = {}
    for name in CANNED:
        runs: list[Timing] = []
        for _ in range(rounds):
            with timed(runs):
                run(wh.con, name)
        out[name] = Timing(
            statistics.median(t.wall for t in runs), statistics.median(t.cpu for t in runs)
        )
    return out


# ---------------------------------------------------------------------------- report


def table(rows: list[dict[str, Any]]) -> str:
    head = "| measurement | events | wall s | CPU s | events/s | per event vs reference | target |"
    lines = [head, "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        rate = f"{r['events'] / r['wall']:,.0f}" if r["events"] else ""
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else ""
        target = ""
        if r["target"] is not None:
            target = f"< {r['target']:g} s " + ("met" if r["wall"] < r["target"] else "**missed**")
        events = f"{r['events']:,}" if r["events"] else ""
        lines.append(
            f"| {r['name']} | {events} | {r['wall']:.3f} | {r['cpu']:.3f} | {rate} | "
            f"{ratio} | {target} |"
        )
    return "\n".join(lines)


def row(
    name: str, t: Timing, events: int, ref_per_event: float | None, target: float | None
) -> dict[str, Any]:
    """A result; its ratio is its wall time per event over the reference's."""
    ratio = t.wall / events / ref_per_event if ref_per_event and events else None
    return {
        "name": name,
        "events": events,
        "wall": t.wall,
        "cpu": t.cpu,
        "ratio": ratio,
        "target": target,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--events", type=int, default=1_000_000, help="events in the log (default 1000000)"
    )
    parser.add_argument(
        "--catch-up",
        type=int,
        default=10_000,
        help="events appended after the full load, then caught up (default 10000)",
    )
    parser.add_argument("--trials", type=int, default=4, help="trials per agent (default 4)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per query (default 3)")
    parser.add_argument("--page", type=int, default=50_000, help="events per page (default 50000)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    load_before = os.getloadavg()[0]
    store = InMemoryEventStore()
    with Progress(console=console, transient=True) as progress:
        log = generate(args.events, args.trials, progress)
        first, tail = split(log, args.catch_up)
        task = progress.add_task("assembling the log", total=len(log.order))
        copied = copy_streams(log, first, store, 0)
        progress.update(task, completed=len(first))
        ref: list[Timing] = []
        for arrow in (False, True) if pyarrow is not None else (False,):
            task = progress.add_task("events only", total=copied)
            with timed(ref):
                events_only(store, args.page, arrow, progress, task)
        plain, plain_time = load(store, False, progress, "full load, no reuse", copied)
        plain.close()
        wh, full_time = load(store, True, progress, "full load", copied)
        derived, reused = wh.deriver.derived, wh.deriver.reused
        added = copy_streams(log, tail, store, len(first))
        catch: list[Timing] = []
        with timed(catch):
            result = wh.catch_up(store)
        assert result.events == added
        queries = time_queries(wh, args.rounds)
        wh.close()
    per_event = ref[0].wall / copied
    rows = [row("reference: events only, appender", ref[0], copied, per_event, None)]
    if len(ref) > 1:
        rows.append(
            row("events only, Arrow (the warehouse's way)", ref[1], copied, per_event, None)
        )
    rows += [
        row(
            "full load (identical streams derived once)",
            full_time,
            copied,
            per_event,
            TARGETS["full load"],
        ),
        row("full load, every stream derived", plain_time, copied, per_event, None),
        row(f"catch-up of {added:,} new events", catch[0], added, per_event, TARGETS["catch-up"]),
    ]
    rows += [row(f"query `{n}`", t, 0, None, TARGETS["query"]) for n, t in queries.items()]
    title = (
        f"Analytics on {copied + added:,} events ({len(log.order):,} episodes, "
        f"{log.played:,} events played, the rest copies of deterministic trials; "
        f"streams derived {derived:,}, reused {reused:,}; load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after)"
    )
    text = table(rows)
    print(title + "\n\n" + text)
    results = {"title": title, "rows": rows, "episodes": len(log.order), "played": log.played}
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
