"""Every instance can be solved from what the agent sees, and what the agent sees says nothing
of the grade.

- The honest solver (`domain.honest`: task text, results, messages, error codes, the clock;
  never the world, the goal or the grader) solves every instance within its step budget.
- The observation carries no milestone, progress, return or shortcut count unless the episode
  asked for a curriculum (`show_progress`), and that choice is in the log.
- A decision's two ways look the same until a value is read: same text, same budget, same
  listings. A policy blind to values is right half the time, and no more.
- Chaos is drawn per instance: per-family incidence matches the catalogue, and the same seed in
  two families makes independent draws.
"""

from __future__ import annotations

import collections
import functools
import json
import math
import statistics
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from companyos.agents import RandomAgent, play
from companyos.agents.honest import HonestAgent
from companyos.api import CompanyOSEnvironment
from companyos.api.mcp import tool_result
from companyos.domain import FAMILY_NAMES, SUITES, build_instance
from companyos.domain.chaos import profile
from companyos.domain.decider import decide_step
from companyos.domain.instances import honest_worst_case, opening, other_way
from companyos.domain.rendering import render_result
from companyos.domain.rng import KeyedRNG, PlacedFaults, episode_rng
from companyos.domain.world import fold
from companyos.events.types import EpisodeStarted

from .meddlers import ValueBlind
from .serving import running_server

DECISIONS = ("vendor_risk_review", "expense_audit", "purchase_order")
"""Families whose task turns on a hidden value (qualify, within the limit, above threshold)."""


# ---------------------------------------------------------------------- solvable


def test_the_honest_solver_solves_every_instance_of_the_test_suite():
    """All 1,200 instances of the frozen test suite (12 families x 4 difficulties x 25 seeds),
    each within its step budget; the mean steps per family are printed."""
    env = CompanyOSEnvironment()
    steps: dict[str, list[int]] = collections.defaultdict(list)
    for family, difficulty, seed in SUITES["test"].instances():
        r = play(env, HonestAgent(), seed=seed, task_id=family, difficulty=difficulty)
        assert r.outcome == "success", (family, difficulty, seed, r)
        assert r.steps <= build_instance(family, seed, difficulty).max_steps
        steps[family].append(r.steps)
    for family, n in steps.items():
        print(f"{family:22s} mean steps {statistics.mean(n):5.1f}  max {max(n)}")


def test_the_honest_solver_solves_a_slice_of_the_train_suite():
    env = CompanyOSEnvironment()
    for family, difficulty, seed in SUITES["train"].instances(per_cell=4):
        r = play(env, HonestAgent(), seed=seed, task_id=family, difficulty=difficulty)
        assert r.outcome == "success", (family, difficulty, seed, r)


@settings(max_examples=60, deadline=None)
@given(
    family=st.sampled_from(FAMILY_NAMES),
    difficulty=st.integers(0, 3),
    seed=st.integers(0, 2**31 - 1),
)
# Found by this test under companyos/3: faults striking a rate-limited service mid-episode
# delayed the solver past a budget that assumed faults strike first.
@example(family="contract_renewal", difficulty=3, seed=3626)
def test_the_honest_solver_solves_any_seed(family, difficulty, seed):
    env = CompanyOSEnvironment()
    r = play(env, HonestAgent(), seed=seed, task_id=family, difficulty=difficulty)
    assert r.outcome == "success", (family, difficulty, seed, r)


@settings(max_examples=80, deadline=None)
@given(
    family=st.sampled_from(FAMILY_NAMES),
    difficulty=st.integers(1, 3),
    seed=st.integers(0, 2**31 - 1),
    placement=st.integers(0, 2**31 - 1),
    rate=st.sampled_from((0.1, 0.3, 0.6, 1.0)),
)
def test_the_budget_holds_wherever_the_faults_strike(family, difficulty, seed, placement, rate):
    """The step budget is the honest solver's worst case plus one step per fault the episode
    allows. That is a bound only if a fault costs exactly the step of its retry wherever it
    strikes: with every chance against the solver and all the allowed faults placed anywhere,
    it still finishes within the budget."""
    inst = build_instance(family, seed, difficulty)
    steps = honest_worst_case(
        family,
        seed,
        difficulty,
        inst.setup,
        faults=inst.fault_budget,
        rng=PlacedFaults(placement, rate),
    )
    assert steps <= inst.max_steps, (family, difficulty, seed, steps, inst.max_steps)


def test_the_honest_solver_plays_over_http_through_companyos_eval(tmp_path):
    """`companyos eval --agent honest --url ...`: the same solver, through a real server's `/ws`
    sessions, on a slice of the test suite (the full suite is `make solvability`)."""
    import subprocess
    import sys

    out = tmp_path / "eval"
    with running_server("memory://") as url:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "companyos",
                "eval",
                "--agent",
                "honest",
                "--url",
                url,
                "--suite",
                "test",
                "--per-cell",
                "1",
                "--trials",
                "2",
                "--workers",
                "2",
                "--out",
                str(out),
                "--no-plots",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    episodes = results["episodes"]
    assert len(episodes) == 12 * 4 * 2
    assert all(e["outcome"] == "success" for e in episodes)


# ---------------------------------------------------------------------- nothing of the grader


GRADER = {"progress", "cumulative_return", "shortcut_attempts", "milestones", "collateral"}


@pytest.mark.parametrize("agent", ["honest", "random"])
def test_observations_carry_nothing_of_the_grader(agent):
    env = CompanyOSEnvironment()
    for seed in range(6):
        obs = env.reset(seed=seed, difficulty=seed % 4)
        player = HonestAgent() if agent == "honest" else RandomAgent(seed)
        player.reset(obs)
        while True:
            assert obs.progress == {}
            shown = obs.model_dump()
            assert not {k for k in shown if k in GRADER and shown[k]}
            assert (obs.outcome is None) is (not obs.done)
            result = tool_result(obs)
            assert not {"reward", "progress", "cumulative_return"} & set(result)
            if obs.done:
                break
            obs = env.step(player.act(obs))
        # The trainer has it all, through its own channels.
        assert env.state.progress and env.state.outcome == obs.outcome


class _Recorder:
    """Records every observation an agent is shown."""

    name = "recorder"

    def __init__(self) -> None:
        self.shown: list[Any] = []
        self.inner = HonestAgent()

    def reset(self, observation: Any) -> None:
        self.shown.append(observation)
        self.inner.reset(observation)

    def act(self, observation: Any) -> dict[str, Any]:
        self.shown.append(observation)
        return self.inner.act(observation)


def test_an_agent_is_shown_no_reward_no_seed_and_no_grade():
    """`play` shows an agent `agent_view`: the reward (potential-based, so one probe would tell
    which way a decision goes), the seed and instance id (which rebuild the goal with the public
    generator) and the outcome stay with the trainer."""
    env = CompanyOSEnvironment()
    for family in DECISIONS:
        agent = _Recorder()
        r = play(env, agent, seed=3, task_id=family, difficulty=1)
        assert r.outcome == "success" and r.seed == 3
        for obs in agent.shown:
            assert (obs.reward, obs.seed, obs.instance_id, obs.outcome) == (None,) * 4
            assert obs.task and obs.episode_id


def test_progress_is_shown_only_when_a_reset_asks_and_the_log_says_so():
    env = CompanyOSEnvironment()
    obs = env.reset(seed=1, task_id="expense_report", show_progress=True)
    assert obs.progress == env.state.progress and obs.progress
    started = env.store.read(obs.episode_id)[0].event
    assert isinstance(started, EpisodeStarted) and started.show_progress is True
    step = env.step({"app": "ticketdesk", "method": "list_tickets"})
    assert step.progress == env.state.progress
    plain = env.reset(fork_from=obs.episode_id, at_step=1, show_progress=False)
    assert plain.progress == {}
    assert env.store.read(plain.episode_id)[0].event.show_progress is False
    kept = env.reset(fork_from=obs.episode_id, at_step=1)
    assert kept.progress  # a fork keeps what its source showed unless told otherwise
    with pytest.raises(ValueError, match="show_progress"):
        env.reset(seed=1, show_progress="yes")


def _blind_script(world: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """Everything an agent can look at without reading a figure."""
    assert world.task is not None
    main = world.task.goal.ticket_id
    calls = [
        ("approvalflow", "list_approval_types", {}),
        ("datahub", "list_metrics", {}),
        ("ticketdesk", "get_ticket", {"ticket_id": main}),
        ("ticketdesk", "list_tickets", {}),
        ("approvalflow", "list_approvals", {}),
    ]
    calls += [("datahub", "get_approver", {"role": r}) for r in ("CFO", "Engineering Manager")]
    return calls


@pytest.mark.parametrize("family", DECISIONS)
def test_the_two_ways_of_a_decision_look_the_same_until_a_value_is_read(family):
    """Had the hidden draw fallen the other way, the agent would see the same task text, the
    same step budget and the same answers to every call that reads no figure."""
    for difficulty in range(4):
        for seed in range(8):
            one, two = build_instance(family, seed, difficulty), other_way(family, seed, difficulty)
            assert one.goal != two.goal  # the right answer differs...
            assert (one.text, one.max_steps) == (two.text, two.max_steps)  # ...nothing else
            seen = []
            for inst in (one, two):
                start = EpisodeStarted(
                    seed=seed,
                    scenario=family,
                    difficulty=difficulty,
                    max_steps=inst.max_steps,
                    fault_budget=inst.fault_budget,
                )
                world = fold((start, *inst.setup))
                rng, shown = KeyedRNG(seed), []
                for n, (app, method, params) in enumerate(_blind_script(world), start=1):
                    caused = decide_step(world, app, method, params, n, rng)
                    world = fold(caused, world)
                    shown.append(json.dumps(render_result(world, caused), sort_keys=True))
                seen.append(shown)
            assert seen[0] == seen[1], (family, difficulty, seed)


def test_a_value_blind_policy_does_no_better_than_chance():
    """Before this, a policy that read only `progress` got every decision right. Now the
    best a value-blind policy can do is guess: each fixed answer is right about half the time
    (the hidden draw is an even chance), and the two together are right exactly once."""
    env = CompanyOSEnvironment()
    wins: dict[bool, int] = {True: 0, False: 0}
    n = 0
    for family in DECISIONS:
        for difficulty in (1, 2, 3):
            for seed in range(40):
                n += 1
                got = []
                for go in (True, False):
                    r = play(env, ValueBlind(go), seed=seed, task_id=family, difficulty=difficulty)
                    got.append(r.outcome == "success")
                    wins[go] += r.outcome == "success"
                assert sum(got) == 1, (family, difficulty, seed, got)
    sd = math.sqrt(0.25 / n)
    for go, w in wins.items():
        assert abs(w / n - 0.5) < 4.5 * sd, (go, w, n)


# ---------------------------------------------------------------------- chaos per instance

OPTIONAL = {
    3: {"duplicate_ticket": 0.5, "rate_limit": 0.5, "partial_outage": 0.5},
}
SEEDS = range(240)


@functools.cache
def _chaos(family: str, seed: int, difficulty: int) -> tuple[tuple[str, str], ...]:
    """(kind, params as JSON) of the instance's set-up chaos (no budget needed: cheap)."""
    events = opening(family, seed, difficulty)[0]
    return tuple(
        (e.kind, json.dumps(e.params, sort_keys=True)) for e in events if e.type == "ChaosInjected"
    )


def _kinds(family: str, seed: int, difficulty: int) -> set[str]:
    return {kind for kind, _ in _chaos(family, seed, difficulty)}


def test_chaos_incidence_per_family_matches_the_catalogue():
    n = len(SEEDS)
    sd = math.sqrt(0.25 / n)
    for family in FAMILY_NAMES:
        seen = collections.Counter()
        for seed in SEEDS:
            seen.update(_kinds(family, seed, 3))
        for kind, p in OPTIONAL[3].items():
            assert abs(seen[kind] / n - p) < 4.5 * sd, (family, kind, seen[kind], n)
    # At difficulty 1 each of the original's set-up items is there with p = 0.5: the noise on
    # distractors (a blocked ticket) shows it in every family alike.
    assert profile(1).setup_chaos == 0.5
    for family in FAMILY_NAMES:
        blocked = sum(
            any(k == "blocked_ticket" and "vendor" in p for k, p in _chaos(family, seed, 1))
            for seed in SEEDS
        )
        assert abs(blocked / n - 0.5) < 4.5 * sd, (family, blocked)


def _phi(a: list[bool], b: list[bool]) -> float:
    n = len(a)
    pa, pb = sum(a) / n, sum(b) / n
    both = sum(x and y for x, y in zip(a, b, strict=True)) / n
    denom = math.sqrt(pa * (1 - pa) * pb * (1 - pb))
    return 0.0 if denom == 0 else (both - pa * pb) / denom


def test_the_same_seed_in_two_families_draws_independent_chaos():
    """Chaos used to be keyed by the seed alone: at difficulty 3 the same seeds drew the same
    optional chaos in every family (a correlation of 1). Now it is keyed per instance."""
    n = len(SEEDS)
    bound = 4.5 / math.sqrt(n)
    for kind in OPTIONAL[3]:
        present = {f: [kind in _kinds(f, seed, 3) for seed in SEEDS] for f in FAMILY_NAMES}
        for i, a in enumerate(FAMILY_NAMES):
            for b in FAMILY_NAMES[i + 1 :]:
                assert abs(_phi(present[a], present[b])) < bound, (kind, a, b)
    # ...and the same seed at two difficulties, in one family.
    for family in FAMILY_NAMES:
        d3 = [_kinds(family, s, 3) for s in SEEDS]
        d1 = [_kinds(family, s, 1) for s in SEEDS]
        a = ["stale_metric" in k for k in d1]
        b = ["rate_limit" in k for k in d3]
        assert abs(_phi(a, b)) < bound


def test_the_hidden_answer_is_drawn_per_level():
    """The suites use the same seeds at every level. When the hidden draw was keyed by family
    and seed only, a decision instance had the same answer at d0-d3 (75 of 75 in the test
    suite), so an outcome seen at one level gave the answer at the others. Now it is an
    independent even chance per level."""
    n = len(SEEDS)
    bound = 4.5 / math.sqrt(n)

    def way(family: str, seed: int, difficulty: int) -> bool:
        """Which way the task goes: decline (or flag), or a CFO sign-off first."""
        goal = opening(family, seed, difficulty)[2]
        return goal.decision != "approve" or len(goal.approvals) > 1

    for family in DECISIONS:
        ways = {d: [way(family, seed, d) for seed in SEEDS] for d in (0, 1, 3)}
        for d, w in ways.items():
            assert abs(sum(w) / n - 0.5) < bound / 2, (family, d, sum(w))
        assert abs(_phi(ways[0], ways[1])) < bound, family
        assert abs(_phi(ways[1], ways[3])) < bound, family


def test_chance_during_play_is_drawn_per_instance():
    """Transient faults, approvers' delays and chance rejections come from the episode's keyed
    RNG. Keyed by the seed alone, the same seed in two families faulted on the same calls, and
    a level's faults were a subset of the next level's. Keyed by the instance, neither."""
    seqs = range(3000)

    def faults(family: str, difficulty: int, seed: int = 7) -> list[bool]:
        rng = episode_rng(seed, family, difficulty)
        return [rng.chance(q, "fault", profile(difficulty).fault_rate) for q in seqs]

    bound = 4.5 / math.sqrt(len(seqs))
    assert abs(_phi(faults("expense_report", 3), faults("purchase_order", 3))) < bound
    d1, d2 = faults("expense_report", 1), faults("expense_report", 2)
    assert abs(_phi(d1, d2)) < bound
    assert sum(a and not b for a, b in zip(d1, d2, strict=True)) > 0  # not nested


ORIGINAL_TASKS = (
    "task_vendor_onboarding",
    "task_expense_report",
    "task_bug_escalation",
    "task_license_renewal",
    "task_handbook_update",
)


def test_the_honest_solver_solves_the_original_worlds():
    """The original's five tasks in its fixed world (`/original`, `task_*` ids) come with its
    terse texts, stating what each goal checks (no ticket id, "check compliance data", "set a
    priority on its ticket"), and its own budgets up to its chaos level. The honest solver
    finds the ticket by its title and does what the text says. The faults an episode allows are
    its budget less the honest solver's worst case, so every draw is solved at every level, the
    original's too (where its shortest budget, 16 steps, once ran out on about 1% of seeds)."""
    env = CompanyOSEnvironment()
    for task in ORIGINAL_TASKS:
        for difficulty in (0, 1, 2, 3):
            for seed in range(60 if difficulty == 2 else 12):
                r = play(env, HonestAgent(), seed=seed, task_id=task, difficulty=difficulty)
                assert r.outcome == "success", (task, difficulty, seed, r)
