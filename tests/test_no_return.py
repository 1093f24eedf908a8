"""The point of no return (analytics.no_return) with the privileged oracle as the player
(``player="oracle"``, kept for comparisons): right on hand-built episodes whose answer is known
in advance, the same as real forks played on by the oracle agent for every step of a sample of
failed naive and random episodes, and None where nothing was lost. The default player, the
honest solver, is tested in tests/test_mistakes.py."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from companyos.agents import in_process_oracle, play
from companyos.agents.naive import in_process_naive
from companyos.agents.oracle import LOOK as AGENT_LOOK
from companyos.agents.random_agent import RandomAgent
from companyos.analytics.no_return import (
    LOOK,
    SimulatedForks,
    lost_at,
    point_of_no_return,
    points_of_no_return,
)
from companyos.api import CompanyOSEnvironment, ResetError
from companyos.domain import FAMILY_NAMES, plan
from companyos.events import RecordedEvent

from .helpers import af, request_data, td, world

ORACLE = "oracle"

# ---------------------------------------------------------------------------- helpers


def stream(env: CompanyOSEnvironment) -> list[RecordedEvent]:
    assert env.episode is not None
    return env.store.read(env.episode.id)


def oracle_call(env: CompanyOSEnvironment) -> None:
    """One step of what the oracle would do now."""
    call = plan(world(env))
    assert call is not None
    env.step(call.as_action())


def dawdle(env: CompanyOSEnvironment, steps: int | None = None) -> None:
    """Harmless calls (a listing changes nothing) for ``steps`` steps, or until the end."""
    done = 0
    while not world(env).ended and (steps is None or done < steps):
        td(env, "list_tickets")
        done += 1


def oracle_length(seed: int, task: str, difficulty: int, **reset: Any) -> tuple[int, int]:
    """Steps the oracle needs for the instance played alone from the start, and its budget."""
    env = CompanyOSEnvironment()
    r = play(env, in_process_oracle(env), seed=seed, task_id=task, difficulty=difficulty, **reset)
    assert r.outcome == "success"
    info = world(env).info
    assert info is not None
    return r.steps, info.max_steps


def seed_with(task: str, decision: str, difficulty: int = 0) -> int:
    env = CompanyOSEnvironment()
    for seed in range(100):
        env.reset(seed=seed, task_id=task, difficulty=difficulty)
        task_ = world(env).task
        assert task_ is not None
        if task_.goal.decision == decision:
            return seed
    raise AssertionError(f"no seed in 0-99 gives a {decision} instance of {task}")


def real_fork(env: CompanyOSEnvironment, source: str, k: int) -> tuple[str | None, int, Any, int]:
    """Fork ``source`` at step k for real (a new stream in the store) and let the in-process
    oracle agent play it to the end: outcome, steps, final world and stream version."""
    r = play(env, in_process_oracle(env), fork_from=source, at_step=k)
    ep = env.episode
    assert ep is not None and ep.id == r.episode_id
    return r.outcome, r.steps, ep.world.without_lineage(), ep.version


# ---------------------------------------------------------------------------- hand-built


def test_the_idle_call_is_the_oracle_agents():
    assert LOOK.as_action() == AGENT_LOOK


def test_an_approval_pushed_through_a_flag_task_is_lost_the_step_it_is_sent():
    """An expense over the limit must be flagged and nothing requested. The agent plays the
    oracle's first calls, then submits an expense approval anyway: an approval request cannot
    be withdrawn, so that step lost the episode, and the step before it is the point of no
    return (from there the continuation is the oracle's own winning episode)."""
    seed = seed_with("expense_audit", "flag")
    length, _ = oracle_length(seed, "expense_audit", 0)
    assert length >= 2
    env = CompanyOSEnvironment()
    env.reset(seed=seed, task_id="expense_audit", difficulty=0)
    good = length - 1  # all of the oracle's calls but the flag itself
    for _ in range(good):
        oracle_call(env)
    w = world(env)
    role = w.approval_types["expense_report"].required_role
    approver = w.people[w.roles[role]].name
    af(
        env,
        "submit_approval",
        approval_type="expense_report",
        approver=approver,
        data=request_data(env, "expense_report"),
    )
    assert len(world(env).approvals) == 1  # it went in: nothing can take it back
    oracle_call(env)  # and the flag, right but too late to count: the request is collateral
    assert world(env).outcome == "failure"  # a decision finishes the work, right or wrong
    records = stream(env)
    assert point_of_no_return(records, player=ORACLE) == good
    assert lost_at(records, player=ORACLE) == good + 1


@pytest.mark.parametrize(
    ("task", "decision"), [("vendor_risk_review", "decline"), ("expense_audit", "flag")]
)
def test_a_decline_that_came_too_late(task: str, decision: str):
    """The agent dawdles, then does the right thing (read the score, decline), but too late:
    the oracle needs ``length`` steps from any dawdling state (difficulty 0: no chance, no
    staleness), so the last step from which it still makes it is ``max_steps - length``."""
    seed = seed_with(task, decision)
    length, budget = oracle_length(seed, task, 0)
    env = CompanyOSEnvironment()
    env.reset(seed=seed, task_id=task, difficulty=0)
    dawdle(env, budget - length + 1)
    while not world(env).ended:
        oracle_call(env)
    assert world(env).outcome == "timeout"
    records = stream(env)
    assert point_of_no_return(records, player=ORACLE) == budget - length
    assert lost_at(records, player=ORACLE) == budget - length + 1
    # Neither later: from the step after, one step is missing.
    forks = SimulatedForks(records, player=ORACLE)
    assert forks.continue_from(budget - length).steps == budget
    assert forks.continue_from(budget - length + 1).outcome == "timeout"


@pytest.mark.parametrize("task", ["vendor_onboarding", "expense_report", "vendor_risk_review"])
def test_an_agent_that_only_wastes_steps(task: str):
    env = CompanyOSEnvironment()
    env.reset(seed=11, task_id=task, difficulty=0)
    dawdle(env)
    assert world(env).outcome == "timeout"
    length, budget = oracle_length(11, task, 0)
    assert point_of_no_return(stream(env), player=ORACLE) == budget - length


def test_a_budget_the_oracle_cannot_meet_even_from_the_start_gives_none():
    length, _ = oracle_length(3, "vendor_onboarding", 0)
    env = CompanyOSEnvironment()
    env.reset(seed=3, task_id="vendor_onboarding", difficulty=0, max_steps=length - 1)
    dawdle(env)
    records = stream(env)
    assert world(env).outcome == "timeout"
    assert (
        point_of_no_return(records, player=ORACLE) is None
        and lost_at(records, player=ORACLE) is None
    )


def test_an_abandoned_episode_still_winnable_was_lost_by_walking_away():
    """Abandoned after two of the oracle's own steps: the fork at the last step (allowed after
    an abandonment) still wins, so the point of no return is that step and no step lost it."""
    env = CompanyOSEnvironment()
    env.reset(seed=5, task_id="vendor_onboarding", difficulty=0)
    oracle_call(env)
    oracle_call(env)
    source = stream(env)
    env.reset(seed=6, task_id="vendor_onboarding", difficulty=0)  # walks away from the first
    records = env.store.read(source[0].stream)
    assert records[-1].event.type == "EpisodeEnded" and records[-1].event.outcome == "abandoned"
    assert point_of_no_return(records, player=ORACLE) == 2
    assert lost_at(records, player=ORACLE) is None
    assert real_fork(env, source[0].stream, 2)[0] == "success"


def test_a_fork_after_the_end_is_refused_like_a_real_one():
    env = CompanyOSEnvironment()
    env.reset(seed=2, task_id="vendor_onboarding", difficulty=0, max_steps=3)
    dawdle(env)
    records = stream(env)
    forks = SimulatedForks(records, player=ORACLE)
    assert list(forks.forkable) == [0, 1, 2]
    with pytest.raises(ValueError):
        forks.continue_from(3)
    with pytest.raises(ResetError):
        env.reset(fork_from=records[0].stream, at_step=3)


# ---------------------------------------------------------------------------- no loss, no answer


def test_successes_and_running_episodes_give_none():
    env = CompanyOSEnvironment()
    oracle, naive = in_process_oracle(env), in_process_naive(env)
    seen_naive_success = False
    for seed in range(12):
        r = play(env, oracle, seed=seed, task_id=FAMILY_NAMES[seed], difficulty=1 + seed % 3)
        assert r.outcome == "success"
        assert (
            point_of_no_return(stream(env), player=ORACLE) is None
            and lost_at(stream(env), player=ORACLE) is None
        )
        r = play(env, naive, seed=seed, task_id=FAMILY_NAMES[seed], difficulty=1)
        if r.outcome == "success":
            seen_naive_success = True
            assert point_of_no_return(stream(env), player=ORACLE) is None
    assert seen_naive_success
    env.reset(seed=1, task_id="purchase_order", difficulty=2)
    td(env, "list_tickets")
    assert world(env).outcome is None
    assert point_of_no_return(stream(env), player=ORACLE) is None


# ---------------------------------------------------------------------------- agreement with forks


def failed_sample(env: CompanyOSEnvironment, difficulty: int) -> list[str]:
    """Failed naive and random episodes of two families in three at ``difficulty`` (each
    family at two of the three difficulties), a few of them abandoned."""
    out: list[str] = []
    for i, family in enumerate(FAMILY_NAMES):
        if i % 3 == difficulty % 3:
            continue
        seed = 7919 * i + difficulty
        for agent in (in_process_naive(env), RandomAgent(seed)):
            if agent.name == "random" and i % 4 == 0:
                # Abandoned part-way: the random agent plays a few steps, then the session
                # starts over (which abandons it).
                obs = env.reset(seed=seed, task_id=family, difficulty=difficulty, agent="random")
                agent.reset(obs)
                for _ in range(3 + i % 5):
                    obs = env.step(agent.act(obs))
                    if obs.done:
                        break
                assert obs.episode_id is not None
                if not obs.done:
                    env.reset(seed=0, task_id=family, difficulty=0)
                    out.append(obs.episode_id)
                continue
            r = play(env, agent, seed=seed, task_id=family, difficulty=difficulty)
            if r.outcome != "success":
                out.append(r.episode_id)
    return out


@pytest.mark.parametrize("difficulty", [1, 2, 3])
def test_the_simulation_agrees_with_real_forks_at_every_step(difficulty: int):
    """For each failed episode and every step k a fork may be taken at, a real fork on the
    in-memory store played by the in-process oracle agent ends exactly as the simulation says:
    same outcome, same step, same world, same stream version (so the same chaos was drawn).
    The point of no return is then the last k whose real fork wins."""
    env = CompanyOSEnvironment()
    sources = failed_sample(env, difficulty)
    assert len(sources) >= 8
    abandoned = lost_some_wins = not_monotone = 0
    for source in sources:
        records = env.store.read(source)
        forks = SimulatedForks(records, player=ORACLE)
        abandoned += forks.outcome == "abandoned"
        wins: list[bool] = []
        for k in forks.forkable:
            simulated = forks.continue_from(k)
            real = real_fork(env, source, k)
            assert real == (
                simulated.outcome,
                simulated.steps,
                simulated.world.without_lineage(),
                simulated.version,
            ), f"{source} forked at {k}"
            wins.append(real[0] == "success")
        assert wins[0], f"{source}: the oracle loses from the start"
        expected = max(k for k, won in zip(forks.forkable, wins, strict=True) if won)
        assert point_of_no_return(records, player=ORACLE) == expected
        lost_some_wins += not all(wins)
        not_monotone += any(not a and b for a, b in itertools.pairwise(wins))
    assert abandoned >= 1
    assert lost_some_wins >= len(sources) // 2  # not vacuous: most failures lose some forks
    # Why the scan runs backwards to the first win instead of bisecting: losing from k and
    # winning from k+1 happens (other chaos drawn, or the agent's step helped).
    if difficulty >= 2:
        assert not_monotone >= 1


def test_the_batch_helper_gives_the_same_answers_with_and_without_workers():
    env = CompanyOSEnvironment()
    sources = failed_sample(env, 2)[:8]
    streams = [env.store.read(s) for s in sources]
    singles = [point_of_no_return(s, player=ORACLE) for s in streams]
    assert points_of_no_return(streams, player=ORACLE) == singles
    assert points_of_no_return(streams, workers=2, player=ORACLE) == singles
    assert points_of_no_return([]) == [] == points_of_no_return([], workers=2)
