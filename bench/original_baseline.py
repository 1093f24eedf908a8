"""The original CompanyOS's random baseline, played through the compatibility surface of a
real `companyos serve` (`/original`), against the original's own figures.

    python bench/original_baseline.py [--episodes 1000] [--seed 0]
    COMPANYOS_ORIGINAL_REPO=/path/to/its/checkout python bench/original_baseline.py

Ours: its loop (`agents.original.random_baseline`: reset without a task, uniform choice among
its 27 calls until ``done``, the return summed from the step rewards, success from the last
``info``) over HTTP, scored with its per-action reward. The reference: its published figures
(100 episodes: about -2.04 and 2%), and, when a checkout of the original is given, its own
code run in-process in the same run (20,000 episodes) and its own script run unchanged
against our surface. Differences are in standard errors of the difference (|z| < 2: within
noise).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def options() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="the agent's choices")
    return parser


if __name__ == "__main__":
    options().parse_args()  # --help answers here, before the imports below (seconds)

from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from companyos.agents.original import random_baseline  # noqa: E402
from tests.serving import running_server  # noqa: E402

PUBLISHED = (-2.04, 0.02, 100)


def se(values: list[float]) -> float:
    return statistics.pstdev(values) / math.sqrt(len(values))


def originals_own(repo: Path, episodes: int) -> tuple[float, float, float, int, int]:
    """Its random baseline in its own environment, in-process (its code, run from its
    checkout: nothing of it is copied here): its loop, with its environment's attributes read
    after each episode. Mean, standard error, success rate, and how many of its successes
    credit the wrong work (another task's request approved, or another ticket or request
    touched), then the episodes."""
    code = f"""
import sys, statistics, math
sys.path.insert(0, {str(repo)!r})
from training.random_baseline import random_action
from env.company_env import CompanyOSEnv
env = CompanyOSEnv(noise_prob=0.1)
rewards, wins, wrong = [], 0, 0
for _ in range({episodes}):
    env.reset()
    done, total, touched = False, 0.0, set()
    while not done:
        action = random_action()
        _, r, done, info = env.step(action)
        total += r
        if action["method"] == "update_ticket" and "error" not in env.last_result:
            touched.add(action["params"]["ticket_id"])
    rewards.append(total)
    if info["success"]:
        wins += 1
        kinds = {{a["type"] for a in env.approvalflow.approvals.values()}}
        approved = {{a["type"] for a in env.approvalflow.approvals.values()
                    if a["status"] == "approved"}}
        task = env.task
        wrong += (task.approval_type not in approved or kinds != {{task.approval_type}}
                  or bool(touched - {{task.ticket_id}}))
m = statistics.mean(rewards)
print(m, statistics.pstdev(rewards) / math.sqrt(len(rewards)), wins / len(rewards), wrong)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    mean, err, rate, wrong = out.stdout.split()
    return float(mean), float(err), float(rate), int(wrong), episodes


def originals_script(repo: Path, url: str, episodes: int) -> tuple[float, float]:
    """Its training/random_baseline.py, unchanged, against our surface: its printed figures."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "training/random_baseline.py",
            "--episodes",
            str(episodes),
            "--env-url",
            url,
            "--output",
            str(Path(tmp) / "curve.png"),
        ]
        env = {**os.environ, "MPLBACKEND": "Agg"}
        out = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, check=True)
    mean = re.search(r"Mean reward:\s+([-+][\d.]+)", out.stdout)
    rate = re.search(r"Success rate:\s+([\d.]+)%", out.stdout)
    assert mean and rate, out.stdout
    return float(mean.group(1)), float(rate.group(1)) / 100


def main() -> None:
    args = options().parse_args()
    console = Console()
    repo = os.environ.get("COMPANYOS_ORIGINAL_REPO")
    table = Table(
        "run", "episodes", "mean reward", "s.e.", "success", "z vs. ours",
        title="The original's random baseline",
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, running_server(f"sqlite:///{tmp}/b.db") as base:
        url = f"{base}/original"
        run = None
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("our surface", total=args.episodes)
            for n, latest in random_baseline(url, args.episodes, random.Random(args.seed)):
                run = latest
                bar.update(task, completed=n)
        assert run is not None
        ours, ours_se = run.mean_reward, se(run.rewards)
        table.add_row(
            "its loop, /original",
            f"{len(run.rewards):,}",
            f"{ours:+.3f}",
            f"{ours_se:.3f}",
            f"{run.success_rate:.2%}",
            "",
        )
        scripted = originals_script(Path(repo), url, args.episodes) if repo else None
    p_mean, p_rate, p_n = PUBLISHED
    table.add_row("its README", f"{p_n}", f"{p_mean:+.2f}", "", f"{p_rate:.0%}", "")
    wrong = None
    if repo:
        mean, err, rate, wrong, n = originals_own(Path(repo), 20_000)
        z = (ours - mean) / math.hypot(ours_se, err)
        table.add_row(
            "its code, in-process",
            f"{n:,}",
            f"{mean:+.3f}",
            f"{err:.3f}",
            f"{rate:.2%}",
            f"{z:+.2f}",
        )
    if scripted:
        table.add_row(
            "its script, /original",
            f"{args.episodes:,}",
            f"{scripted[0]:+.2f}",
            "",
            f"{scripted[1]:.1%}",
            "",
        )
    console.print(table)
    console.print(
        f"mean steps {statistics.mean(run.steps):.1f}; 95% interval of our mean "
        f"{ours - 1.96 * ours_se:+.2f} to {ours + 1.96 * ours_se:+.2f}"
    )
    if wrong is not None:
        console.print(
            f"of its own code's {round(rate * 20_000)} successes in-process, {wrong} credit "
            "the wrong work (another task's request approved, or another ticket or request "
            "touched): our grading counts none of those"
        )


if __name__ == "__main__":
    main()
