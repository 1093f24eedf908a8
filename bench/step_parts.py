"""Where an in-process step goes: a timer around each part of `CompanyOSEnvironment.step`.

Two workloads, each on the in-memory store: the original's scripted vendor-onboarding episode
(`workload.script_companyos`, the workload of `step_throughput.py`) and the recorded episodes
of `serve_throughput.py` (the oracle mixed with random calls over every generated family and
level: `workload.record_episodes`). Each part is wrapped in a timer that counts only while a
step runs (a reset builds instances with the same functions); the figures are per step, from
the round whose steps took least in all. The timers cost something themselves: the step
measured without them, in the same run, is printed beside the step measured with them.

Nested parts are indented under the part that calls them. "rest of the call" is the step
less its listed top-level parts: the environment's and the episode's own code between them.

    python bench/step_parts.py [--steps N] [--rounds R] [--json out.json]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import bench_options


def options() -> argparse.ArgumentParser:
    parser = bench_options.parser(__doc__)
    parser.add_argument(
        "--steps", type=int, default=3000, help="steps of each workload (default 3000)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    return bench_options.with_json(parser)


if __name__ == "__main__":
    options().parse_args()  # --help answers here, before the imports below (seconds)

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from workload import as_episodes, record_episodes, script_companyos  # noqa: E402

import companyos.api.environment as environment_module  # noqa: E402
import companyos.api.episode as episode_module  # noqa: E402
import companyos.domain.decider as decider_module  # noqa: E402
import companyos.events.memory as memory_module  # noqa: E402
import companyos.projections.reward as reward_module  # noqa: E402
from companyos.api import CompanyOSAction, CompanyOSEnvironment  # noqa: E402
from companyos.events import InMemoryEventStore  # noqa: E402
from companyos.projections.milestones import MilestoneGraph  # noqa: E402

clock = time.perf_counter
Episodes = list[tuple[dict[str, Any], list[CompanyOSAction]]]

PARTS: list[tuple[str, int, Any, str]] = [
    # (label, depth, owner, attribute): each is looked up where its caller looks it up.
    ("decide and fold", 0, episode_module, "decide_and_fold"),
    ("verdict (params, faults)", 1, decider_module, "_verdict"),
    ("params checked", 1, decider_module, "clean_params"),
    ("the call's event", 1, decider_module, "ToolCalled"),
    ("what time did meanwhile", 1, decider_module, "due_events"),
    ("events folded", 1, decider_module, "fold"),
    ("score", 0, episode_module, "score_step"),
    ("milestones", 1, MilestoneGraph, "achieved"),
    ("collateral damage", 1, MilestoneGraph, "damage"),
    ("penalties", 1, reward_module, "penalty_terms"),
    ("the StepScored event", 0, episode_module, "StepScored"),
    ("append (memory store)", 0, InMemoryEventStore, "extend"),
    # A step's append seals its events in the store's own pass (`InMemoryEventStore._write`):
    # the payload's canonical JSON, then the chained hash.
    ("canonical JSON", 1, memory_module, "canonical"),
    ("SHA-256 chain", 1, memory_module, "event_hash"),
    ("result rendered", 0, environment_module, "render_result"),
    ("observation built", 0, CompanyOSEnvironment, "_observation"),
]


class Timers:
    """The parts wrapped, timing only while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.spent: dict[str, float] = {label: 0.0 for label, *_ in PARTS}

    def _wrap(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        spent = self.spent

        def timed(*args: Any, **kwargs: Any) -> Any:
            if not self.on:
                return function(*args, **kwargs)
            t = clock()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += clock() - t

        return timed

    @contextmanager
    def installed(self) -> Iterator[None]:
        kept = [(owner, name, owner.__dict__[name]) for _, _, owner, name in PARTS]
        try:
            for (label, _, owner, name), (_, _, function) in zip(PARTS, kept, strict=True):
                setattr(owner, name, self._wrap(label, function))
            yield
        finally:
            for owner, name, function in kept:
                setattr(owner, name, function)


def play(episodes: Episodes, timers: Timers | None) -> float:
    """Seconds spent in steps (resets excluded)."""
    env = CompanyOSEnvironment(InMemoryEventStore())
    spent = 0.0
    for kwargs, actions in episodes:
        env.reset(**kwargs)
        if timers is not None:
            timers.on = True
        t = clock()
        for a in actions:
            env.step(a)
        spent += clock() - t
        if timers is not None:
            timers.on = False
    env.store.close()
    return spent


def measure(episodes: Episodes, rounds: int) -> dict[str, Any]:
    """Per step: the step without timers (best round), with them, and each part. A first
    round warms the instances' caches; then rounds without and with the timers alternate."""
    play(episodes, None)
    bare = float("inf")
    best: tuple[float, dict[str, float]] | None = None
    for _ in range(rounds):
        bare = min(bare, play(episodes, None))
        timers = Timers()
        with timers.installed():
            spent = play(episodes, timers)
        if best is None or spent < best[0]:
            best = (spent, dict(timers.spent))
    assert best is not None
    steps = sum(len(a) for _, a in episodes)
    timed, parts = best
    top = sum(parts[label] for label, depth, *_ in PARTS if not depth)
    return {
        "steps": steps,
        "step_us": bare / steps * 1e6,
        "timed_step_us": timed / steps * 1e6,
        "parts_us": {k: v / steps * 1e6 for k, v in parts.items()},
        "rest_us": (timed - top) / steps * 1e6,
    }


def workloads(steps: int) -> dict[str, Episodes]:
    seeds = range(max(1, steps // 11))  # about 11.6 steps an episode
    scripted = as_episodes(script_companyos(CompanyOSEnvironment(InMemoryEventStore()), seeds))
    return {"scripted": scripted, "serving": list(record_episodes(steps))}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = options().parse_args(argv)
    results = {name: measure(eps, args.rounds) for name, eps in workloads(args.steps).items()}
    table = Table(title=f"Where a step goes, in process, memory store (best of {args.rounds})")
    table.add_column("part")
    for name, r in results.items():
        table.add_column(f"{name} ({r['steps']:,} steps)", justify="right")
    table.add_row(
        "a step, no timers",
        *(f"{r['step_us']:.1f} us" for r in results.values()),
        end_section=False,
    )
    table.add_row(
        "a step, timers on",
        *(f"{r['timed_step_us']:.1f} us" for r in results.values()),
        end_section=True,
    )
    for label, depth, *_ in PARTS:
        table.add_row(
            "  " * depth + label,
            *(
                f"{r['parts_us'][label]:.1f} us {r['parts_us'][label] / r['timed_step_us']:4.0%}"
                for r in results.values()
            ),
        )
    table.add_row(
        "rest of the call",
        *(
            f"{r['rest_us']:.1f} us {r['rest_us'] / r['timed_step_us']:4.0%}"
            for r in results.values()
        ),
    )
    Console().print(table)
    bench_options.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
