"""The proof that every instance is solvable from observations: the honest solver
(`companyos.domain.honest`, which sees only what an agent sees) on the whole frozen test suite,
4 trials, in-process and over HTTP through a real `companyos serve`, then on random seeds
beyond the suites, then the step budget itself: the honest solver against an adversary that
makes every chance event happen and places the allowed transient faults at random. Prints
success and mean steps per family; exits 1 unless every episode succeeded.

    python bench/solvability.py [--trials 4] [--random-seeds 100] [--placements 3]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.serving import running_server  # noqa: E402


def eval_run(out: Path, trials: int, url: str | None) -> dict:
    cmd = [sys.executable, "-m", "companyos", "eval", "--agent", "honest", "--suite", "test"]
    cmd += ["--trials", str(trials), "--workers", "2", "--out", str(out), "--no-plots"]
    cmd += ["--url", url] if url else ["--store", "memory://"]
    subprocess.run(cmd, check=True)
    return json.loads((out / "results.json").read_text())


def report(title: str, results: dict) -> bool:
    episodes = results["episodes"]
    by = collections.defaultdict(list)
    for e in episodes:
        by[e["family"]].append(e)
    print(f"\n{title}: {len(episodes):,} episodes")
    print(f"  {'family':22s} {'success':>8s} {'mean steps':>11s}")
    for family, es in sorted(by.items()):
        rate = sum(e["outcome"] == "success" for e in es) / len(es)
        print(f"  {family:22s} {rate:8.1%} {statistics.mean(e['steps'] for e in es):11.1f}")
    ok = all(e["outcome"] == "success" for e in episodes)
    print(f"  {'all':22s} {sum(e['outcome'] == 'success' for e in episodes) / len(episodes):8.1%}")
    return ok


def random_seeds(n: int) -> bool:
    from companyos.agents import play
    from companyos.agents.honest import HonestAgent
    from companyos.api import CompanyOSEnvironment
    from companyos.domain import FAMILY_NAMES

    rng = random.Random(20261123)
    env = CompanyOSEnvironment()
    failed = []
    start = time.perf_counter()
    for family in FAMILY_NAMES:
        for difficulty in range(4):
            for _ in range(n):
                seed = rng.randrange(2**31)
                r = play(env, HonestAgent(), seed=seed, task_id=family, difficulty=difficulty)
                if r.outcome != "success":
                    failed.append((family, difficulty, seed, r.outcome))
    total = len(FAMILY_NAMES) * 4 * n
    took = time.perf_counter() - start
    print(f"\nrandom seeds: {total - len(failed):,} of {total:,} solved ({took:.0f} s)")
    for f in failed[:20]:
        print("  FAILED", *f)
    return not failed


def fault_placements(n: int, placements: int) -> bool:
    """Random instances (n per family and difficulty 1-3), each against the adversary with its
    allowed faults placed ``placements`` ways: never over the budget."""
    from companyos.domain import FAMILY_NAMES, build_instance
    from companyos.domain.instances import honest_worst_case
    from companyos.domain.rng import PlacedFaults

    rng = random.Random(20261126)
    over = []
    runs = 0
    start = time.perf_counter()
    for family in FAMILY_NAMES:
        for difficulty in (1, 2, 3):
            for _ in range(n):
                seed = rng.randrange(2**31)
                inst = build_instance(family, seed, difficulty)
                for _ in range(placements):
                    adversary = PlacedFaults(rng.randrange(2**31), rng.choice((0.1, 0.3, 0.6, 1.0)))
                    steps = honest_worst_case(
                        family, seed, difficulty, inst.setup, inst.fault_budget, adversary
                    )
                    runs += 1
                    if steps > inst.max_steps:
                        over.append((family, difficulty, seed, steps, inst.max_steps))
    took = time.perf_counter() - start
    print(
        f"\nfaults placed at random against the adversary: {runs - len(over):,} of {runs:,} "
        f"within budget ({took:.0f} s)"
    )
    for o in over[:20]:
        print("  OVER BUDGET", *o)
    return not over


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=4)
    p.add_argument("--random-seeds", type=int, default=100, help="per family and difficulty")
    p.add_argument("--placements", type=int, default=3, help="fault placements per instance")
    args = p.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        ok &= report("in-process", eval_run(Path(tmp) / "local", args.trials, None))
        with running_server("memory://") as url:
            ok &= report(f"over HTTP ({url})", eval_run(Path(tmp) / "http", args.trials, url))
    ok &= random_seeds(args.random_seeds)
    ok &= fault_placements(args.random_seeds, args.placements)
    print("\nevery instance solved" if ok else "\nSOME INSTANCES WERE NOT SOLVED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
