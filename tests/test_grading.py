"""Grading that checks the right objects. Each hole an outside review found is played here the
way an agent would play it: the honest solver does the task right, and a meddler slips in the
one thing grading must catch (`tests/meddlers.py`). Every case fails on the grader before this
issue (it succeeded, or paid, or cost nothing) and must fail, and cost, now."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companyos.agents import play
from companyos.agents.honest import HonestAgent
from companyos.api import CompanyOSEnvironment
from companyos.domain import build_instance
from companyos.domain.model import as_number, same_number

from .helpers import af, dh, td, world
from .meddlers import Meddled, play_meddled


def honest_return(family: str, seed: int, difficulty: int) -> float:
    env = CompanyOSEnvironment()
    r = play(env, HonestAgent(), seed=seed, task_id=family, difficulty=difficulty)
    assert r.outcome == "success"
    return r.total_return


def meddled(family: str, seed: int, difficulty: int, agent: Meddled) -> CompanyOSEnvironment:
    env = CompanyOSEnvironment()
    play_meddled(env, agent, seed=seed, task_id=family, difficulty=difficulty)
    return env


def submits(call: dict[str, Any], kind: str | None = None) -> bool:
    return call["method"] == "submit_approval" and (
        kind is None or call["params"]["approval_type"] == kind
    )


def once(meddle: Any) -> Any:
    """A meddle that acts the first time it applies, then never again."""
    done: list[bool] = []

    def wrapped(call: dict[str, Any], obs: Any) -> list[dict[str, Any]]:
        if done:
            return []
        extra = meddle(call, obs)
        if extra:
            done.append(True)
        return extra

    return wrapped


def seed_where(family: str, difficulty: int, test: Any, seeds: range = range(200)) -> int:
    for seed in seeds:
        if test(build_instance(family, seed, difficulty)):
            return seed
    raise AssertionError(f"no {family} instance at d{difficulty} where {test}")


def return_of(env: CompanyOSEnvironment) -> float:
    return env.state.cumulative_return


# ---------------------------------------------------------------------- numbers


NON_FINITE = ["inf", "Infinity", "-inf", "+INF", "1e999", "inf%", "$inf", "NaN", "nan", "-1e400"]
MALFORMED = ["8,5", "0,85", ",85", "85,0", "9,5.0", "1_000", "0x55", "\uff18\uff15", "85 %%"]
"""Not how anybody writes a number: a comma anywhere but between groups of three digits once
read "9,5.0" as 95; underscores, hex and full-width digits are Python's, not people's."""


@pytest.mark.parametrize("value", [*NON_FINITE, *MALFORMED, 10**400])
def test_a_figure_that_is_not_a_finite_number_is_refused_and_changes_nothing(value):
    """`"inf"` used to match any system-of-record value (|inf - x| <= inf). Now the request is
    refused with a message and a penalty, nothing is submitted, and the task can still be
    done right afterwards."""

    def swap(call: dict[str, Any], obs: Any) -> list[dict[str, Any]]:
        if not submits(call, "vendor_onboarding"):
            return []
        bad = {**call["params"], "data": {**call["params"]["data"], "compliance_score": value}}
        return [{**call, "params": bad}]

    agent = Meddled(once(swap))
    env = meddled("vendor_onboarding", 3, 0, agent)
    assert agent.slipped, "the meddler never got to submit"
    records = env.store.read(env.episode.id)
    refused = [r.event for r in records if r.event.type in ("ActionRejected", "InvalidAction")]
    assert [e.code for e in refused] == ["invalid_number"]
    assert "finite number" in refused[0].message or "out of range" in refused[0].message
    submitted = [r.event for r in records if r.event.type == "ApprovalSubmitted"]
    assert all(as_number(e.data["compliance_score"]) is not None for e in submitted)
    assert env.state.outcome == "success"  # a refused call changes nothing
    scored = [r.event for r in records if r.event.type == "StepScored"]
    assert any(s.terms.get("failed_call") == -0.3 for s in scored)


text_forms = st.builds(
    lambda sign, word, case, pct: f"{sign}{getattr(word, case)()}{pct}",
    st.sampled_from(["", "+", "-", " "]),
    st.sampled_from(["inf", "infinity", "nan", "1e309", "9e999", "1E400"]),
    st.sampled_from(["lower", "upper", "title"]),
    st.sampled_from(["", "%", " "]),
)


@settings(max_examples=300)
@given(
    value=st.one_of(
        text_forms,
        st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: not math.isfinite(x)),
        st.integers(min_value=10**309, max_value=10**400),
    ),
    record=st.floats(min_value=-1e12, max_value=1e12),
)
def test_no_form_of_a_non_finite_number_matches_a_record(value, record):
    assert as_number(value) is None
    assert as_number(str(value)) is None
    assert as_number(record) is not None and same_number(as_number(record), record)


# ---------------------------------------------------------------------- collateral damage


def test_a_request_of_the_task_type_about_another_ticket_is_damage():
    def other_ticket(call: dict[str, Any], obs: Any) -> list[dict[str, Any]]:
        if not submits(call, "vendor_onboarding"):
            return []
        goal = world(env).task.goal
        other = next(t for t in world(env).tickets if t != goal.ticket_id)
        data = {**call["params"]["data"], "ticket_id": other}
        return [{**call, "params": {**call["params"], "data": data}}]

    env = CompanyOSEnvironment()
    play_meddled(
        env, Meddled(once(other_ticket)), seed=5, task_id="vendor_onboarding", difficulty=0
    )
    assert env.state.outcome != "success"
    assert any(c.endswith(":object") for c in env.state.collateral)
    assert return_of(env) < honest_return("vendor_onboarding", 5, 0) - 1.0


def test_a_request_about_the_tasks_ticket_naming_another_vendor_is_damage():
    """What a request is about is every field the task names, not only its ticket: a
    vendor_onboarding request on the task's ticket for another vendor is about another
    vendor, and it costs even if the approver rejects or never decides it."""

    def other_vendor(call: dict[str, Any], obs: Any) -> list[dict[str, Any]]:
        if not submits(call, "vendor_onboarding"):
            return []
        data = {**call["params"]["data"], "vendor": "Globex Corporation"}
        return [{**call, "params": {**call["params"], "data": data}}]

    env = CompanyOSEnvironment()
    agent = Meddled(once(other_vendor))
    play_meddled(env, agent, seed=5, task_id="vendor_onboarding", difficulty=0)
    assert agent.slipped
    assert any(c.endswith(":object") for c in env.state.collateral)
    assert env.state.outcome != "success"


def test_access_to_an_extra_restricted_dataset_is_damage():
    def extra_access(call: dict[str, Any], obs: Any) -> list[dict[str, Any]]:
        if not submits(call, "data_access"):
            return []
        data = {**call["params"]["data"], "dataset": "hr_salaries"}
        return [{**call, "params": {**call["params"], "data": data}}]

    env = CompanyOSEnvironment()
    agent = Meddled(once(extra_access))
    play_meddled(env, agent, seed=4, task_id="data_access_request", difficulty=1)
    assert agent.slipped
    assert env.state.outcome != "success"
    assert any(c.endswith(":object") for c in env.state.collateral)


@pytest.mark.parametrize("who", ["away", "nobody_in_particular"])
def test_a_request_to_the_wrong_or_an_absent_approver_is_damage(who):
    """The CFO is away at difficulty 2: the request to them is never decided (and expires at
    difficulty 3), and it stays on record; so does a request to someone with no authority."""

    def misroute(call: dict[str, Any], obs: Any) -> list[dict[str, Any]]:
        if not submits(call, "vendor_onboarding"):
            return []
        w = world(env)
        role = "cfo" if who == "away" else "legal"  # the CFO is away; Legal has no say
        name = w.people[w.roles[role]].name
        return [{**call, "params": {**call["params"], "approver": name}}]

    env = CompanyOSEnvironment()
    seed = seed_where(
        "vendor_onboarding",
        2,
        lambda i: any(getattr(e, "kind", "") == "out_of_office" for e in i.setup),
    )
    play_meddled(env, Meddled(once(misroute)), seed=seed, task_id="vendor_onboarding", difficulty=2)
    assert env.state.outcome != "success"
    assert any(c.endswith(":approver") for c in env.state.collateral)


def test_a_hedged_duplicate_request_neither_pays_nor_hedges():
    """Submitting every request twice used to be a hedge against a chance rejection. The
    second request, made while the first is live, is damage; the episode cannot succeed."""

    def hedge(call: dict[str, Any], obs: Any) -> list[dict[str, Any]]:
        return [call] if submits(call) else []

    for family, seed, difficulty in [("vendor_onboarding", 1, 2), ("purchase_order", 3, 1)]:
        env = meddled(family, seed, difficulty, Meddled(once(hedge)))
        assert env.state.outcome != "success", family
        assert any(c.endswith(":duplicate") for c in env.state.collateral), family
        assert return_of(env) < honest_return(family, seed, difficulty), family


def test_a_sign_off_naming_a_prior_approval_for_the_wrong_vendor_does_not_count():
    """An order above the CFO threshold needs the CFO's sign-off about this order; one for
    another vendor, approved, named by the manager's request, used to pass."""
    seed = seed_where("purchase_order", 0, lambda i: len(i.goal.approvals) == 2)

    def wrong_vendor(call: dict[str, Any]) -> dict[str, Any]:
        if submits(call, "purchase_order_cfo"):
            data = {**call["params"]["data"], "vendor": "Somebody Else Ltd"}
            return {**call, "params": {**call["params"], "data": data}}
        return call

    env = CompanyOSEnvironment()
    obs = play_meddled(
        env,
        Meddled(lambda c, o: [], rewrite=wrong_vendor),
        seed=seed,
        task_id="purchase_order",
        difficulty=0,
    )
    approved = [a for a in world(env).approvals.values() if a.status == "approved"]
    assert {a.approval_type for a in approved} == {"purchase_order_cfo", "purchase_order"}
    assert obs.outcome == "failure"
    assert not env.state.progress["approved:purchase_order"]
    assert any(c.endswith(":unfit") for c in env.state.collateral)


def test_damage_costs_in_a_failing_episode_too():
    """Two episodes that both run out of time; the one that also changed a ticket the task
    did not touch and requested an approval nobody asked for ends lower, by the damage."""
    totals = []
    for meddle in (False, True):
        env = CompanyOSEnvironment()
        env.reset(seed=9, task_id="handbook_update", difficulty=0)
        if meddle:
            goal = world(env).task.goal
            other = next(t for t in world(env).tickets if t != goal.ticket_id)
            td(env, "update_ticket", ticket_id=other, field="priority", value="critical")
            w = world(env)
            af(
                env,
                "submit_approval",
                approval_type="license_renewal",
                approver=w.people[w.roles["procurement"]].name,
                data={"ticket_id": other, "license": "x", "expiry_days": 1},
            )
        while not env.episode.world.ended:
            td(env, "list_tickets")
        assert env.state.outcome == "timeout"
        records = [r.event for r in env.store.read(env.episode.id)]
        damage = sum(e.terms.get("collateral", 0.0) for e in records if e.type == "StepScored")
        assert damage == pytest.approx(-2.0 if meddle else 0.0)
        totals.append(return_of(env))
    clean, damaged = totals
    assert damaged <= clean - 2.0


def test_every_step_re_evaluates_the_milestones_on_the_clock():
    """Data read fresh, then nothing but read-only calls while it goes stale: the read no
    longer counts, and it is a read-only step that takes the credit back."""

    def stale_during(i: Any) -> bool:
        return not i.goal.access and any(
            getattr(e, "kind", "") == "stale_during_episode" and e.target in i.goal.metrics
            for e in i.setup
        )

    seed = seed_where("purchase_order", 3, stale_during)
    inst = build_instance("purchase_order", seed, 3)
    chaos = next(e for e in inst.setup if getattr(e, "kind", "") == "stale_during_episode")
    env = CompanyOSEnvironment()
    env.reset(seed=seed, task_id="purchase_order", difficulty=3)
    for _ in range(6):
        if dh(env, "query_metric", metric_name=chaos.target).error is None:
            break
    read = f"data_read:{chaos.target}"
    assert env.state.progress[read]
    while env.episode.world.clock <= chaos.params["stale_at"]:
        td(env, "list_tickets")  # reads only: the apps do not change
    assert not env.state.progress[read]
    records = [r.event for r in env.store.read(env.episode.id)]
    lost = next(e.step for e in records if e.type == "StepScored" and read in e.lost)
    call = next(e for e in records if e.type == "ToolCalled" and e.step == lost)
    assert (call.app, call.method) == ("ticketdesk", "list_tickets")


# ---------------------------------------------------------------------- the session's episode


def test_a_session_cannot_act_in_another_episode():
    """One call naming an earlier successful episode used to record that success for the
    agent. A session plays its own episode: the call is refused, as a step of its own
    episode, and the other episode is not touched."""
    env = CompanyOSEnvironment()
    won = play(env, HonestAgent(), seed=2, task_id="expense_report", difficulty=0)
    assert won.outcome == "success"
    before = [r.hash for r in env.store.read(won.episode_id)]
    mine = env.reset(seed=3, task_id="expense_report", difficulty=0)
    obs = env.step(
        {"app": "ticketdesk", "method": "list_tickets", "params": {}, "episode_id": won.episode_id}
    )
    assert obs.error == "foreign_episode" and obs.episode_id == mine.episode_id
    assert not obs.done and obs.reward == pytest.approx(-0.1 - 0.3)
    assert [r.hash for r in env.store.read(won.episode_id)] == before
    assert env.state.episode_id == mine.episode_id and env.state.step_count == 1
    # A session that only continues an episode owns it too.
    other = CompanyOSEnvironment(env.store)
    other.step({"app": "ticketdesk", "method": "list_tickets", "episode_id": mine.episode_id})
    taken = other.step(
        {"app": "ticketdesk", "method": "list_tickets", "episode_id": won.episode_id}
    )
    assert taken.error == "foreign_episode"
    assert [r.hash for r in env.store.read(won.episode_id)] == before
