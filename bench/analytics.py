"""The analytics warehouse at scale: full load, Parquet export, catch-up, canned queries and a
server's first request, each against today's code path measured in the same run.

The log is shaped like what `companyos eval --agent oracle,naive,random --trials 4` writes:
instances over every family and difficulty, each played four times by each agent (the random
agent's trials played, each with its own seed; the deterministic agents' trials 2-4, which
store the very events of trial 1, copied under new episode ids). It is written to a SQLite
store file, the store a server or `companyos analyze` reads.

Every measurement runs in a fresh process of its own (spawned), so that its peak RSS (the
process's, plus its largest worker's when it has workers) is its own, not the benchmark's:

* full load: today's path (`bench/reference_analytics.py`, the warehouse as it was before issue
  16) and the new one (`companyos.analytics.warehouse`) as it runs by default (``--workers``
  worker processes deriving episodes beside the loading process: CPUs - 1), and the new one in
  one process (no worker);
* the points of no return `companyos analyze` works out after a load, for every failure that
  has none yet: all of them after today's load (a pass of their own, in one process), none
  after the new one (worked out while loading, with the decisive mistake's forks); and the
  two together, what a user waits for before the failures table is complete;
* Parquet export of the loaded warehouse: today's export and the new one (bounded memory);
* catch-up: ``--catch-up`` new events appended to the store after the loads, caught up by both;
* every canned query on the loaded warehouse (median of ``--rounds``);
* a server's first analytics request after a cold start (`LiveAnalytics`): today's answered
  only after a full load; the new one answers at once from what is loaded and says how fresh
  it is, while the catch-up runs in the background (the time until it has caught up is shown).

Ratios are today's figure over the new one (above 1: the new path is better). The machine may
be shared (the load average is printed): wall and CPU seconds are both shown.

    python bench/analytics.py                  # 1M events
    python bench/analytics.py --big            # 5M events (several minutes, a few GB of disk)
    python bench/analytics.py --events 200000 --json out.json
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import bench_options

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))  # reference_analytics, in the spawned children too


# ---------------------------------------------------------------------------- the log


@dataclass
class Log:
    """Streams to write, in order: a stream id of the source store once per trial."""

    source: Any
    order: list[str] = field(default_factory=list)
    events: int = 0
    played: int = 0


def generate(target: int, trials: int, progress: Any) -> Log:
    """Instances until ``target`` events: per instance, ``trials`` trials of each agent."""
    from companyos.agents import RandomAgent, in_process_naive, in_process_oracle, play
    from companyos.api import CompanyOSEnvironment
    from companyos.domain import DIFFICULTIES, FAMILY_NAMES
    from companyos.events import InMemoryEventStore

    log = Log(InMemoryEventStore())
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


def copy_streams(log: Log, streams: list[str], into: Any, n: int, progress: Any = None) -> int:
    """Append each of ``streams`` to ``into`` as a new episode; returns the events written."""
    written = 0
    task = progress.add_task("writing the store", total=len(streams)) if progress else None
    for k, eid in enumerate(streams):
        events = [r.event for r in log.source.read(eid)]
        into.append(f"bench-{n + k:07d}", events, -1)
        written += len(events)
        if task is not None and k % 500 == 0:
            progress.update(task, completed=k)
    if hasattr(into, "flush"):
        into.flush()  # a SQLite store in group-commit mode: the last group
    return written


def split(log: Log, catch_up: int) -> tuple[list[str], list[str]]:
    """The streams loaded first, and the last streams (about ``catch_up`` events) after."""
    sizes = {eid: len(log.source.read(eid)) for eid in set(log.order)}
    tail, events = len(log.order), 0
    while tail > 0 and events < catch_up:
        tail -= 1
        events += sizes[log.order[tail]]
    return log.order[:tail], log.order[tail:]


# ---------------------------------------------------------------------------- in the children


def _store(db: str) -> Any:
    from companyos.events.sql import SQLEventStore, sqlite_url

    return SQLEventStore(sqlite_url(db))


def _peak_rss_kb() -> int:
    """This process's peak resident set (VmHWM): unlike ``ru_maxrss``, it starts afresh at
    exec, so a child spawned by the large benchmark process does not inherit its peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # not Linux: the best there is


def _usage(workers: bool) -> dict[str, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Kilobytes. With workers, the largest one runs alongside this process: added (its
    # ru_maxrss counts what it shared with this process when it started: an upper bound).
    rss = _peak_rss_kb() + (kids.ru_maxrss if workers else 0)
    return {"cpu": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, "rss_mb": rss / 1024}


def _measured(work: Callable[[], Any], workers: bool = False) -> dict[str, Any]:
    before = _usage(workers)
    wall = time.perf_counter()
    out = work()
    after = _usage(workers)
    return {
        "wall": time.perf_counter() - wall,
        "cpu": after["cpu"] - before["cpu"],
        "rss_mb": after["rss_mb"],
        "out": out,
    }


def child_load(db: str, path: str, which: str, workers: int, page: int) -> dict[str, Any]:
    """A full load of the store into a new warehouse file, today's way or the new one."""
    store = _store(db)
    if which == "today":
        import reference_analytics

        wh: Any = reference_analytics.Warehouse(path, page_size=page)
    else:
        from companyos.analytics.warehouse import Warehouse

        wh = Warehouse(path, page_size=page, workers=workers)

    def load() -> int:
        n = wh.catch_up(store).events
        wh.close()  # inside the measurement: the workers' CPU is counted once they are reaped
        return n

    result = _measured(load, workers > 0)
    store.close()
    return result


def child_export(path: str, out: str, which: str) -> dict[str, Any]:
    """The loaded warehouse file to Parquet, today's way or the new one."""
    if which == "today":
        import reference_analytics as mod

        wh: Any = mod.Warehouse(path)
    else:
        from companyos.analytics import export as mod
        from companyos.analytics.warehouse import Warehouse

        wh = Warehouse(path, workers=0)
    result = _measured(lambda: mod.export_parquet(wh, out))
    result["out"] = sum(f.stat().st_size for f in Path(out).rglob("*.parquet"))
    wh.close()
    return result


def child_no_return(db: str, path: str, which: str) -> dict[str, Any]:
    """The pass `companyos analyze` makes after a load: the point of no return of every
    failure that has none yet (today's load works out none; the new one all of them)."""
    from companyos.analyze import work_out_points_of_no_return

    store = _store(db)
    if which == "today":
        import reference_analytics

        wh: Any = reference_analytics.Warehouse(path)
    else:
        from companyos.analytics.warehouse import Warehouse

        wh = Warehouse(path, workers=0)

    result = _measured(lambda: work_out_points_of_no_return(wh, store, quiet=True))
    wh.close()
    store.close()
    return result


def child_catch_up(db: str, path: str, which: str) -> dict[str, Any]:
    store = _store(db)
    if which == "today":
        import reference_analytics

        wh: Any = reference_analytics.Warehouse(path)
    else:
        from companyos.analytics.warehouse import Warehouse

        wh = Warehouse(path)  # as it runs by default (a catch-up this small stays in-process)
    result = _measured(lambda: wh.catch_up(store).events, True)
    wh.close()
    store.close()
    return result


def child_queries(path: str, rounds: int) -> dict[str, float]:
    import duckdb

    from companyos.analytics.queries import CANNED, run

    con = duckdb.connect(path, read_only=True)
    out = {}
    for name in CANNED:
        runs = []
        for _ in range(rounds):
            t = time.perf_counter()
            run(con, name)
            runs.append(time.perf_counter() - t)
        out[name] = statistics.median(runs)
    con.close()
    return out


def child_first_request(db: str) -> dict[str, Any]:
    """A server's first canned query after a cold start, then the time until caught up."""
    from companyos.analytics.service import LiveAnalytics

    store = _store(db)
    live = LiveAnalytics(store)
    t = time.perf_counter()
    _, fresh = live.canned("success_return", wait_s=0)
    first = time.perf_counter() - t
    while live.freshness().lag_events:
        time.sleep(0.05)
    caught = time.perf_counter() - t
    live.close()
    store.close()
    return {"first": first, "as_of": fresh.as_of_event, "lag": fresh.lag_events, "caught": caught}


def in_child(fn: Callable[..., Any], *args: Any) -> Any:
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as ex:
        return ex.submit(fn, *args).result()


# ---------------------------------------------------------------------------- report


def table(rows: list[dict[str, Any]]) -> str:
    head = "| measurement | events | wall s | CPU s | peak RSS MB | today / new (wall) |"
    lines = [head, "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        events = f"{r['events']:,}" if r.get("events") else ""
        rss = f"{r['rss_mb']:,.0f}" if r.get("rss_mb") is not None else ""
        cpu = f"{r['cpu']:.2f}" if r.get("cpu") is not None else ""
        ratio = f"{r['ratio']:.2f}x" if r.get("ratio") else ""
        lines.append(f"| {r['name']} | {events} | {r['wall']:.3f} | {cpu} | {rss} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from rich.console import Console
    from rich.progress import Progress

    from companyos.analytics.warehouse import default_workers
    from companyos.events.sql import SQLEventStore, sqlite_url

    parser = bench_options.parser(__doc__)
    parser.add_argument("--events", type=int, default=1_000_000, help="events (default 1M)")
    parser.add_argument("--big", action="store_true", help="5,000,000 events")
    parser.add_argument(
        "--catch-up", type=int, default=10_000, help="events appended after the load (10000)"
    )
    parser.add_argument("--trials", type=int, default=4, help="trials per agent (default 4)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per query (default 3)")
    parser.add_argument("--page", type=int, default=50_000, help="events per page (50000)")
    parser.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="worker processes of the new load (default: the warehouse's own default, "
        "COMPANYOS_ANALYTICS_WORKERS or CPUs - 1; 0: none, and no one-process row)",
    )
    parser.add_argument("--dir", type=Path, help="working directory (default: a temporary one)")
    args = bench_options.with_json(parser).parse_args(argv)
    if args.big:
        args.events = 5_000_000
    console = Console(stderr=True)
    work = Path(tempfile.mkdtemp(prefix="companyos-bench-", dir=args.dir))
    load_before = os.getloadavg()[0]
    try:
        db = str(work / "events.db")
        with Progress(console=console, transient=True) as progress:
            log = generate(args.events, args.trials, progress)
            first, tail = split(log, args.catch_up)
            store = SQLEventStore(sqlite_url(db), group_commit=2000)
            copied = copy_streams(log, first, store, 0, progress)
            store.close()
        rows: list[dict[str, Any]] = []

        def say(text: str) -> None:
            console.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim] {text}")

        say(f"log: {copied:,} events in {db}; loading today's way")
        old = in_child(child_load, db, str(work / "today.duckdb"), "today", 0, args.page)
        how = f"{args.workers} worker process(es)" if args.workers else "no worker process"
        say(f"today: {old['wall']:.1f} s; loading the new way ({how})")
        new = in_child(child_load, db, str(work / "new.duckdb"), "new", args.workers, args.page)
        rows.append({"name": "full load, today", "events": old["out"], **old})
        rows.append(
            {
                "name": f"full load, new ({how})",
                "events": new["out"],
                **new,
                "ratio": old["wall"] / new["wall"],
            }
        )
        if args.workers:
            say(f"new: {new['wall']:.1f} s; in one process")
            one = in_child(child_load, db, str(work / "one.duckdb"), "new", 0, args.page)
            rows.append(
                {
                    "name": "full load, new, in one process (no worker)",
                    "events": one["out"],
                    **one,
                    "ratio": old["wall"] / one["wall"],
                }
            )
            (work / "one.duckdb").unlink(missing_ok=True)
        say("points of no return after each load")
        old_p = in_child(child_no_return, db, str(work / "today.duckdb"), "today")
        new_p = in_child(child_no_return, db, str(work / "new.duckdb"), "new")
        rows.append(
            {
                "name": f"points of no return after the load, today ({old_p['out']:,} failures)",
                **old_p,
            }
        )
        rows.append(
            {
                "name": f"points of no return after the load, new ({new_p['out']:,} left)",
                **new_p,
            }
        )
        rows.append(
            {
                "name": "full load and its points of no return, today",
                "wall": old["wall"] + old_p["wall"],
                "cpu": old["cpu"] + old_p["cpu"],
            }
        )
        rows.append(
            {
                "name": f"full load and its points of no return, new ({how})",
                "wall": new["wall"] + new_p["wall"],
                "cpu": new["cpu"] + new_p["cpu"],
                "ratio": (old["wall"] + old_p["wall"]) / (new["wall"] + new_p["wall"]),
            }
        )
        say("exports")
        old_x = in_child(child_export, str(work / "today.duckdb"), str(work / "pq-old"), "today")
        shutil.rmtree(work / "pq-old", ignore_errors=True)
        new_x = in_child(child_export, str(work / "new.duckdb"), str(work / "pq-new"), "new")
        shutil.rmtree(work / "pq-new", ignore_errors=True)
        rows.append({"name": "Parquet export, today", **old_x, "events": copied})
        rows.append(
            {
                "name": "Parquet export, new",
                **new_x,
                "events": copied,
                "ratio": old_x["wall"] / new_x["wall"],
            }
        )
        say("queries")
        queries = in_child(child_queries, str(work / "new.duckdb"), args.rounds)
        say("a server's first request")
        first_req = in_child(child_first_request, db)
        rows.append({"name": "server's first request, today (after a full load)", **old})
        rows.append(
            {
                "name": f"server's first request, new (as of event {first_req['as_of']:,}, "
                f"{first_req['lag']:,} behind)",
                "wall": first_req["first"],
                "ratio": old["wall"] / max(first_req["first"], 1e-6),
            }
        )
        rows.append({"name": "server: background catch-up done after", "wall": first_req["caught"]})
        say("catch-up")
        store = SQLEventStore(sqlite_url(db), group_commit=2000)
        added = copy_streams(log, tail, store, len(first))
        store.close()
        old_c = in_child(child_catch_up, db, str(work / "today.duckdb"), "today")
        new_c = in_child(child_catch_up, db, str(work / "new.duckdb"), "new")
        rows.append({"name": f"catch-up of {added:,} new events, today", **old_c, "events": added})
        rows.append(
            {
                "name": f"catch-up of {added:,} new events, new",
                **new_c,
                "events": added,
                "ratio": old_c["wall"] / new_c["wall"],
            }
        )
        rows += [{"name": f"query `{n}`", "wall": t} for n, t in queries.items()]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    title = (
        f"Analytics on {copied + added:,} events ({len(log.order):,} episodes, "
        f"{log.played:,} events played, the rest copies of deterministic trials), a SQLite "
        f"store; {os.cpu_count()} CPUs, load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after"
    )
    print(title + "\n\n" + table(rows))
    results = {"title": title, "rows": [{k: v for k, v in r.items() if k != "out"} for r in rows]}
    bench_options.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
