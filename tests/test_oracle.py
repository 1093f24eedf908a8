"""The oracle solves every original workflow at every difficulty: 100% over 600 seeded
episodes. Its mean steps per workflow and difficulty are printed (run with -s) and checked
against the step budget."""

from __future__ import annotations

import statistics
from collections import defaultdict

from companyos.agents import in_process_oracle, play
from companyos.api import CompanyOSEnvironment
from companyos.domain import DIFFICULTIES, SCENARIO_IDS


def test_oracle_solves_every_workflow_at_every_difficulty():
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    steps: dict[tuple[str, int], list[int]] = defaultdict(list)
    returns: list[float] = []
    failures = []
    for scenario in SCENARIO_IDS:
        for difficulty in DIFFICULTIES:
            for seed in range(30):
                r = play(
                    env,
                    oracle,
                    seed=seed * 104729 + difficulty,
                    task_id=scenario,
                    difficulty=difficulty,
                )
                if r.outcome != "success":
                    failures.append(r)
                steps[(scenario, difficulty)].append(r.steps)
                returns.append(r.total_return)
    assert sum(len(v) for v in steps.values()) == 600
    assert failures == []
    print("\noracle mean steps (scenario x difficulty 0..3):")
    for scenario in SCENARIO_IDS:
        row = [statistics.mean(steps[(scenario, d)]) for d in DIFFICULTIES]
        print(f"  {scenario:18s} " + " ".join(f"{m:5.1f}" for m in row))
    overall = statistics.mean(s for v in steps.values() for s in v)
    print(f"  overall {overall:.2f} steps, mean return {statistics.mean(returns):.2f}")
    assert 3 <= overall <= 12
    assert min(returns) > 15


def test_chaos_grows_with_difficulty():
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    mean_steps = []
    for difficulty in DIFFICULTIES:
        runs = [play(env, oracle, seed=s, task_id=s % 5, difficulty=difficulty) for s in range(60)]
        mean_steps.append(statistics.mean(r.steps for r in runs))
    assert mean_steps == sorted(mean_steps)
    assert mean_steps[-1] > mean_steps[0] + 2
