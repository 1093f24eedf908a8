"""In-process step throughput against the original CompanyOS's step, measured in the same run.

The workload is the original's scripted vendor-onboarding episode (`workload.py`: its README's
trace as a policy) on its fixed world, one seed an episode. The reference is
`original_model.OriginalStyleEnv`, a dict-mutation model of the original's step written here
(the original need not be installed). Each environment records its calls once, then the rounds
replay them, interleaved so that drift hits all alike; only the calls are timed. Each
episode's time is the best of the rounds (these machines are shared: the best filters out the
time other processes took), summed over episodes.

Rows: steps in memory, on SQLite (a commit per step, and group commit), resets (warm: the
instance seen before; cold: a new one), and `Episode.load` of stored episodes of growing length
(constant in length: a snapshot of the fold plus at most 128 events). The warm and cold reset
rows play the original's task (a fixed world); the last reset row draws new instances of the
generated families, which a training loop with fresh seeds pays for.

The "caches cold" rows time each step after reading a buffer (``--evict``, 2 MiB: this
machine's L2 a core) that pushes the step's code and data out of the nearest caches, as a
server's own work between two steps of a session does (parsing, framing, the event loop). A
loop that only steps keeps them warm, so the other rows are a step's best case. A server does
more to a step than this (its own threads, system calls, a larger heap): `serve_throughput.py`
times the step inside one (its second table), at 99 us in memory where this row said 55 us and
the warm row 50 on the same machine. The reference is timed the same way.

    python bench/step_throughput.py [--episodes N] [--rounds R] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_options


def options() -> argparse.ArgumentParser:
    parser = bench_options.parser(__doc__)
    parser.add_argument("--episodes", type=int, default=1000, help="episodes (default 1000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--group", type=int, default=32, help="appends per group commit")
    parser.add_argument(
        "--evict",
        type=int,
        default=2048,
        help="KiB read before each step of the caches-cold rows (default 2048)",
    )
    parser.add_argument(
        "--cold-episodes",
        type=int,
        default=200,
        help="episodes of the caches-cold rows (default 200)",
    )
    return bench_options.with_json(parser)


if __name__ == "__main__":
    options().parse_args()  # --help answers here, before the imports below (seconds)

from original_model import OriginalStyleEnv  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402
from workload import (  # noqa: E402
    TASK,
    Script,
    script_companyos,
    script_original,
    steps_per_episode,
)

from companyos.api import CompanyOSAction, CompanyOSEnvironment  # noqa: E402
from companyos.api.episode import Episode  # noqa: E402
from companyos.events import EventStore, InMemoryEventStore  # noqa: E402
from companyos.events.sql import SQLEventStore, sqlite_url  # noqa: E402

clock = time.perf_counter
Best = dict[int, float]


def _keep(best: Best, i: int, t: float) -> None:
    best[i] = min(best.get(i, t), t)


def evictor(kib: int) -> Callable[[], object]:
    """A function that reads ``kib`` KiB (SHA-256 of a buffer: every byte through the caches)."""
    buffer = bytes(kib * 1024)
    return lambda: hashlib.sha256(buffer).digest()


def _timed(
    step: Callable[[Any], object], calls: list[Any], evict: Callable[[], object] | None
) -> float:
    """Seconds the calls took; with ``evict``, it runs before each call, untimed."""
    if evict is None:
        t = clock()
        for c in calls:
            step(c)
        return clock() - t
    spent = 0.0
    for c in calls:
        evict()
        t = clock()
        step(c)
        spent += clock() - t
    return spent


def run_original(script: Script, best: Best, evict: Callable[[], object] | None = None) -> None:
    env = OriginalStyleEnv()
    for i, (seed, calls) in enumerate(script):
        env.reset(seed)
        _keep(best, i, _timed(env.step, calls, evict))


def run_companyos(
    make_store: Callable[[], EventStore],
    script: list[tuple[int, list[CompanyOSAction]]],
    evict: Callable[[], object] | None = None,
) -> Callable[[Best], None]:
    def run(best: Best) -> None:
        env = CompanyOSEnvironment(make_store())
        for i, (seed, calls) in enumerate(script):
            env.reset(seed=seed, task_id=TASK)
            _keep(best, i, _timed(env.step, calls, evict))
        env.store.close()

    return run


def resets(n: int, warm: bool, original: bool) -> float:
    """Seconds per reset: warm cycles over 20 seeds seen before (the instance cached, as in
    training); cold draws a new seed each time. The original's reset is the same either way."""
    seeds = [s % 20 if warm else 1000 + s for s in range(n)]
    if original:
        o = OriginalStyleEnv()
        t = clock()
        for s in seeds:
            o.reset(s)
        return (clock() - t) / n
    env = CompanyOSEnvironment(InMemoryEventStore())
    for s in range(20):
        env.reset(seed=s, task_id=TASK)
    t = clock()
    for s in seeds:
        env.reset(seed=s, task_id=TASK)
    return (clock() - t) / n


_FRESH = itertools.count(10**9)
"""Seeds never drawn before in this run (the same sequence every run)."""


def generated_resets(n: int) -> float:
    """Seconds per cold reset of the generated families (a new seed each time, every family
    and difficulty in turn): what a training loop drawing fresh instances pays. Building an
    instance sizes its step budget by playing the honest solver against an adversary."""
    from companyos.domain import DIFFICULTIES, FAMILY_NAMES

    env = CompanyOSEnvironment(InMemoryEventStore())
    combos = [(f, d) for f in FAMILY_NAMES for d in DIFFICULTIES]
    t = clock()
    for i in range(n):
        family, difficulty = combos[i % len(combos)]
        env.reset(seed=next(_FRESH), task_id=family, difficulty=difficulty)
    return (clock() - t) / n


def load_times(store: EventStore, lengths: list[int], repeats: int = 20) -> dict[int, float]:
    """Best seconds to load (cache miss: from the store) an episode of each length."""
    out = {}
    env = CompanyOSEnvironment(store)
    for n in lengths:
        env.reset(seed=n, task_id=2, difficulty=1, max_steps=n + 1)
        for _ in range(n):
            env.step({"app": "ticketdesk", "method": "list_tickets"})
        assert env.episode is not None
        eid = env.episode.id
        if isinstance(store, SQLEventStore):
            store.flush()
        best = float("inf")
        for _ in range(repeats):
            t = clock()
            Episode.load(store, eid)
            best = min(best, clock() - t)
        out[n] = best
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = options().parse_args(argv)
    console = Console()
    seeds = range(args.episodes)
    original = script_original(OriginalStyleEnv(), seeds)
    ours = script_companyos(CompanyOSEnvironment(InMemoryEventStore()), seeds)
    typed = [(s, [CompanyOSAction(**c) for c in calls]) for s, calls in ours]
    tmp = Path(tempfile.mkdtemp(prefix="companyos-bench-"))

    def sqlite(group: int) -> Callable[[], EventStore]:
        return lambda: SQLEventStore(sqlite_url(tmp / f"{time.time_ns()}.db"), group_commit=group)

    cold = f"caches cold ({args.evict:,} KiB read before each step)"
    evict = evictor(args.evict)
    few = args.cold_episodes
    cold_ref, cold_ours = f"original-style, {cold} (reference)", f"CompanyOS, memory, {cold}"
    configs: dict[str, Callable[[Best], None]] = {
        "original-style dict mutation (reference)": lambda b: run_original(original, b),
        "CompanyOS, memory": run_companyos(InMemoryEventStore, typed),
        "CompanyOS, SQLite, a commit per step": run_companyos(sqlite(1), typed),
        f"CompanyOS, SQLite, group commit {args.group}": run_companyos(sqlite(args.group), typed),
        cold_ref: lambda b: run_original(original[:few], b, evict),
        cold_ours: run_companyos(InMemoryEventStore, typed[:few], evict),
    }
    best: dict[str, Best] = {k: {} for k in configs}
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("rounds", total=args.rounds * len(configs))
        for _ in range(args.rounds):
            for name, run in configs.items():
                run(best[name])
                progress.advance(task)

    def steps(script: Script, name: str) -> int:
        return sum(len(c) for _, c in (script[:few] if name in (cold_ref, cold_ours) else script))

    per_step = {
        k: sum(v.values()) / steps(original if k.startswith("original") else ours, k)
        for k, v in best.items()
    }
    ref = per_step["original-style dict mutation (reference)"]
    ref_cold = per_step[cold_ref]
    results: dict[str, Any] = {
        "episodes": args.episodes,
        "rounds": args.rounds,
        "steps_per_episode": {
            "original": steps_per_episode(original),
            "companyos": steps_per_episode(ours),
        },
        "rows": {},
    }
    table = Table(
        title=f"In-process, scripted vendor onboarding ({args.episodes} episodes, "
        f"{steps_per_episode(ours):.1f} steps each; original {steps_per_episode(original):.1f}),"
        f" best of {args.rounds} rounds"
    )
    for col in ("row", "per step", "steps/s", "ratio to the original"):
        table.add_column(col, justify="left" if col == "row" else "right")
    for name, sec in per_step.items():
        against = ref_cold if name in (cold_ref, cold_ours) else ref
        table.add_row(name, f"{sec * 1e6:,.1f} us", f"{1 / sec:,.0f}", f"{against / sec:.3f}x")
        results["rows"][name] = {"us": sec * 1e6, "ratio": against / sec}

    reset_rows = {
        "reset, original-style (reference)": statistics.median(
            resets(2000, True, True) for _ in range(3)
        ),
        "reset, CompanyOS warm (instance seen before)": statistics.median(
            resets(2000, True, False) for _ in range(3)
        ),
        "reset, CompanyOS cold (a new instance)": statistics.median(
            resets(300, False, False) for _ in range(3)
        ),
        "reset, CompanyOS cold, generated families (new seeds)": statistics.median(
            generated_resets(96) for _ in range(3)
        ),
    }
    ref_reset = reset_rows["reset, original-style (reference)"]
    for name, sec in reset_rows.items():
        table.add_row(name, f"{sec * 1e6:,.1f} us", f"{1 / sec:,.0f}", f"{ref_reset / sec:.3f}x")
        results["rows"][name] = {"us": sec * 1e6, "ratio": ref_reset / sec}
    console.print(table)

    lengths = [14, 66, 500]
    loads = {
        "memory": load_times(InMemoryEventStore(), lengths),
        "SQLite": load_times(SQLEventStore(sqlite_url(tmp / "load.db")), lengths),
    }
    lt = Table(title="Episode.load from the store (cache miss), best of 20")
    lt.add_column("store")
    for n in lengths:
        lt.add_column(f"{n} steps", justify="right")
    lt.add_column(f"{lengths[-1]} / {lengths[0]} steps", justify="right")
    for store, times in loads.items():
        lt.add_row(
            store,
            *(f"{times[n] * 1e3:.2f} ms" for n in lengths),
            f"{times[lengths[-1]] / times[lengths[0]]:.2f}x",
        )
        results["rows"][f"load, {store}"] = {str(n): times[n] * 1e3 for n in lengths}
    console.print(lt)
    bench_options.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
