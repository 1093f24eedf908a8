"""Every tool, field rule and chaos mechanism of the original, with its names, and the chaos
dial from 0 (none at all) to 3 (2 being the original's probabilities)."""

from __future__ import annotations

import pytest

from companyos.agents import RandomAgent, play
from companyos.api import CompanyOSEnvironment
from companyos.domain import (
    DIFFICULTIES,
    FAMILY_NAMES,
    ORIGINAL_FAMILIES,
    TOOLS,
    KeyedRNG,
    build_episode,
    build_instance,
    fold,
    profile,
)
from companyos.domain.chaos import roll_fault
from companyos.events.types import ChaosInjected, FaultInjected, ToolCalled

from .helpers import (
    acting,
    af,
    chaos,
    dh,
    holder,
    main_ticket,
    poll_until_decided,
    request_data,
    retry,
    task_metric,
    td,
    update,
    world,
)

ORIGINAL_TOOLS = {
    ("ticketdesk", "list_tickets"): [],
    ("ticketdesk", "search_tickets"): ["query"],
    ("ticketdesk", "get_ticket"): ["ticket_id"],
    ("ticketdesk", "update_ticket"): ["ticket_id", "field", "value"],
    ("datahub", "list_metrics"): [],
    ("datahub", "query_metric"): ["metric_name"],
    ("datahub", "refresh_data"): ["metric_name"],
    ("datahub", "get_approver"): ["role"],
    ("approvalflow", "list_approval_types"): [],
    ("approvalflow", "submit_approval"): ["approval_type", "approver", "data"],
    ("approvalflow", "check_status"): ["approval_id"],
    ("approvalflow", "escalate"): ["approval_id", "reason"],
    ("approvalflow", "list_approvals"): [],
}


def new_env(task: str, difficulty: int = 2, seed: int = 1, **kw) -> CompanyOSEnvironment:
    env = CompanyOSEnvironment()
    env.reset(seed=seed, task_id=task, difficulty=difficulty, **kw)
    return env


def test_catalogue_matches_the_original_names():
    assert {k: list(t.params.model_fields) for k, t in TOOLS.items()} == ORIGINAL_TOOLS
    for t in TOOLS.values():
        assert t.description and t.parameters_schema()["additionalProperties"] is False
        assert t.faultable == (not t.method.startswith("list_"))


def test_ticket_fields_and_rules():
    env = new_env("bug_escalation", difficulty=0)
    tid = main_ticket(env)
    ticket = retry(td, env, "get_ticket", ticket_id=tid.lower() + " ").last_result
    assert set(ticket) >= {
        "priority",
        "assignee",
        "status",
        "verified",
        "linked_approval",
        "resolution",
    }
    assert retry(update, env, tid, "status", "In Progress").last_result["ticket"]["status"] == (
        "in_progress"
    )
    # Linking needs a verified ticket and an existing approval.
    assert retry(update, env, tid, "linked_approval", "APR-1001").error == "ticket_not_verified"
    retry(update, env, tid, "verified", "true")
    assert retry(update, env, tid, "linked_approval", "APR-1001").error == "approval_not_found"
    assert retry(update, env, tid, "resolution", "cancelled").error == "invalid_value"
    # A blocked ticket cannot be closed directly; unblocked it can, and then it is read-only.
    retry(update, env, tid, "status", "blocked")
    assert retry(update, env, tid, "status", "closed").error == "blocked_ticket_close"
    retry(update, env, tid, "status", "open")
    assert retry(update, env, tid, "status", "closed").error is None
    assert retry(update, env, tid, "priority", "low").error == "ticket_closed"


def test_search_and_list():
    env = new_env("vendor_onboarding", difficulty=0)
    tid = main_ticket(env)
    title = world(env).tickets[tid].title
    hits = retry(td, env, "search_tickets", query=title.lower()).last_result["tickets"]
    assert tid in {t["ticket_id"] for t in hits}
    assert len(td(env, "list_tickets").last_result["tickets"]) == len(world(env).tickets) >= 4
    names = {m["metric"] for m in dh(env, "list_metrics").last_result["metrics"]}
    assert task_metric(env) in names and len(names) >= 3


def test_stale_metric_then_refresh_crosses_threshold():
    env = new_env("vendor_onboarding", difficulty=2)
    m = task_metric(env)
    q = retry(dh, env, "query_metric", metric_name=m).last_result
    assert set(q) >= {
        "metric",
        "value",
        "unit",
        "stale_days",
        "source",
        "threshold_pass",
        "is_stale",
        "warning",
    }
    assert q["stale_days"] == 4 and q["is_stale"] and q["threshold_pass"] is False
    assert "refresh" in q["warning"]
    r = retry(dh, env, "refresh_data", metric_name=m).last_result
    assert r["previous_value"] == q["value"] and r["value"] > q["value"]
    assert (r["is_stale"], r["threshold_pass"]) == (False, True)


def test_out_of_office_approver_has_a_delegate():
    env = new_env("vendor_onboarding", difficulty=2)
    a = retry(dh, env, "get_approver", role="cfo").last_result
    assert a["approver"] == acting(env, "cfo") != holder(env, "cfo")
    assert a["on_behalf_of"] == holder(env, "cfo") and a["out_of_office"] is True
    assert retry(dh, env, "get_approver", role="CTO").last_result["approver"] == holder(env, "cto")
    assert retry(dh, env, "get_approver", role="janitor").error == "role_not_found"


def test_approval_types():
    env = new_env("vendor_onboarding", difficulty=0)
    types = af(env, "list_approval_types").last_result["approval_types"]
    roles = {k: v["required_role"] for k, v in types.items()}
    assert {
        k: roles[k]
        for k in (
            "vendor_onboarding",
            "expense_report",
            "bug_escalation",
            "license_renewal",
            "handbook_update",
        )
    } == {
        "vendor_onboarding": "CFO",
        "expense_report": "CFO",
        "bug_escalation": "CTO",
        "license_renewal": "Procurement",
        "handbook_update": "HR Lead",
    }
    assert types["vendor_onboarding"]["required_data"] == [
        "ticket_id",
        "vendor",
        "compliance_score",
    ]
    assert len(types) >= 12


def prepare_vendor(env):
    tid = main_ticket(env)
    retry(update, env, tid, "priority", "high")
    retry(update, env, tid, "verified", True)


def test_approval_to_out_of_office_approver_stays_pending_with_auto_reply():
    env = new_env("vendor_onboarding", difficulty=2)
    prepare_vendor(env)
    retry(dh, env, "refresh_data", metric_name=task_metric(env))
    away = world(env).people[world(env).roles["cfo"]]
    aid = retry(
        af,
        env,
        "submit_approval",
        approval_type="vendor_onboarding",
        approver=away.email,
        data=request_data(env, "vendor_onboarding"),
    ).last_result["approval_id"]
    for _ in range(5):
        obs = retry(af, env, "check_status", approval_id=aid)
        assert obs.last_result["status"] == "pending"
        assert "out of office" in obs.last_result["auto_reply"]
    esc = retry(af, env, "escalate", approval_id=aid, reason="stuck")
    assert esc.error == "not_rejected" and "covers" in esc.message


@pytest.mark.parametrize(
    ("route", "refresh", "verify", "cause"),
    [
        ("wrong", True, True, "wrong_approver"),
        ("right", False, True, "data_mismatch"),
        ("right", True, False, "ticket_unverified"),
    ],
)
def test_wrong_requests_are_rejected_with_the_reason(route, refresh, verify, cause):
    env = new_env("vendor_onboarding", difficulty=2, seed=3)
    tid = main_ticket(env)
    retry(update, env, tid, "priority", "high")
    if verify:
        retry(update, env, tid, "verified", True)
    if refresh:
        retry(dh, env, "refresh_data", metric_name=task_metric(env))
    approver = acting(env, "cfo") if route == "right" else holder(env, "cto")
    aid = retry(
        af,
        env,
        "submit_approval",
        approval_type="vendor_onboarding",
        approver=approver,
        data=request_data(env, "vendor_onboarding"),
    ).last_result["approval_id"]
    poll_until_decided(env, aid)
    assert world(env).approvals[aid].status == "rejected"
    assert world(env).approvals[aid].cause == cause
    # Escalating does not fix a wrong request: it is rejected again.
    retry(af, env, "escalate", approval_id=aid, reason="please")
    poll_until_decided(env, aid)
    assert world(env).approvals[aid].status == "rejected"


def test_submission_checks_required_keys():
    env = new_env("vendor_onboarding", difficulty=0)
    cfo = holder(env, "cfo")
    obs = af(
        env,
        "submit_approval",
        approval_type="vendor_onboarding",
        approver=cfo,
        data={"ticket_id": main_ticket(env)},
    )
    assert obs.error == "missing_data" and "compliance_score" in obs.message
    obs = af(env, "submit_approval", approval_type="holiday", approver=cfo, data={})
    assert obs.error == "unknown_approval_type"
    obs = af(
        env,
        "submit_approval",
        approval_type="vendor_onboarding",
        approver="Nobody",
        data=request_data(env, "vendor_onboarding"),
    )
    assert obs.error == "unknown_approver" and "get_approver" in obs.message


def test_decisions_follow_the_clock_rejections_and_escalation_at_the_original_level():
    steps_to_decide, rejected, recovered = [], 0, 0
    for seed in range(150):
        env = new_env("vendor_onboarding", difficulty=2, seed=seed, max_steps=200)
        prepare_vendor(env)
        retry(dh, env, "refresh_data", metric_name=task_metric(env))
        aid = retry(
            af,
            env,
            "submit_approval",
            approval_type="vendor_onboarding",
            approver=acting(env, "cfo"),
            data=request_data(env, "vendor_onboarding"),
        ).last_result["approval_id"]
        n = 0
        while not world(env).ended:
            af(env, "check_status", approval_id=aid)
            n += 1
            if world(env).approvals[aid].status != "pending":
                break
        steps_to_decide.append(n)
        if world(env).approvals[aid].status == "rejected":
            rejected += 1
            assert world(env).approvals[aid].reason
            retry(af, env, "escalate", approval_id=aid, reason="Budget approved by finance.")
            poll_until_decided(env, aid)
            while world(env).approvals[aid].status == "rejected":  # chance again, in the cap
                retry(af, env, "escalate", approval_id=aid, reason="again")
                poll_until_decided(env, aid)
            recovered += world(env).approvals[aid].status == "approved"
    assert {1, 2, 3} <= set(steps_to_decide) and max(steps_to_decide) <= 6
    assert 0.12 <= rejected / 150 <= 0.30
    assert recovered == rejected


def test_transient_faults_spare_list_calls_and_respect_the_rate():
    for seed in range(10):
        env = new_env("expense_report", difficulty=3, seed=seed, max_steps=100)
        for app, method in (
            ("ticketdesk", "list_tickets"),
            ("datahub", "list_metrics"),
            ("approvalflow", "list_approval_types"),
        ):
            obs = env.step({"app": app, "method": method})
            assert obs.error in (None, "rate_limited", "service_down")
            if obs.error:
                continue
    for difficulty, rate in ((0, 0.0), (1, 0.05), (2, 0.10), (3, 0.20)):
        rng = KeyedRNG(99)
        hits = sum(
            roll_fault(rng, seq, profile(difficulty), 0, 10**9, "ticketdesk", "get_ticket")
            is not None
            for seq in range(20_000)
        )
        assert abs(hits / 20_000 - rate) < 0.01, (difficulty, hits)


def test_fault_budget_caps_faults_per_episode():
    binding = 0
    for seed in range(40):
        env = new_env("license_renewal", difficulty=3, seed=seed)
        budget = world(env).info.fault_budget
        faults = 0
        while not world(env).ended:
            faults += td(env, "get_ticket", ticket_id=main_ticket(env)).error == (
                "service_unavailable"
            )
        assert faults <= budget
        binding += faults == budget
    assert binding > 0


def chaos_kinds(family: str, difficulty: int, seed: int) -> set[str]:
    events = build_episode(family, seed, difficulty)
    return {e.kind for e in events if isinstance(e, ChaosInjected)}


ORIGINAL_KINDS = {"missing_field", "blocked_ticket", "stale_metric", "out_of_office"}


def test_chaos_dial():
    for family in FAMILY_NAMES:
        inst = {d: [build_instance(family, s, d) for s in range(20)] for d in DIFFICULTIES}
        kinds = {
            d: set().union(*(chaos_kinds(family, d, s) for s in range(20))) for d in DIFFICULTIES
        }
        assert kinds[0] == set()  # no chaos at all
        # Level 1 has at most what level 2 has of the original's kinds, plus inherent chaos.
        assert (kinds[1] & ORIGINAL_KINDS) <= (kinds[2] & ORIGINAL_KINDS)
        assert kinds[2] - ORIGINAL_KINDS <= {
            "permission_denied",
            "delegate_chain",
            "conflicting_values",
        }
        assert kinds[3] >= kinds[2] - {"approval_latency", "approval_rejection"}
        assert {"approval_sla"} <= kinds[3]
        assert all(i.worst_case <= i.max_steps for d in DIFFICULTIES for i in inst[d])
    new_kinds = set().union(*(chaos_kinds(f, 3, s) for f in FAMILY_NAMES for s in range(20)))
    assert {
        "rate_limit",
        "partial_outage",
        "duplicate_ticket",
        "stale_during_episode",
        "delegate_chain",
        "permission_denied",
        "conflicting_values",
    } <= new_kinds
    assert profile(2).fault_rate == 0.10 and profile(2).rejection_rate == 0.20
    assert profile(2).polls == (1, 3)


def test_original_families_at_level_2_have_the_originals_chaos():
    env = new_env("vendor_onboarding", difficulty=2, seed=5)
    kinds = {(c.kind, c.target) for c in chaos(env)}
    w = world(env)
    assert ("missing_field", main_ticket(env)) in kinds
    assert ("stale_metric", task_metric(env)) in kinds
    assert ("out_of_office", w.roles["cfo"]) in kinds
    assert set(ORIGINAL_FAMILIES) == {
        "vendor_onboarding",
        "expense_report",
        "bug_escalation",
        "license_renewal",
        "handbook_update",
    }


def test_difficulty_zero_has_no_chaos_at_all():
    env = CompanyOSEnvironment()
    for seed in range(48):
        play(env, RandomAgent(seed), seed=seed, task_id=seed % len(FAMILY_NAMES), difficulty=0)
        events = [r.event for r in env.store.read(env.episode.id)]
        assert not any(isinstance(e, ChaosInjected | FaultInjected) for e in events)


def test_step_budgets_cover_the_worst_case():
    for family in FAMILY_NAMES:
        for difficulty in DIFFICULTIES:
            for seed in range(5):
                inst = build_instance(family, seed, difficulty)
                assert inst.max_steps >= inst.worst_case + profile(difficulty).min_fault_slack
                assert inst.fault_budget == inst.max_steps - inst.worst_case
                w = fold(build_episode(family, seed, difficulty))
                assert w.info.max_steps == inst.max_steps


def _fault_until_one_strikes(env, call) -> tuple[int, int]:
    """Repeat ``call`` until a transient fault strikes it: (clock before, clock after)."""
    while True:
        before = world(env).clock
        obs = call()
        if obs.error == "service_unavailable":
            return before, world(env).clock


def test_a_transient_fault_takes_no_time_and_no_rate_limit_quota():
    """Since companyos/4 a call that failed transiently never reached its service: the clock
    stands still and a rate-limited service does not count it, so a fault costs exactly the
    step of its retry wherever it strikes (what makes the step budget a bound)."""
    env = new_env("expense_report", difficulty=3, seed=11, max_steps=400)
    before, after = _fault_until_one_strikes(
        env, lambda: td(env, "get_ticket", ticket_id=main_ticket(env))
    )
    assert after == before
    obs = td(env, "get_ticket", ticket_id=main_ticket(env))
    assert "no time passed" not in obs.message  # a call that went through takes its 5 minutes
    w = world(env)
    limited = w._replace(
        services=w.services._replace(limits={"ticketdesk": (2, 60)}, calls={"ticketdesk": (5,)})
    )
    faulted = fold(
        [
            ToolCalled(step=w.step + 1, app="ticketdesk", method="get_ticket", params={}),
            FaultInjected(app="ticketdesk", method="get_ticket", kind="unavailable"),
        ],
        limited,
    )
    assert faulted.services.calls["ticketdesk"] == (5,)
    assert faulted.clock == limited.clock


def test_logs_of_an_older_generator_keep_the_clock_they_were_played_with():
    """Folding is versioned by the log: an episode recorded by companyos/3, when a fault took a
    step of the clock, replays with that clock (its events never change meaning)."""
    events = build_episode("expense_report", 11, 3, max_steps=400)
    started = events[0].model_copy(update={"generator": "companyos/3"})
    call = ToolCalled(step=1, app="ticketdesk", method="get_ticket", params={})
    fault = FaultInjected(app="ticketdesk", method="get_ticket", kind="unavailable")
    old = fold([started, *events[1:], call, fault])
    new = fold([*events, call, fault])
    assert not old.rules.untimed_faults and new.rules.untimed_faults
    assert (old.clock, new.clock) == (5, 0)


def test_nothing_happens_in_the_minute_a_fault_did_not_take():
    """A step whose call faulted transiently is the call and the fault, nothing else: approvers
    decide and deadlines pass at the retry, so no decision is ever later than the clock the
    agent is shown."""
    from companyos.agents.honest import HonestAgent

    env = CompanyOSEnvironment()
    faulted = 0
    for seed in range(40):
        play(env, HonestAgent(), seed=seed, task_id="expense_report", difficulty=3)
        step: list = []
        for r in env.store.read(env.episode.id):
            e = r.event
            if isinstance(e, ToolCalled):
                step = [e]
            elif e.type == "StepScored":
                kinds = [type(x).__name__ for x in step]
                if "FaultInjected" in kinds and step[-1].kind == "unavailable":
                    faulted += 1
                    assert kinds == ["ToolCalled", "FaultInjected"], kinds
            else:
                step.append(e)
        w = world(env)
        assert all(a.decided_at is None or a.decided_at <= w.clock for a in w.approvals.values())
    assert faulted > 0
