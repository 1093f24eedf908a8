"""The oracle solves every family at every difficulty: 100% over 2,400 generated instances
(12 families x 4 difficulties x 50 seeds), each through the environment and its event log.
Its mean steps per family and difficulty are printed (run with -s) and checked against the
step budget."""

from __future__ import annotations

import statistics
from collections import defaultdict

from companyos.agents import in_process_oracle, play
from companyos.api import CompanyOSEnvironment
from companyos.domain import DIFFICULTIES, FAMILY_NAMES

SEEDS = 50


def test_oracle_solves_every_family_at_every_difficulty():
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    steps: dict[tuple[str, int], list[int]] = defaultdict(list)
    returns: list[float] = []
    failures = []
    for family in FAMILY_NAMES:
        for difficulty in DIFFICULTIES:
            for seed in range(SEEDS):
                r = play(
                    env,
                    oracle,
                    seed=seed * 104729 + difficulty,
                    task_id=family,
                    difficulty=difficulty,
                )
                if r.outcome != "success":
                    failures.append((family, difficulty, seed, r))
                steps[(family, difficulty)].append(r.steps)
                returns.append(r.total_return)
                assert r.steps <= env.episode.world.info.max_steps
    assert sum(len(v) for v in steps.values()) == len(FAMILY_NAMES) * len(DIFFICULTIES) * SEEDS
    assert len(steps) * SEEDS >= 2000
    assert failures == []
    print("\noracle mean steps (family x difficulty 0..3):")
    for family in FAMILY_NAMES:
        row = [statistics.mean(steps[(family, d)]) for d in DIFFICULTIES]
        print(f"  {family:22s} " + " ".join(f"{m:5.1f}" for m in row))
    overall = statistics.mean(s for v in steps.values() for s in v)
    print(f"  overall {overall:.2f} steps, mean return {statistics.mean(returns):.2f}")
    assert 3 <= overall <= 20
    assert min(returns) > 15


def test_chaos_grows_with_difficulty():
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    mean_steps = []
    for difficulty in DIFFICULTIES:
        runs = [
            play(env, oracle, seed=s, task_id=FAMILY_NAMES[s % 12], difficulty=difficulty)
            for s in range(120)
        ]
        mean_steps.append(statistics.mean(r.steps for r in runs))
    assert mean_steps == sorted(mean_steps)
    assert mean_steps[-1] > mean_steps[0] + 2
