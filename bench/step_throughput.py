"""In-process step throughput: CompanyOS on the in-memory store, on SQLite (a commit per step,
and group commit), against a no-op OpenEnv environment stepped in the same run.

The calls replayed are recorded first from the oracle mixed with the random agent over every
workflow and difficulty, so only the environment is timed, not the agents. These machines are
noisy: each configuration runs several rounds, interleaved, and the ratios compare medians
taken in the same run.

    python bench/step_throughput.py [--steps N] [--rounds R] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The same no-op environment `serve_throughput.py` serves (this folder is on the path when the
# script runs).
from noop_server import NoopAction, NoopEnvironment
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from companyos.agents import RandomAgent
from companyos.api import CompanyOSAction, CompanyOSEnvironment
from companyos.domain import plan
from companyos.events import InMemoryEventStore
from companyos.events.sql import SQLEventStore, sqlite_url

Episode = tuple[dict[str, Any], list[CompanyOSAction]]


def record_episodes(n_steps: int) -> list[Episode]:
    """Calls of realistic episodes: mostly the oracle, every third call random."""
    env = CompanyOSEnvironment()
    out: list[Episode] = []
    total, seed = 0, 0
    while total < n_steps:
        kwargs = {"seed": seed, "task_id": seed % 5, "difficulty": seed % 4}
        obs = env.reset(**kwargs)
        agent, actions = RandomAgent(seed), []
        while not obs.done:
            ep = env.episode
            assert ep is not None
            call = plan(ep.world)
            raw = agent.act(obs) if len(actions) % 3 == 2 or call is None else call.as_action()
            action = CompanyOSAction(**raw)
            actions.append(action)
            obs = env.step(action)
        out.append((kwargs, actions))
        total += len(actions)
        seed += 1
    return out


def time_companyos(make_env: Callable[[], CompanyOSEnvironment], episodes: list[Episode]) -> float:
    env = make_env()
    steps, elapsed = 0, 0.0
    for kwargs, actions in episodes:
        env.reset(**kwargs)
        t = time.perf_counter()
        for a in actions:
            env.step(a)
        elapsed += time.perf_counter() - t
        steps += len(actions)
    env.store.close()
    return steps / elapsed


def time_noop(n_steps: int) -> float:
    env = NoopEnvironment()
    env.reset()
    action = NoopAction(value=1)
    t = time.perf_counter()
    for _ in range(n_steps):
        env.step(action)
    return n_steps / (time.perf_counter() - t)


def time_resets(n: int, instances: int | None = None) -> float:
    """Resets per second over ``n`` resets. ``instances=None``: every reset a new instance
    (generated, its step budget simulated: a cold reset); otherwise cycling over that many
    instances, each generated once and then cached (a warm reset, as in training, where the
    suites' instances come round again: the reset appends and folds the opening events)."""
    env = CompanyOSEnvironment()
    seeds = [s if instances is None else s % instances for s in range(n)]
    if instances is not None:
        for seed in seeds[:instances]:  # build them outside the timing
            env.reset(seed=seed, task_id=seed % 5, difficulty=seed % 4)
    t = time.perf_counter()
    for seed in seeds:
        env.reset(seed=seed, task_id=seed % 5, difficulty=seed % 4)
    return n / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=20_000, help="steps per round (default 20000)")
    parser.add_argument(
        "--rounds", type=int, default=5, help="rounds per configuration (default 5)"
    )
    parser.add_argument(
        "--group", type=int, default=32, help="appends per group commit (default 32)"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    console = Console()
    episodes = record_episodes(args.steps)
    n = sum(len(a) for _, a in episodes)
    tmp = Path(tempfile.mkdtemp(prefix="companyos-bench-"))
    configs: dict[str, Callable[[], float]] = {
        "no-op OpenEnv env": lambda: time_noop(n),
        "CompanyOS, memory": lambda: time_companyos(
            lambda: CompanyOSEnvironment(InMemoryEventStore()), episodes
        ),
        "CompanyOS, SQLite (commit per step)": lambda: time_companyos(
            lambda: CompanyOSEnvironment(SQLEventStore(sqlite_url(tmp / f"{time.time_ns()}.db"))),
            episodes,
        ),
        f"CompanyOS, SQLite (group commit {args.group})": lambda: time_companyos(
            lambda: CompanyOSEnvironment(
                SQLEventStore(sqlite_url(tmp / f"{time.time_ns()}.db"), group_commit=args.group)
            ),
            episodes,
        ),
    }
    rates: dict[str, list[float]] = {k: [] for k in configs}
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("rounds", total=args.rounds * len(configs))
        for _ in range(args.rounds):
            for name, run in configs.items():  # interleaved, so drift hits all alike
                rates[name].append(run())
                progress.advance(task)
    cold = time_resets(500)
    warm = time_resets(5000, instances=50)
    noop = statistics.median(rates["no-op OpenEnv env"])
    table = Table(title=f"In-process step throughput ({n} steps x {args.rounds} rounds)")
    for col in ("configuration", "median steps/s", "best steps/s", "ratio to no-op"):
        table.add_column(col, justify="right" if col != "configuration" else "left")
    results: dict[str, Any] = {"steps_per_round": n, "rounds": args.rounds, "configs": {}}
    for name, values in rates.items():
        med, best = statistics.median(values), max(values)
        table.add_row(name, f"{med:,.0f}", f"{best:,.0f}", f"{med / noop:.3f}")
        results["configs"][name] = {"median": med, "best": best, "ratio_to_noop": med / noop}
    console.print(table)
    console.print(
        f"resets/s (memory): {warm:,.0f} warm (50 instances cycled), {cold:,.0f} cold "
        "(a new instance each)"
    )
    results["resets_per_s"] = {"warm": warm, "cold": cold}
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
