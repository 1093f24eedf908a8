"""The scenario engine: families drawn from a seed, the chaos catalogue (every kind injected,
visible to the agent, in the log, and recoverable), simulated time, grading on the final world,
decision tasks, the frozen suites and stable instance ids."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from companyos.agents import RandomAgent, in_process_naive, in_process_oracle, play
from companyos.api import CompanyOSEnvironment, CompanyOSObservation
from companyos.domain import (
    DIFFICULTIES,
    FAMILIES,
    FAMILY_NAMES,
    HELD_OUT,
    SUITES,
    build_episode,
    build_instance,
    fingerprint,
    fold,
    parse_instance_id,
    plan,
)
from companyos.domain.chaos import CATALOGUE, KIND_NAMES, LEVELS
from companyos.domain.goals import collateral, success
from companyos.domain.instances import start_world
from companyos.domain.model import MINUTES_PER_STEP
from companyos.events.types import ChaosInjected, Event, FaultInjected
from companyos.projections import replay

from .helpers import af, dh, main_ticket, request_data, retry, td, update, world

# ------------------------------------------------------------------ families and instances


def test_at_least_ten_families_five_of_them_the_originals():
    assert len(FAMILIES) >= 10
    assert sum(f.original for f in FAMILIES.values()) == 5
    deciding = [n for n in FAMILY_NAMES if n in ("vendor_risk_review", "expense_audit")]
    assert len(deciding) == 2
    for name, fam in FAMILIES.items():
        assert fam.name == name and fam.title and fam.summary


def test_every_instance_is_well_formed():
    for family in FAMILY_NAMES:
        for difficulty in DIFFICULTIES:
            for seed in range(10):
                inst = build_instance(family, seed, difficulty)
                w = fold(build_episode(family, seed, difficulty))
                assert w.task is not None and w.task.instance_id == inst.instance_id
                g = inst.goal
                assert g.ticket_id in inst.text  # the text names what a human would be told
                for tg in g.tickets:
                    assert tg.ticket_id in w.tickets
                for m in g.metrics:
                    assert m in w.metrics
                for ag in g.approvals:
                    assert ag.approval_type in w.approval_types
                assert not success(w) and collateral(w) == []
                assert len(w.tickets) >= len(g.tickets) + 3  # distractors too
                assert parse_instance_id(inst.instance_id) == (family, difficulty, seed)


def test_names_ids_and_values_come_from_the_seed():
    for family in FAMILY_NAMES:
        insts = [build_instance(family, seed, 2) for seed in range(30)]
        assert len({i.goal.ticket_id for i in insts}) >= 20
        assert len({i.text for i in insts}) >= 20
        values = {tuple(sorted((m.name, m.value) for m in _metrics(i.setup))) for i in insts}
        assert len(values) >= 20


def _metrics(events: tuple[Event, ...]) -> list[Any]:
    return [e for e in events if e.type == "MetricRecorded"]


def test_the_task_text_is_what_a_human_is_told_and_no_more():
    """The text does not change with the chaos laid on the world (difficulty), and never gives
    away what the agent must find out: a fresh value it must read, who is covering."""
    for family in FAMILY_NAMES:
        for seed in range(10):
            texts = {build_instance(family, seed, d).text for d in DIFFICULTIES}
            assert len(texts) == 1, (family, seed)
            w = fold(build_episode(family, seed, 3))
            text = texts.pop()
            for p in w.people.values():
                if p.role is None:  # delegates: the agent has to look them up
                    assert p.name not in text, (family, seed, p.name)
            for m in w.task.goal.metrics:
                fresh = w.metrics[m].true_value
                assert _fmt(fresh) not in text, (family, seed, m, fresh)


def _fmt(v: float) -> str:
    return f"{v:g}" if v != int(v) else f"{int(v)}."


def test_the_cached_initial_world_is_the_fold_of_the_opening_events():
    for family in FAMILY_NAMES:
        for difficulty in DIFFICULTIES:
            for seed in range(3):
                events = build_episode(family, seed, difficulty, agent="x", max_steps=40)
                assert start_world(events) == fold(events)


def test_instances_are_cached_and_deterministic():
    a = build_episode("purchase_order", 123, 3)
    build_instance.cache_clear()
    b = build_episode("purchase_order", 123, 3)
    assert a == b
    assert build_instance("purchase_order", 123, 3) is build_instance("purchase_order", 123, 3)


# Stable instance ids: the initial world of these instances must never change. If a change to
# the generator is intended, bump GENERATOR and re-pin (old logs keep their own events).
PINNED = {
    "vendor_onboarding-d2-s7": "57b7422228374e66",
    "purchase_order-d3-s1000000": "bedad3e8e0335a5c",
    "data_access_request-d1-s42": "8b77248629617b6f",
    "incident_escalation-d3-s5": "5e2025a642e70703",
    "expense_audit-d0-s99": "4ae5bfc77af1b683",
}


@pytest.mark.parametrize("iid", sorted(PINNED))
def test_instance_ids_are_stable(iid):
    parsed = parse_instance_id(iid)
    assert parsed is not None
    assert fingerprint(*parsed) == PINNED[iid]


# ------------------------------------------------------------------ the chaos catalogue


def test_the_catalogue_has_fifteen_kinds_each_mapped_to_every_difficulty():
    assert len(CATALOGUE) == 15 and len(set(KIND_NAMES)) == 15
    assert sum(k.original for k in CATALOGUE) == 7
    for k in CATALOGUE:
        assert k.what and len(k.levels) == len(LEVELS)
        assert k.levels[0] in ("never", "none", "next step")


@dataclass(frozen=True)
class Witness:
    family: str
    seed: int
    difficulty: int


def _setup_kinds(family: str, seed: int, difficulty: int) -> dict[str, list[ChaosInjected]]:
    out: dict[str, list[ChaosInjected]] = {}
    for e in build_instance(family, seed, difficulty).setup:
        if isinstance(e, ChaosInjected):
            out.setdefault(e.kind, []).append(e)
    return out


QUIET = {"rate_limit", "partial_outage"}
"""Kinds that get in the way of probing others (a probe retries calls a fault refused)."""


def find_static(kind: str, also: Callable[[Witness], bool] = lambda w: True) -> Witness:
    """The first instance at the lowest difficulty whose initial world has ``kind`` (from the
    catalogue's difficulty mapping: the first level where it is not "never")."""
    spec = next(k for k in CATALOGUE if k.name == kind)
    lowest = next(d for d, what in enumerate(spec.levels) if what not in ("never", "none"))
    for difficulty in (lowest,):  # the mapping is checked: the kind is there from that level
        for seed in range(200):
            for family in FAMILY_NAMES:
                kinds = _setup_kinds(family, seed, difficulty)
                if kind in kinds and not (QUIET - {kind}) & set(kinds):
                    w = Witness(family, seed, difficulty)
                    if also(w):
                        return w
    raise AssertionError(f"no instance has {kind}")


def start(w: Witness, max_steps: int = 100) -> CompanyOSEnvironment:
    env = CompanyOSEnvironment()
    env.reset(seed=w.seed, task_id=w.family, difficulty=w.difficulty, max_steps=max_steps)
    return env


def injected(env: CompanyOSEnvironment, kind: str) -> ChaosInjected:
    assert env.episode is not None
    found = [
        r.event
        for r in env.store.read(env.episode.id)
        if isinstance(r.event, ChaosInjected) and r.event.kind == kind
    ]
    assert found, kind
    return found[0]


def recover(env: CompanyOSEnvironment) -> None:
    """The oracle takes over from wherever the probe left the episode, and succeeds."""
    oracle = in_process_oracle(env)
    obs = env.step({"app": "ticketdesk", "method": "list_tickets"})
    while not obs.done:
        obs = env.step(oracle.act(obs))
    assert obs.outcome == "success", obs
    w = world(env)
    assert success(w) and collateral(w) == []


def wait_until(env: CompanyOSEnvironment, minute: int) -> None:
    while world(env).clock < minute:
        td(env, "list_tickets")


def role_of(env: CompanyOSEnvironment, person_id: str) -> str:
    w = world(env)
    for role, pid in w.roles.items():
        if pid == person_id:
            return role
    # a delegate: the role whose chain they are on
    for role, pid in w.roles.items():
        if w.people[pid].delegate == person_id:
            return role
    raise AssertionError(person_id)


def probe_missing_field(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    t = retry(td, env, "get_ticket", ticket_id=c.target).last_result
    assert t[c.params["field"]] is None


def probe_blocked_ticket(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    t = retry(td, env, "get_ticket", ticket_id=c.target).last_result
    assert t["status"] == "blocked"
    assert retry(update, env, c.target, "status", "closed").error == "blocked_ticket_close"


def probe_stale_metric(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    q = retry(dh, env, "query_metric", metric_name=c.target)
    if q.error == "permission_denied":
        return  # a restricted metric: its staleness shows once access is granted
    q = q.last_result
    assert q["is_stale"] and q["value"] == c.params["served_value"] and "refresh" in q["warning"]
    r = retry(dh, env, "refresh_data", metric_name=c.target).last_result
    assert r["is_stale"] is False and r["value"] == world(env).metrics[c.target].true_value


def probe_out_of_office(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    a = retry(dh, env, "get_approver", role=role_of(env, c.target)).last_result
    assert a["out_of_office"] is True and a["approver"] != world(env).people[c.target].name


def probe_delegate_chain(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    w = world(env)
    role = role_of(env, c.target)
    holder = w.people[w.roles[role]]
    assert holder.delegate == c.target
    second = w.people[c.target].delegate
    assert second is not None
    a = retry(dh, env, "get_approver", role=role).last_result
    assert a["approver"] == w.people[second].name and a["on_behalf_of"] == holder.name


def probe_conflicting_values(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    t = retry(td, env, "get_ticket", ticket_id=c.target).last_result
    stated = c.params["stated"]
    assert re.search(re.escape(f"{stated:,.0f}") + "|" + re.escape(str(stated)), t["description"])
    r = retry(dh, env, "refresh_data", metric_name=c.params["metric"]).last_result
    assert r["value"] != stated


def probe_duplicate_ticket(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    original = world(env).tickets[c.params["of"]]
    hits = retry(td, env, "search_tickets", query=original.title).last_result["tickets"]
    assert {c.target, c.params["of"]} <= {t["ticket_id"] for t in hits}
    # Working on the duplicate is not working on the task: it is collateral damage.
    retry(update, env, c.target, "verified", True)
    assert env.state.progress["clean"] is False
    retry(update, env, c.target, "verified", False)


def probe_permission_denied(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    q = retry(dh, env, "query_metric", metric_name=c.target)
    assert q.error == "permission_denied" and c.params["dataset"] in q.message
    assert "data_access" in q.message


def probe_rate_limit(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    app, calls = c.target, c.params["calls"]
    method = {"ticketdesk": "list_tickets", "datahub": "list_metrics"}.get(app, "list_approvals")
    seen = [env.step({"app": app, "method": method}) for _ in range(calls + 2)]
    limited = [o for o in seen if o.error == "rate_limited"]
    assert limited and limited[0].last_result["retry_after_minutes"] >= 1
    assert "429" in limited[0].message
    # Waiting it out (working elsewhere) opens the service again.
    other = "datahub" if app != "datahub" else "ticketdesk"
    other_method = "list_metrics" if other == "datahub" else "list_tickets"
    for _ in range(limited[-1].last_result["retry_after_minutes"] // MINUTES_PER_STEP + 1):
        env.step({"app": other, "method": other_method})
    assert env.step({"app": app, "method": method}).error is None


def probe_partial_outage(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    app = c.target
    wait_until(env, c.params["from_minute"]) if app != "ticketdesk" else None
    while world(env).clock < c.params["from_minute"]:
        dh(env, "list_metrics")
    method = {"ticketdesk": "list_tickets", "datahub": "list_metrics"}.get(app, "list_approvals")
    obs = env.step({"app": app, "method": method})
    assert obs.error == "service_down" and "until" in obs.last_result
    assert world(env).tickets == world(env).tickets  # nothing changed is checked by the fold


def probe_approval_sla(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    """A request left with an approver who is away is never decided: it expires."""
    w = world(env)
    goal = w.task.goal
    atype = w.approval_types[goal.approvals[0].approval_type]
    holder = w.people[w.roles[atype.required_role]]
    assert holder.out_of_office
    obs = retry(
        af,
        env,
        "submit_approval",
        approval_type=atype.name,
        approver=holder.name,
        data=request_data(env, atype.name),
    )
    aid = obs.last_result["approval_id"]
    wait_until(env, world(env).approvals[aid].pending_since + c.params["minutes"])
    status = retry(af, env, "check_status", approval_id=aid).last_result
    assert status["status"] == "expired"


def probe_stale_during_episode(env: CompanyOSEnvironment, c: ChaosInjected) -> None:
    q = retry(dh, env, "query_metric", metric_name=c.target)
    if q.error == "permission_denied":
        return
    assert q.last_result["is_stale"] is False
    wait_until(env, c.params["stale_at"])
    q = retry(dh, env, "query_metric", metric_name=c.target).last_result
    assert q["is_stale"] is True


STATIC: dict[str, Callable[[CompanyOSEnvironment, ChaosInjected], None]] = {
    "missing_field": probe_missing_field,
    "blocked_ticket": probe_blocked_ticket,
    "stale_metric": probe_stale_metric,
    "out_of_office": probe_out_of_office,
    "delegate_chain": probe_delegate_chain,
    "conflicting_values": probe_conflicting_values,
    "duplicate_ticket": probe_duplicate_ticket,
    "permission_denied": probe_permission_denied,
    "rate_limit": probe_rate_limit,
    "partial_outage": probe_partial_outage,
    "approval_sla": probe_approval_sla,
    "stale_during_episode": probe_stale_during_episode,
}


def _sla_witness(w: Witness) -> bool:
    inst = build_instance(w.family, w.seed, w.difficulty)
    world0 = fold(build_episode(w.family, w.seed, w.difficulty))
    role = world0.approval_types[inst.goal.approvals[0].approval_type].required_role
    return bool(inst.goal.approvals) and world0.people[world0.roles[role]].out_of_office


@pytest.mark.parametrize("kind", sorted(STATIC))
def test_set_up_chaos_is_injected_visible_and_recoverable(kind):
    also = _sla_witness if kind == "approval_sla" else (lambda w: True)
    w = find_static(kind, also)
    env = start(w)
    c = injected(env, kind)  # in the log, with its parameters
    assert c.params or kind == "approval_sla"
    assert kind in world(env).chaos.kinds
    STATIC[kind](env, c)
    if kind == "approval_sla":
        # A request left with someone who is away is damage that cannot be undone (requests are
        # never withdrawn): recovery is shown from the start of the same instance.
        assert any(x.endswith(":approver") for x in env.state.collateral)
        env.reset(fork_from=env.episode.id, at_step=0)
    recover(env)


DYNAMIC = ("transient_fault", "approval_latency", "approval_rejection")


def _oracle_run(family: str, seed: int, difficulty: int) -> tuple[Any, list[Any]]:
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    seen: list[tuple[dict[str, Any], CompanyOSObservation]] = []
    obs = env.reset(seed=seed, task_id=family, difficulty=difficulty)
    while not obs.done:
        action = oracle.act(obs)
        obs = env.step(action)
        seen.append((action, obs))
    return env, seen


@pytest.mark.parametrize("kind", DYNAMIC)
def test_chaos_during_play_is_recorded_visible_and_recoverable(kind):
    for seed in range(300):
        family = FAMILY_NAMES[seed % len(FAMILY_NAMES)]
        env, seen = _oracle_run(family, seed, 2)
        if kind in world(env).chaos.kinds:
            break
    else:
        raise AssertionError(f"no episode had {kind}")
    records = env.store.read(env.episode.id)
    events = [r.event for r in records]
    assert seen[-1][1].outcome == "success"  # recovered
    if kind == "transient_fault":
        faults = [e for e in events if isinstance(e, FaultInjected) and e.kind == "unavailable"]
        assert faults
        failed = [(a, o) for a, o in seen if o.error == "service_unavailable"]
        assert failed and "retry" in failed[0][1].message
        # the very same call went through later
        assert any(a == failed[0][0] and o.error is None for a, o in seen)
    elif kind == "approval_latency":
        lat = [e for e in events if isinstance(e, ChaosInjected) and e.kind == kind]
        assert lat and all(e.params["minutes"] % MINUTES_PER_STEP == 0 for e in lat)
        assert any(
            isinstance(o.last_result, dict) and o.last_result.get("status") == "pending"
            for _, o in seen
        )
    else:
        rej = [e for e in events if isinstance(e, ChaosInjected) and e.kind == kind]
        assert rej
        assert any(a["method"] == "escalate" and o.error is None for a, o in seen)
        # What an agent polling right after the rejection sees: fork the episode there.
        step, at = 0, None
        for r in records:
            if r.type == "ToolCalled":
                step = r.event.step
            elif r.type == "ApprovalDecided" and r.event.cause == "chance":
                at = (step, r.event.approval_id)
                break
        assert at is not None
        fork = CompanyOSEnvironment(env.store)
        fork.reset(fork_from=env.episode.id, at_step=at[0])
        status = af(fork, "check_status", approval_id=at[1])
        while status.error is not None:  # a transient fault: retry
            status = af(fork, "check_status", approval_id=at[1])
        assert status.last_result["status"] == "rejected" and status.last_result["reason"]
        assert "escalate" in status.message


def test_every_catalogue_kind_is_covered_by_a_test():
    assert set(STATIC) | set(DYNAMIC) == set(KIND_NAMES)


# ------------------------------------------------------------------ simulated time


def test_the_clock_is_part_of_state_and_observation():
    env = CompanyOSEnvironment()
    obs = env.reset(seed=3, task_id="purchase_order", difficulty=1)
    assert obs.clock_minutes == 0 and obs.time == "Mon 09:00"
    for i in range(1, 4):
        obs = td(env, "list_tickets")
        assert obs.clock_minutes == i * MINUTES_PER_STEP
    assert obs.time == "Mon 09:15"
    state = env.state
    assert state.world["episode"]["clock_minutes"] == 15
    # The clock is a projection of the log: replaying gives the same time.
    assert replay(env.store.read(env.episode.id)).world.clock == 15


def test_approvals_are_decided_by_the_clock_not_by_polling():
    env = CompanyOSEnvironment()
    env.reset(seed=4, task_id="handbook_update", difficulty=0)
    oracle = in_process_oracle(env)
    obs = None
    while True:
        call = plan(world(env))
        if call is None or call.method == "check_status":
            break
        obs = env.step(oracle.act(obs) if obs else call.as_action())
    (aid,) = world(env).approvals
    assert world(env).approvals[aid].status == "pending"
    td(env, "list_tickets")  # time passes; nobody polls
    assert world(env).approvals[aid].status == "approved"


# ------------------------------------------------------------------ grading on the final world


def test_success_is_a_predicate_on_the_final_world_not_a_script():
    """The same work succeeds or fails by what the world holds when it is finished: with
    collateral damage standing when the approval comes through it is a failure; the same
    damage undone before then is no damage at all."""
    for undo in (False, True):
        env = CompanyOSEnvironment()
        obs = env.reset(seed=8, task_id="handbook_update", difficulty=0)
        oracle = in_process_oracle(env)
        tid = main_ticket(env)
        other = next(t for t in world(env).tickets if t != tid)
        old = world(env).tickets[other].priority
        update(env, other, "priority", "critical")  # collateral damage first
        assert collateral(world(env)) == [f"{other}.priority"]
        if undo:
            update(env, other, "priority", old)
        while not obs.done:
            obs = env.step(oracle.act(obs))
        assert obs.outcome == ("success" if undo else "failure")
        assert success(world(env)) is undo


def test_a_decline_task_fails_if_the_request_is_pushed_through():
    for seed in range(60):
        inst = build_instance("vendor_risk_review", seed, 0)
        if inst.goal.decision != "approve":
            break
    env = CompanyOSEnvironment()
    env.reset(seed=seed, task_id="vendor_risk_review", difficulty=0)
    w = world(env)
    cfo = w.people[w.roles["cfo"]].name
    obs = af(
        env,
        "submit_approval",
        approval_type="vendor_onboarding",
        approver=cfo,
        data=request_data(env, "vendor_onboarding"),
    )
    assert obs.error is None
    assert collateral(world(env)) and env.state.progress["clean"] is False
    recover_fails = in_process_oracle(env)
    obs = td(env, "list_tickets")
    while not obs.done:
        obs = env.step(recover_fails.act(obs))
    assert obs.outcome != "success"  # a request that should never have been made stays made


def test_decision_families_have_both_outcomes_and_the_oracle_gets_each_right():
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    for family in ("vendor_risk_review", "expense_audit"):
        outcomes: dict[str, int] = {}
        for seed in range(40):
            difficulty = seed % 4
            inst = build_instance(family, seed, difficulty)
            r = play(env, oracle, seed=seed, task_id=family, difficulty=difficulty)
            assert r.outcome == "success"
            outcomes[inst.goal.decision] = outcomes.get(inst.goal.decision, 0) + 1
            if inst.goal.decision != "approve":
                assert world(env).approvals == {} or all(
                    a.approval_type not in {ag.approval_type for ag in inst.goal.approvals}
                    for a in world(env).approvals.values()
                )
        assert len(outcomes) == 2 and min(outcomes.values()) >= 8, (family, outcomes)


# ------------------------------------------------------------------ baselines


def rates(agent_of: Callable[[CompanyOSEnvironment], Any], difficulty: int, n: int) -> float:
    env = CompanyOSEnvironment()
    agent = agent_of(env)
    wins = [
        play(env, agent, seed=s, task_id=f, difficulty=difficulty).outcome == "success"
        for f in FAMILY_NAMES
        for s in range(n)
    ]
    return statistics.mean(wins)


def test_naive_and_random_agents_score_low_at_difficulty_two_and_up():
    naive = {d: rates(in_process_naive, d, 10) for d in DIFFICULTIES}
    assert naive[0] >= 0.9  # a real agent: it does the job when nothing goes wrong
    assert naive[2] <= 0.5 and naive[3] <= 0.15, naive
    assert naive[0] > naive[1] > naive[2] >= naive[3]
    for d in (2, 3):
        assert rates(lambda env: RandomAgent(7), d, 5) == 0.0


# ------------------------------------------------------------------ suites


def test_suites_split_by_seed_and_hold_out_one_family():
    train, test = SUITES["train"], SUITES["test"]
    assert HELD_OUT not in train.families and HELD_OUT in test.families
    assert set(train.families) | {HELD_OUT} == set(test.families) == set(FAMILY_NAMES)
    assert set(train.seeds).isdisjoint(range(test.seeds.start, test.seeds.start + 10))
    assert train.seeds.stop <= test.seeds.start
    listed = test.instances()
    assert len(listed) == len(FAMILY_NAMES) * len(DIFFICULTIES) * test.per_cell
    assert listed == test.instances()  # frozen: the same list every time
    assert all(s in test.seeds for _, _, s in listed)
    assert set(SUITES["original"].families) == {n for n, f in FAMILIES.items() if f.original}


def test_the_test_suite_is_solvable_by_the_oracle():
    """The oracle's run is the suite's solvability check: every instance of the frozen test
    suite, at every difficulty (12 x 4 x 25 = 1,200 instances), succeeds."""
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    failed = [
        (f, d, s)
        for f, d, s in SUITES["test"].instances()
        if play(env, oracle, seed=s, task_id=f, difficulty=d).outcome != "success"
    ]
    assert failed == []


# ------------------------------------------------------------------ determinism, every family


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_same_seed_and_actions_give_the_same_log_for_every_family(family):
    for difficulty in DIFFICULTIES:
        logs = []
        for _ in range(2):
            env = CompanyOSEnvironment()
            play(
                env,
                RandomAgent(difficulty),
                seed=difficulty + 11,
                task_id=family,
                difficulty=difficulty,
            )
            records = env.store.read(env.episode.id)
            logs.append([(r.type, r.hash) for r in records])
            r = replay(records)
            assert r.world == env.episode.world and r.score == env.episode.score
        assert logs[0] == logs[1]
        env = CompanyOSEnvironment()
        oracle = in_process_oracle(env)
        a = play(env, oracle, seed=5, task_id=family, difficulty=difficulty)
        first = [r.hash for r in env.store.read(env.episode.id)]
        b = play(env, oracle, seed=5, task_id=family, difficulty=difficulty)
        assert a.outcome == b.outcome == "success"
        assert first == [r.hash for r in env.store.read(env.episode.id)]
