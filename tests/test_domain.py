"""Every tool, field rule and chaos mechanism of the original, with its names, and the chaos
dial from 0 (none at all) to 3 (2 being the original's probabilities)."""

from __future__ import annotations

import statistics

import pytest

from companyos.api import CompanyOSEnvironment
from companyos.domain import (
    DIFFICULTIES,
    SCENARIO_IDS,
    TOOLS,
    KeyedRNG,
    build_episode,
    fold,
    profile,
)
from companyos.domain.chaos import roll_fault
from companyos.events.types import ChaosInjected, FaultInjected

from .helpers import af, dh, poll_until_decided, td, update

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


def retry(fn, *args, **kw):
    """Call until no transient fault answers (faults are chaos, not the point here)."""
    for _ in range(10):
        obs = fn(*args, **kw)
        if obs.error != "service_unavailable":
            return obs
    raise AssertionError("faults never stopped")


def test_catalogue_matches_the_original_names():
    assert {k: list(t.params.model_fields) for k, t in TOOLS.items()} == ORIGINAL_TOOLS
    for t in TOOLS.values():
        assert t.description and t.parameters_schema()["additionalProperties"] is False
        assert t.faultable == (not t.method.startswith("list_"))


def test_ticket_fields_and_rules():
    env = new_env("bug_escalation", difficulty=0)
    ticket = retry(td, env, "get_ticket", ticket_id="tkt-3191").last_result
    assert set(ticket) >= {"priority", "assignee", "status", "verified", "linked_approval"}
    assert retry(update, env, "TKT-3191", "assignee", "Someone Else").error is None
    assert (
        retry(update, env, "TKT-3191", "status", "In Progress").last_result["ticket"]["status"]
        == "in_progress"
    )
    # Linking needs a verified ticket and an existing approval.
    assert (
        retry(update, env, "TKT-3191", "linked_approval", "APR-1001").error == "ticket_not_verified"
    )
    retry(update, env, "TKT-3191", "verified", "true")
    assert (
        retry(update, env, "TKT-3191", "linked_approval", "APR-1001").error == "approval_not_found"
    )
    # A blocked ticket cannot be closed directly; unblocked it can, and then it is read-only.
    retry(update, env, "TKT-3191", "status", "blocked")
    assert retry(update, env, "TKT-3191", "status", "closed").error == "blocked_ticket_close"
    retry(update, env, "TKT-3191", "status", "open")
    assert retry(update, env, "TKT-3191", "status", "closed").error is None
    assert retry(update, env, "TKT-3191", "priority", "low").error == "ticket_closed"


def test_search_and_list():
    env = new_env("vendor_onboarding", difficulty=0)
    hits = retry(td, env, "search_tickets", query="northwind vendor").last_result["tickets"]
    assert {t["ticket_id"] for t in hits} == {"TKT-1042", "TKT-1043"}
    assert len(td(env, "list_tickets").last_result["tickets"]) == 8
    names = {m["metric"] for m in dh(env, "list_metrics").last_result["metrics"]}
    assert names == {
        "vendor_compliance_score",
        "expense_amount",
        "auth_service_error_rate",
        "license_expiry_days",
        "hr_headcount",
    }


def test_stale_metric_then_refresh_crosses_threshold():
    env = new_env("vendor_onboarding", difficulty=2)
    q = retry(dh, env, "query_metric", metric_name="vendor_compliance_score").last_result
    assert set(q) == {
        "metric",
        "value",
        "unit",
        "stale_days",
        "source",
        "threshold_pass",
        "is_stale",
        "warning",
    }
    assert (q["value"], q["stale_days"], q["is_stale"], q["threshold_pass"]) == (
        72.0,
        4,
        True,
        False,
    )
    assert "refresh" in q["warning"]
    r = retry(dh, env, "refresh_data", metric_name="vendor compliance score").last_result
    assert (r["previous_value"], r["value"], r["is_stale"], r["threshold_pass"]) == (
        72.0,
        85.0,
        False,
        True,
    )
    head = retry(dh, env, "query_metric", metric_name="hr_headcount").last_result
    assert head["stale_days"] == 7 and head["is_stale"]


def test_out_of_office_approver_has_a_delegate():
    env = new_env("vendor_onboarding", difficulty=2)
    a = retry(dh, env, "get_approver", role="cfo").last_result
    assert a["approver"] == "Marcus Lee" and a["on_behalf_of"] == "Dana Whitfield"
    assert a["out_of_office"] is True
    assert retry(dh, env, "get_approver", role="CTO").last_result["approver"] == "Elena Petrova"
    assert retry(dh, env, "get_approver", role="HR Lead").last_result["approver"] == "Grace Kim"
    assert retry(dh, env, "get_approver", role="janitor").error == "role_not_found"


def test_approval_types():
    env = new_env("vendor_onboarding", difficulty=0)
    types = af(env, "list_approval_types").last_result["approval_types"]
    assert {k: v["required_role"] for k, v in types.items()} == {
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


def submit_vendor(env, approver="Marcus Lee", score=85.0, **extra):
    data = {"ticket_id": "TKT-1042", "vendor": "Northwind Analytics", "compliance_score": score}
    data.update(extra)
    return retry(
        af, env, "submit_approval", approval_type="vendor_onboarding", approver=approver, data=data
    )


def prepare_vendor(env):
    retry(update, env, "TKT-1042", "priority", "high")
    retry(update, env, "TKT-1042", "verified", True)


def test_approval_to_out_of_office_approver_stays_pending_with_auto_reply():
    env = new_env("vendor_onboarding", difficulty=2)
    prepare_vendor(env)
    retry(dh, env, "refresh_data", metric_name="vendor_compliance_score")
    aid = submit_vendor(env, approver="dana.whitfield@acme.example").last_result["approval_id"]
    for _ in range(5):
        obs = retry(af, env, "check_status", approval_id=aid)
        assert obs.last_result["status"] == "pending"
        assert "out of office" in obs.last_result["auto_reply"]
    esc = retry(af, env, "escalate", approval_id=aid, reason="stuck")
    assert esc.error == "not_rejected" and "delegate" in esc.message


@pytest.mark.parametrize(
    ("approver", "score", "refresh", "verify", "cause"),
    [
        ("Elena Petrova", 85.0, True, True, "wrong_approver"),
        ("Marcus Lee", 72.0, False, True, "data_mismatch"),
        ("Marcus Lee", 85.0, True, False, "ticket_unverified"),
    ],
)
def test_wrong_requests_are_rejected_with_the_reason(approver, score, refresh, verify, cause):
    env = new_env("vendor_onboarding", difficulty=2, seed=3)
    retry(update, env, "TKT-1042", "priority", "high")
    if verify:
        retry(update, env, "TKT-1042", "verified", True)
    if refresh:
        retry(dh, env, "refresh_data", metric_name="vendor_compliance_score")
    aid = submit_vendor(env, approver=approver, score=score).last_result["approval_id"]
    obs = poll_until_decided(env, aid)
    assert obs.last_result["status"] == "rejected"
    assert env.episode.world.approvals[aid].cause == cause
    assert obs.reward < -0.1  # the rejection penalty
    # Escalating does not fix a wrong request: it is rejected again.
    retry(af, env, "escalate", approval_id=aid, reason="please")
    assert poll_until_decided(env, aid).last_result["status"] == "rejected"


def test_submission_checks_required_keys():
    env = new_env("vendor_onboarding", difficulty=0)
    obs = af(
        env,
        "submit_approval",
        approval_type="vendor_onboarding",
        approver="Dana Whitfield",
        data={"ticket_id": "TKT-1042"},
    )
    assert obs.error == "missing_data" and "compliance_score" in obs.message
    obs = af(env, "submit_approval", approval_type="holiday", approver="Dana Whitfield", data={})
    assert obs.error == "unknown_approval_type"
    obs = af(
        env,
        "submit_approval",
        approval_type="vendor_onboarding",
        approver="Nobody",
        data={"ticket_id": "TKT-1042", "vendor": "x", "compliance_score": 1},
    )
    assert obs.error == "unknown_approver" and "get_approver" in obs.message


def test_polls_rejections_and_escalation_at_the_original_level():
    polls, rejected, recovered = [], 0, 0
    for seed in range(150):
        env = new_env("vendor_onboarding", difficulty=2, seed=seed, max_steps=200)
        prepare_vendor(env)
        retry(dh, env, "refresh_data", metric_name="vendor_compliance_score")
        aid = submit_vendor(env).last_result["approval_id"]
        n = 0
        while True:
            obs = af(env, "check_status", approval_id=aid)
            if obs.error == "service_unavailable":
                continue
            n += 1
            if obs.last_result["status"] != "pending":
                break
        polls.append(n)
        if obs.last_result["status"] == "rejected":
            rejected += 1
            assert obs.last_result["reason"]
            retry(af, env, "escalate", approval_id=aid, reason="Budget approved by finance.")
            final = poll_until_decided(env, aid)
            while final.last_result["status"] == "rejected":  # chance again, within the cap
                retry(af, env, "escalate", approval_id=aid, reason="again")
                final = poll_until_decided(env, aid)
            recovered += final.last_result["status"] == "approved"
    assert set(polls) == {1, 2, 3}
    assert 0.12 <= rejected / 150 <= 0.30
    assert recovered == rejected


def test_transient_faults_spare_list_calls_and_respect_the_rate():
    for seed in range(20):
        env = new_env("expense_report", difficulty=3, seed=seed, max_steps=100)
        for method in ("list_tickets", "list_metrics", "list_approval_types", "list_approvals"):
            app = (
                "ticketdesk"
                if method == "list_tickets"
                else ("datahub" if method == "list_metrics" else "approvalflow")
            )
            assert env.step({"app": app, "method": method}).error is None
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
        budget = env.episode.world.info.fault_budget
        faults = 0
        while not env.episode.world.ended:
            faults += td(env, "get_ticket", ticket_id="TKT-4410").error == "service_unavailable"
        assert faults <= budget
        binding += faults == budget
    assert binding > 0


def chaos_of(scenario: str, difficulty: int, seed: int) -> set[tuple[str, str]]:
    events = build_episode(scenario, seed, difficulty)
    return {(e.kind, e.target) for e in events if isinstance(e, ChaosInjected)}


def test_chaos_dial():
    original = {
        ("missing_field", "TKT-1042"),
        ("blocked_ticket", "TKT-3191"),
        ("missing_field", "TKT-3191"),
        ("missing_field", "TKT-5120"),
        ("stale_metric", "vendor_compliance_score"),
        ("stale_metric", "hr_headcount"),
        ("out_of_office", "u-dana"),
    }
    for scenario in SCENARIO_IDS:
        d1 = set()
        for seed in range(30):
            assert chaos_of(scenario, 0, seed) == set()
            assert chaos_of(scenario, 2, seed) == original
            assert chaos_of(scenario, 3, seed) >= original
            d1 |= chaos_of(scenario, 1, seed)
            assert chaos_of(scenario, 1, seed) <= original
        assert d1 == original
    # Difficulty 3 adds chaos on what the task needs: its metric stale, its approver away.
    assert chaos_of("bug_escalation", 3, 0) - original == {
        ("stale_metric", "auth_service_error_rate"),
        ("out_of_office", "u-elena"),
    }
    assert profile(2).fault_rate == 0.10 and profile(2).rejection_rate == 0.20
    assert profile(2).polls == (1, 3)


def test_difficulty_zero_has_no_chaos_at_all():
    from companyos.agents import RandomAgent, play

    env = CompanyOSEnvironment()
    for seed in range(60):
        play(env, RandomAgent(seed), seed=seed, difficulty=0)
        events = [r.event for r in env.store.read(env.episode.id)]
        assert not any(isinstance(e, ChaosInjected | FaultInjected) for e in events)


def test_step_budgets():
    for scenario, steps in zip(SCENARIO_IDS, (20, 18, 18, 16, 16), strict=True):
        for difficulty in DIFFICULTIES:
            w = fold(build_episode(scenario, 0, difficulty))
            assert w.info.max_steps >= steps
            if difficulty <= 2:
                assert w.info.max_steps == steps
    mean = statistics.mean(fold(build_episode(s, 0, 2)).info.fault_budget for s in SCENARIO_IDS)
    assert mean >= 2
