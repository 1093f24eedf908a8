"""The timeline projection (what the replay viewer shows) and the world diff under it: every step
says what the agent was told at the time, what it earned, and exactly what changed."""

from __future__ import annotations

from typing import Any

import pytest

from companyos.agents import RandomAgent, in_process_oracle
from companyos.api import CompanyOSEnvironment, CompanyOSObservation
from companyos.api.models import CompanyOSState
from companyos.events.types import ChaosInjected, FaultInjected, StepScored, ToolCalled
from companyos.projections import render_world, replay
from companyos.projections.timeline import Diagnosis, FailureLabel, timeline, world_changes
from companyos.projections.world_diff import Change, diff

from .helpers import td

# ---------------------------------------------------------------------------- the diff


def test_equal_documents_have_no_changes():
    doc = {"a": [{"ticket_id": "T1", "x": 1}], "b": {"c": None}}
    assert diff(doc, {"a": [{"ticket_id": "T1", "x": 1}], "b": {"c": None}}) == []


def test_a_changed_field_is_one_change_at_its_path():
    before = {"ticketdesk": {"tickets": [{"ticket_id": "T1", "priority": None, "status": "open"}]}}
    after = {"ticketdesk": {"tickets": [{"ticket_id": "T1", "priority": "high", "status": "open"}]}}
    assert diff(before, after) == [
        Change(("ticketdesk", "tickets", "T1", "priority"), "changed", None, "high")
    ]


def test_records_are_matched_by_identity_not_position():
    a = {"ticket_id": "T1", "v": 1}
    b = {"ticket_id": "T2", "v": 2}
    assert diff([a, b], [b, a]) == []
    new = {"approval_id": "APR-1", "ticket_id": "T1", "status": "pending"}
    # The approval names the ticket it is about, but it is named by its own id.
    assert diff([], [new]) == [Change(("APR-1",), "added", None, new)]
    assert diff([a, b], [b]) == [Change(("T1",), "removed", a, None)]
    assert diff([a], [{**a, "v": 5}]) == [Change(("T1", "v"), "changed", 1, 5)]


def test_plain_lists_and_new_keys():
    assert diff({"chaos": ["x"]}, {"chaos": ["x", "y"]}) == [
        Change(("chaos",), "changed", ["x"], ["x", "y"])
    ]
    assert diff({"a": 1}, {"a": 1, "b": 2}) == [Change(("b",), "added", None, 2)]
    assert diff({"a": 1, "b": 2}, {"a": 1}) == [Change(("b",), "removed", 2, None)]
    # Records without a unique name are compared as a whole.
    same_name = [{"name": "x", "v": 1}, {"name": "x", "v": 2}]
    assert diff(same_name, same_name[:1]) == [Change((), "changed", same_name, same_name[:1])]


# ---------------------------------------------------------------------------- the timeline


def play_recording(
    env: CompanyOSEnvironment, agent: Any, **reset: Any
) -> tuple[str, list[tuple[CompanyOSObservation, CompanyOSState]]]:
    obs = env.reset(**reset)
    agent.reset(obs)
    seen = []
    while not obs.done:
        obs = env.step(agent.act(obs))
        # The trainer's view beside the agent's: the return and milestones live in `state`.
        seen.append((obs, env.state))
    assert obs.episode_id is not None
    return obs.episode_id, seen


@pytest.mark.parametrize(
    ("task", "difficulty", "seed", "policy"),
    [
        ("vendor_onboarding", 3, 10, "oracle"),
        ("expense_report", 2, 5, "oracle"),
        ("bug_escalation", 3, 4, "random"),
        ("license_renewal", 1, 8, "random"),
    ],
)
def test_each_step_is_what_the_agent_saw_and_earned(task, difficulty, seed, policy):
    env = CompanyOSEnvironment()
    agent = in_process_oracle(env) if policy == "oracle" else RandomAgent(seed)
    eid, seen = play_recording(env, agent, seed=seed, task_id=task, difficulty=difficulty)
    records = env.store.read(eid)
    t = timeline(records)
    steps = t["steps"]
    assert [s["step"] for s in steps] == list(range(1, len(seen) + 1))
    assert t["next_step"] is None and t["episode"]["steps"] == len(seen)

    calls = [r.event for r in records if isinstance(r.event, ToolCalled)]
    scored = [r.event for r in records if isinstance(r.event, StepScored)]
    for s, (obs, state), call, cache in zip(steps, seen, calls, scored, strict=True):
        # What the live environment told the agent, re-rendered from the log.
        assert (s["message"], s["error"], s["result"]) == (obs.message, obs.error, obs.last_result)
        assert s["call"] == {
            "app": call.app,
            "method": call.method,
            "params": call.params,
            "refused": call.refused,
        }
        assert s["reward"] == pytest.approx(obs.reward) == pytest.approx(cache.reward)
        assert s["return"] == pytest.approx(state.cumulative_return)
        assert (s["gained"], s["lost"]) == (cache.gained, cache.lost)
        assert s["progress"] == state.progress and obs.progress == {}
    total = 0.0
    for s in steps:
        total += s["reward"]
        assert s["return"] == pytest.approx(total)
    assert steps[-1]["outcome"] == t["episode"]["outcome"] == seen[-1][0].outcome


def timeless(world: dict) -> dict:
    """A rendered world without what moves with the clock alone."""
    episode = {
        k: v for k, v in world["episode"].items() if k not in ("step", "clock_minutes", "time")
    }
    metrics = [
        {k: v for k, v in m.items() if k not in ("age_hours", "stale_days", "warning")}
        | {"warning": bool(m.get("warning"))}
        for m in world["datahub"]["metrics"]
    ]
    return {**world, "episode": episode, "datahub": {**world["datahub"], "metrics": metrics}}


def test_worlds_and_changes_follow_the_fold():
    env = CompanyOSEnvironment()
    eid, _ = play_recording(
        env, in_process_oracle(env), seed=3, task_id="vendor_onboarding", difficulty=3
    )
    records = env.store.read(eid)
    r, t = replay(records), timeline(records)
    assert t["initial"]["world"] == render_world(r.setup)
    before = t["initial"]["world"]
    for k, s in enumerate(t["steps"], start=1):
        assert s["world"] == render_world(r.world_at(k))
        assert s["changes"] == world_changes(before, s["world"])
        # Nothing but the clock (and metrics' ages with it) changes unseen; a changed world
        # always lists something.
        assert (s["changes"] == []) == (timeless(before) == timeless(s["world"]))
        before = s["world"]
    tid = env.episode.world.task.goal.ticket_id
    priority = next(s for s in t["steps"] if "ticket_priority" in s["gained"])
    assert {
        "path": ["ticketdesk", "tickets", tid, "priority"],
        "op": "changed",
        "before": None,
        "after": "high",
    } in priority["changes"]
    last = t["steps"][-1]
    assert {
        "path": ["episode", "outcome"],
        "op": "changed",
        "before": None,
        "after": "success",
    } in (last["changes"])


def test_chaos_and_faults_are_reported_on_their_step():
    """Search a few seeds for an episode with a transient fault and in-play chaos (approval
    latency), then check the timeline puts each on the step whose events hold it."""
    found_fault = found_chaos = False
    for seed in range(40):
        env = CompanyOSEnvironment()
        eid, _ = play_recording(
            env, in_process_oracle(env), seed=seed, task_id=seed % 5, difficulty=3
        )
        records = env.store.read(eid)
        r, t = replay(records), timeline(records)
        for step, s in zip(r.steps, t["steps"], strict=True):
            faults = [e for e in step.events if isinstance(e, FaultInjected)]
            chaos = [e for e in step.events if isinstance(e, ChaosInjected)]
            assert s["faults"] == [
                {"app": e.app, "method": e.method, "kind": e.kind} for e in faults
            ]
            assert s["chaos"] == [
                {"kind": e.kind, "target": e.target, "params": e.params} for e in chaos
            ]
            if faults:
                assert s["error"] == "service_unavailable"
            found_fault |= bool(faults)
            found_chaos |= bool(chaos)
        setup = [e.event for e in records[: r.steps[0].first_index] if e.type == "ChaosInjected"]
        assert t["initial"]["chaos"] == [
            {"kind": e.kind, "target": e.target, "params": e.params} for e in setup
        ]
        if found_fault and found_chaos:
            return
    pytest.fail("no seed in 0-39 gave both a fault and in-play chaos at difficulty 3")


def test_the_diagnosis_is_null_until_something_provides_it():
    env = CompanyOSEnvironment()
    env.reset(seed=1, task_id="vendor_onboarding", difficulty=0)
    td(env, "get_ticket", ticket_id="TKT-1042")
    records = env.store.read(env.episode.id)  # type: ignore[union-attr]
    plain = timeline(records)["episode"]
    assert plain["failure"] is None and plain["point_of_no_return"] is None
    told = timeline(records, Diagnosis(FailureLabel("used_stale_data", 1, "why"), 0))["episode"]
    assert told["failure"] == {"label": "used_stale_data", "step": 1, "detail": "why"}
    assert told["point_of_no_return"] == 0


def test_pages_join_into_the_whole_timeline():
    env = CompanyOSEnvironment()
    eid, _ = play_recording(env, RandomAgent(3), seed=3, task_id=0, difficulty=2)
    records = env.store.read(eid)
    whole = timeline(records)
    n = len(whole["steps"])
    joined, nxt = [], 1
    while nxt is not None:
        page = timeline(records, from_step=nxt, limit=7)
        assert page["episode"] == whole["episode"]
        joined += page["steps"]
        nxt = page["next_step"]
    assert joined == whole["steps"] and len(joined) == n
    for bad in (0, n + 1):
        with pytest.raises(ValueError, match=f"from_step must be from 1 to {n}"):
            timeline(records, from_step=bad)
