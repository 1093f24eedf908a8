"""The reward projection: potential-based, unfarmable, re-scorable from the log."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companyos.agents import in_process_oracle, play
from companyos.api import CompanyOSEnvironment
from companyos.domain import ORIGINAL_FAMILIES
from companyos.projections import PROFILES, RewardProfile, cached_rewards, replay

from .helpers import (
    af,
    dh,
    main_ticket,
    poll_until_decided,
    request_data,
    task_metric,
    td,
    update,
    world,
)


def env_at(task: str = "vendor_onboarding", difficulty: int = 2, seed: int = 1, **kw):
    env = CompanyOSEnvironment()
    env.reset(seed=seed, task_id=task, difficulty=difficulty, **kw)
    return env


def test_original_reward_values_are_the_default_weights():
    p = PROFILES["default"]
    assert (
        p.step_cost,
        p.set_priority,
        p.verify,
        p.unblock,
        p.refresh_stale,
        p.fresh_read,
        p.valid_submission,
        p.approved,
        p.failed_call,
        p.rejection,
        p.hallucinated_tool,
        p.success,
        p.timeout,
    ) == (-0.1, 1.0, 1.5, 1.0, 1.0, 0.5, 2.0, 3.0, -0.3, -0.5, -1.0, 15.0, -5.0)


def test_each_milestone_pays_once_in_order():
    env = env_at("bug_escalation", difficulty=0, seed=4)
    tid = main_ticket(env)
    want = world(env).task.goal.tickets[0].fields["assignee"]
    update(env, tid, "assignee", "Nobody Inparticular")
    obs = update(env, tid, "assignee", want)
    assert obs.reward == pytest.approx(-0.1 + 1.0)
    rewards = [update(env, tid, "assignee", want).reward for _ in range(3)]
    assert all(r == pytest.approx(-0.1) for r in rewards)  # repeating pays nothing


def test_undo_redo_nets_zero():
    env = env_at(difficulty=0)
    tid = main_ticket(env)
    assert update(env, tid, "verified", True).reward == pytest.approx(1.4)
    undo = update(env, tid, "verified", False).reward
    redo = update(env, tid, "verified", True).reward
    assert undo == pytest.approx(-1.6) and redo == pytest.approx(1.4)
    assert undo + redo == pytest.approx(2 * -0.1)


def submit(env, **overrides):
    w = world(env)
    cfo = w.people[w.roles["cfo"]].name
    dh(env, "query_metric", metric_name=task_metric(env))
    return af(
        env,
        "submit_approval",
        approval_type="vendor_onboarding",
        approver=cfo,
        data=request_data(env, "vendor_onboarding", **overrides),
    )


def test_out_of_order_progress_counts_only_when_prerequisites_hold():
    env = env_at(difficulty=0)
    tid = main_ticket(env)
    # The wrong object: verifying another ticket earns nothing (and is collateral damage).
    other = next(t for t in world(env).tickets if t != tid)
    obs = update(env, other, "verified", True)
    assert obs.reward == pytest.approx(-0.1 - 1.0) and env.state.progress["clean"] is False
    assert env.state.collateral == [f"{other}.verified"]
    # Putting it back gives the damage's cost back (collateral is a term of the potential).
    assert update(env, other, "verified", False).reward == pytest.approx(-0.1 + 1.0)
    # Submitting before verifying earns nothing: the request would be rejected (unverified).
    obs = submit(env)
    assert obs.reward == pytest.approx(-0.1)
    assert env.state.progress["submitted:vendor_onboarding"] is False
    poll_until_decided(env, obs.last_result["approval_id"])
    assert world(env).approvals[obs.last_result["approval_id"]].status == "rejected"
    assert update(env, tid, "verified", True).reward == pytest.approx(1.4)


def test_losing_a_prerequisite_takes_the_credit_back():
    env = env_at(difficulty=0)
    tid = main_ticket(env)
    update(env, tid, "verified", True)
    obs = submit(env)
    assert obs.reward == pytest.approx(1.9) and env.state.progress["submitted:vendor_onboarding"]
    obs = update(env, tid, "verified", False)
    assert not env.state.progress["submitted:vendor_onboarding"]
    # At difficulty 0 the CFO decides at once: the request is approved as the ticket loses
    # its verification, so the work is over, and not right: a failure.
    assert obs.done and obs.outcome == "failure"
    left = obs.max_steps - obs.step  # a wrong finish forfeits the steps it leaves
    assert obs.reward == pytest.approx(-0.1 - 1.5 - 2.0 - 5.0 - 0.1 * left)


def test_penalties_and_budget():
    env = env_at(difficulty=0, max_steps=100)
    assert td(env, "nonexistent").reward == pytest.approx(-1.1)
    assert td(env, "get_ticket", ticket_id="TKT-9").reward == pytest.approx(-0.4)
    total = env.episode.score.total
    for _ in range(20):
        td(env, "nonexistent")
    # 15 of penalties at most, then only the step cost.
    spent = env.episode.score.total - total
    assert spent == pytest.approx(-(15.0 - 1.3) - 20 * 0.1)


def test_irreversible_mistakes_cost_more():
    env = env_at("bug_escalation", difficulty=0)
    tid = main_ticket(env)
    update(env, tid, "status", "blocked")
    obs = update(env, tid, "status", "closed")
    assert obs.error == "blocked_ticket_close"
    assert obs.reward == pytest.approx(-2.1) and env.state.shortcut_attempts == 1
    env = env_at("handbook_update", difficulty=0)
    tid = main_ticket(env)
    obs = update(env, tid, "status", "closed")
    # Closing the task's ticket early: the irreversible charge, and the damage it does.
    assert obs.reward == pytest.approx(-2.1 - 1.0)
    assert update(env, tid, "verified", True).error == "ticket_closed"


@pytest.mark.parametrize("scenario", ORIGINAL_FAMILIES)
def test_rescoring_the_log_reproduces_the_cached_rewards(scenario):
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    for seed in range(5):
        play(env, oracle, seed=seed, task_id=scenario, difficulty=3)
        records = env.store.read(env.episode.id)
        r = replay(records)
        assert [s.score.reward for s in r.steps] == cached_rewards(records)
        assert r.total == env.episode.score.total


def test_rescoring_under_another_profile():
    env = CompanyOSEnvironment()
    play(env, in_process_oracle(env), seed=11, task_id="vendor_onboarding", difficulty=3)
    records = env.store.read(env.episode.id)
    default = replay(records)
    doubled = replay(records, RewardProfile(name="x2", success=30.0))
    assert doubled.total == pytest.approx(default.total + 15.0)
    original = replay(records, "original")
    faults = sum(e.type == "FaultInjected" for s in default.steps for e in s.events)
    chance = sum(
        e.type == "ApprovalDecided" and e.cause == "chance" for s in default.steps for e in s.events
    )
    assert original.total == pytest.approx(default.total - 0.3 * faults - 0.5 * chance)


def test_abandoned_episodes_pay_the_abandon_term():
    env = env_at(difficulty=0)
    update(env, main_ticket(env), "verified", True)
    first = env.episode.id
    budget = env.state.max_steps
    env.reset(seed=2)
    r = replay(env.store.read(first))
    assert r.outcome == "abandoned"
    assert r.total == pytest.approx(1.4 - 5.0 - 0.1 * (budget - 1))  # and forfeits the rest


_ROUND_PANEL = [0.0, -0.0, 0, 1, -3, 0.1, -0.1, 0.30000000000000004, 1e-7, -5e-7, 2.5e-6, 1e300]


@given(
    st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-(10**6), 10**6),
            st.sampled_from(_ROUND_PANEL),
            # sums of a step's terms, as rewards and totals are made
            st.lists(st.sampled_from([-0.1, 0.2, -0.5, 1.0, 0.35, -0.05]), max_size=30).map(sum),
        ),
        max_size=40,
    )
)
@settings(max_examples=300, deadline=None)
def test_round6_is_round_to_six_digits_bit_for_bit(xs):
    """The kept rounding gives what ``round(x, 6)`` gives, in value, type and sign, asked
    once (a miss) and again (a hit), NaN, infinities, ints and both zeros included."""
    from companyos.projections.reward import round6

    for _ in range(2):
        for x in [*xs, *_ROUND_PANEL]:
            want, got = round(x, 6), round6(x)
            assert type(got) is type(want)
            assert repr(got) == repr(want)  # -0.0 and 0.0, nan, 1.0 and 1 all told apart
