"""Baseline success rates per family and difficulty: the random agent, the naive agent (does
what the task text says, ignores chaos) and the oracle, on the frozen test suite's instances.

    python bench/baselines.py [--per-cell N] [--markdown out.md] [--json out.json]

Prints one table per agent (success rate, family x difficulty) and the mean return per
difficulty; the README's baseline tables are this script's markdown output.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from companyos.agents import RandomAgent, in_process_naive, in_process_oracle, play
from companyos.api import CompanyOSEnvironment
from companyos.domain import DIFFICULTIES, FAMILY_NAMES, SUITES

AGENTS: dict[str, Callable[[CompanyOSEnvironment], Any]] = {
    "random": lambda env: RandomAgent(0),
    "naive": in_process_naive,
    "oracle": in_process_oracle,
}


def evaluate(per_cell: int, progress: Progress) -> dict[str, Any]:
    suite = SUITES["test"]
    instances = suite.instances(per_cell=per_cell)
    out: dict[str, Any] = {}
    for name, make in AGENTS.items():
        env = CompanyOSEnvironment()
        agent = make(env)
        wins: dict[tuple[str, int], list[bool]] = defaultdict(list)
        returns: dict[int, list[float]] = defaultdict(list)
        steps: dict[int, list[int]] = defaultdict(list)
        task = progress.add_task(f"{name:7s}", total=len(instances))
        for family, difficulty, seed in instances:
            r = play(env, agent, seed=seed, task_id=family, difficulty=difficulty)
            wins[(family, difficulty)].append(r.outcome == "success")
            returns[difficulty].append(r.total_return)
            steps[difficulty].append(r.steps)
            progress.advance(task)
        out[name] = {
            "success": {
                f: {d: statistics.mean(wins[(f, d)]) for d in DIFFICULTIES} for f in FAMILY_NAMES
            },
            "overall": {
                d: statistics.mean(w for f in FAMILY_NAMES for w in wins[(f, d)])
                for d in DIFFICULTIES
            },
            "mean_return": {d: statistics.mean(returns[d]) for d in DIFFICULTIES},
            "mean_steps": {d: statistics.mean(steps[d]) for d in DIFFICULTIES},
        }
    return out


def markdown(results: dict[str, Any], per_cell: int) -> str:
    lines = [
        f"Success rate on the test suite ({per_cell} instances per family and difficulty).",
        "",
        "| family | "
        + " | ".join(f"{a} d{d}" for a in ("random", "naive") for d in DIFFICULTIES)
        + " |",
        "|---|" + "---:|" * (2 * len(DIFFICULTIES)),
    ]
    for f in FAMILY_NAMES:
        cells = [
            f"{results[a]['success'][f][d]:.0%}" for a in ("random", "naive") for d in DIFFICULTIES
        ]
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    cells = [
        f"**{results[a]['overall'][d]:.0%}**" for a in ("random", "naive") for d in DIFFICULTIES
    ]
    lines.append("| **all** | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| agent | " + " | ".join(f"d{d} success / return / steps" for d in DIFFICULTIES) + " |",
        "|---|" + "---:|" * len(DIFFICULTIES),
    ]
    for a, r in results.items():
        cells = [
            f"{r['overall'][d]:.0%} / {r['mean_return'][d]:+.1f} / {r['mean_steps'][d]:.1f}"
            for d in DIFFICULTIES
        ]
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--per-cell", type=int, default=25, help="instances per family and difficulty (25)"
    )
    parser.add_argument("--markdown", type=Path, default=Path("bench/results/baselines.md"))
    parser.add_argument("--json", type=Path, default=Path("bench/results/baselines.json"))
    args = parser.parse_args()
    console = Console()
    with Progress(console=console) as progress:
        results = evaluate(args.per_cell, progress)
    for name, r in results.items():
        table = Table("family", *(f"d{d}" for d in DIFFICULTIES), title=f"{name}: success rate")
        for f in FAMILY_NAMES:
            table.add_row(f, *(f"{r['success'][f][d]:.0%}" for d in DIFFICULTIES))
        table.add_row("all", *(f"{r['overall'][d]:.0%}" for d in DIFFICULTIES))
        console.print(table)
    text = markdown(results, args.per_cell)
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text(text)
    args.json.write_text(json.dumps(results, indent=2))
    console.print(f"markdown in {args.markdown}, figures in {args.json}")


if __name__ == "__main__":
    main()
