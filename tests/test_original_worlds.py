"""The original CompanyOS's fixed worlds (`domain.original`), in-process: its five tasks under
its own ids, the same world whatever the seed, the seed deciding only chance; its app
conventions; its per-action reward (`projections.original`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from companyos.api import CompanyOSEnvironment
from companyos.api.verify import verify_episode
from companyos.domain import build_episode
from companyos.domain.original import TASK_IDS, TASKS
from companyos.events.types import EpisodeStarted, TaskAssigned
from companyos.projections import cached_rewards, replay
from companyos.projections.original import flags

BUDGETS = {
    "task_vendor_onboarding": 20,
    "task_expense_report": 18,
    "task_bug_escalation": 18,
    "task_license_renewal": 16,
    "task_handbook_update": 16,
}


def play(env: CompanyOSEnvironment, app: str, method: str, **params: object):
    return env.step({"app": app, "method": method, "params": params})


def calm(seed: int = 0, task: str = "task_vendor_onboarding") -> CompanyOSEnvironment:
    """An original world with no chance at all (difficulty 0): its fixed set-up only."""
    env = CompanyOSEnvironment(reward_profile="original_per_action")
    env.reset(seed=seed, task_id=task, difficulty=0)
    return env


def test_the_five_task_ids_and_budgets_are_the_originals():
    assert tuple(BUDGETS) == TASK_IDS
    env = CompanyOSEnvironment()
    for task, budget in BUDGETS.items():
        obs = env.reset(seed=1, task_id=task)
        assert obs.task_id == task and obs.max_steps == budget and obs.difficulty == 2
        assert obs.task == TASKS[task].text


@given(st.integers(0, 2**40), st.integers(0, 2**40), st.sampled_from(TASK_IDS))
def test_the_seed_decides_nothing_of_the_world(a, b, task):
    """Two seeds give the same opening events but for the seed itself."""

    def world(seed: int) -> list[dict]:
        out = []
        for e in build_episode(task, seed, 2):
            data = e.model_dump(mode="json")
            if isinstance(e, EpisodeStarted):
                data.pop("seed")
            if isinstance(e, TaskAssigned):
                data.pop("instance_id")
            out.append(data)
        return out

    assert world(a) == world(b)


def test_the_fixed_world_as_the_original_had_it():
    env = calm()
    t1 = play(env, "ticketdesk", "get_ticket", ticket_id="T-001").last_result
    assert t1["title"] == "Onboard vendor ACME Corp"
    assert (t1["priority"], t1["assignee"]) == (None, "unknown")
    t3 = play(env, "ticketdesk", "get_ticket", ticket_id="T-003").last_result
    assert (t3["status"], t3["assignee"], t3["priority"]) == ("blocked", None, "critical")
    t5 = play(env, "ticketdesk", "get_ticket", ticket_id="T-005").last_result
    assert t5["priority"] is None and t5["assignee"] == "hr.team"
    m = play(env, "datahub", "query_metric", metric_name="vendor_compliance_score").last_result
    assert (m["value"], m["stale_days"], m["is_stale"]) == (72.0, 4, True)
    play(env, "datahub", "refresh_data", metric_name="vendor_compliance_score")
    m = play(env, "datahub", "query_metric", metric_name="vendor_compliance_score").last_result
    assert (m["value"], m["is_stale"], m["threshold_pass"]) == (85.0, False, True)
    hc = play(env, "datahub", "query_metric", metric_name="employee_count_hr_dept").last_result
    assert (hc["value"], hc["stale_days"]) == (24.0, 7)
    lic = play(env, "datahub", "query_metric", metric_name="software_license_expiry_days")
    assert (lic.last_result["value"], lic.last_result["is_stale"]) == (12.0, False)
    cfo = play(env, "datahub", "get_approver", role="CFO").last_result
    assert cfo["approver"] == "David Kim" and cfo["out_of_office"] and cfo["on_behalf_of"]
    deputy = play(env, "datahub", "get_approver", role="CFO_DELEGATE").last_result
    assert deputy["approver"] == "David Kim"
    assert play(env, "datahub", "get_approver", role="JANITOR").error == "role_not_found"
    types = play(env, "approvalflow", "list_approval_types").last_result["approval_types"]
    assert types["vendor_onboarding"]["required_data"] == ["vendor_name", "compliance_score"]
    assert types["expense_report"]["required_data"] == ["amount", "employee_id", "report_id"]


def test_the_originals_app_rules():
    """Requests numbered APR-001..., refused when addressed to someone away, decided at a
    status check (never by the clock), an escalation decided at the next check; closed tickets
    can be reopened and an approval linked without checking it exists."""
    env = calm()
    away = play(
        env, "approvalflow", "submit_approval", approval_type="vendor_onboarding",
        approver="sarah.chen", data={"vendor_name": "ACME", "compliance_score": 85},
    )  # fmt: skip
    assert away.error == "approver_out_of_office" and "OOO" in away.last_result["message"]
    first = play(
        env, "approvalflow", "submit_approval", approval_type="expense_report",
        approver="david.kim", data={"amount": 4350, "employee_id": "john.doe", "report_id": "447"},
    )  # fmt: skip
    assert first.last_result["approval_id"] == "APR-001"
    for _ in range(3):  # the clock alone decides nothing
        play(env, "ticketdesk", "list_tickets")
    assert env.episode.world.approvals["APR-001"].status == "pending"
    decided = play(env, "approvalflow", "check_status", approval_id="APR-001")
    assert decided.last_result["status"] == "approved"  # difficulty 0: the first check decides
    assert play(env, "ticketdesk", "update_ticket", ticket_id="T-002", field="status",
                value="closed").error is None  # fmt: skip
    assert play(env, "ticketdesk", "update_ticket", ticket_id="T-002", field="status",
                value="open").error is None  # fmt: skip
    play(env, "ticketdesk", "update_ticket", ticket_id="T-002", field="verified", value=True)
    linked = play(env, "ticketdesk", "update_ticket", ticket_id="T-002", field="linked_approval",
                  value="APR-077")  # fmt: skip
    assert linked.error is None


def test_latency_counts_status_checks_and_escalation_decides_at_the_next():
    """At the original's chaos level an approver takes 1-3 checks; a chance rejection is
    escalated and decided at the very next check. Found by seed, then checked exactly."""
    found = set()
    for seed in range(200):
        env = CompanyOSEnvironment()
        env.reset(seed=seed, task_id="task_expense_report")
        r = play(env, "approvalflow", "submit_approval", approval_type="expense_report",
                 approver="david.kim",
                 data={"amount": 4350, "employee_id": "john.doe", "report_id": "447"})  # fmt: skip
        if r.error:
            continue
        checks = 0
        while env.episode.world.approvals["APR-001"].status == "pending" and checks < 10:
            if play(env, "approvalflow", "check_status", approval_id="APR-001").error is None:
                checks += 1
        a = env.episode.world.approvals["APR-001"]
        found.add(checks)
        if a.status == "rejected" and a.cause == "chance":
            if play(env, "approvalflow", "escalate", approval_id="APR-001", reason="x").error:
                continue
            assert env.episode.world.approvals["APR-001"].status == "pending"
            while (obs := play(env, "approvalflow", "check_status", approval_id="APR-001")).error:
                pass
            assert obs.last_result["status"] in ("approved", "rejected")
            found.add("escalated")
    assert found >= {1, 2, 3, "escalated"}
    assert max(x for x in found if isinstance(x, int)) == 3


def test_per_action_reward_pays_each_call_as_the_original_did():
    """-0.1 a step; +1.0 a priority, every time; +1.5 verify; a stale read 0, a fresh one
    +0.5; refresh +1.0; unknown tool -1.4 in all; a refused request -0.4; an accepted one
    +1.9; an approved check +2.9 (+15 on success)."""
    env = calm()
    rewards = [
        play(env, "ticketdesk", "update_ticket", ticket_id="T-001", field="priority", value="high"),
        play(env, "ticketdesk", "update_ticket", ticket_id="T-001", field="priority", value="high"),
        play(env, "ticketdesk", "update_ticket", ticket_id="T-001", field="verified", value=True),
        play(env, "datahub", "query_metric", metric_name="vendor_compliance_score"),
        play(env, "datahub", "refresh_data", metric_name="vendor_compliance_score"),
        play(env, "datahub", "query_metric", metric_name="vendor_compliance_score"),
        play(env, "ticketdesk", "close_ticket", ticket_id="T-001"),
        play(env, "approvalflow", "submit_approval", approval_type="vendor_onboarding",
             approver="sarah.chen", data={"vendor_name": "ACME", "compliance_score": 85}),
        play(env, "approvalflow", "submit_approval", approval_type="vendor_onboarding",
             approver="david.kim", data={"vendor_name": "ACME", "compliance_score": 85}),
        play(env, "approvalflow", "check_status", approval_id="APR-001"),
    ]  # fmt: skip
    assert [round(o.reward, 3) for o in rewards] == [
        0.9, 0.9, 1.4, -0.1, 0.9, 0.4, -1.4, -0.4, 1.9, 17.9,
    ]  # fmt: skip
    assert rewards[-1].outcome == "success"
    records = env.store.read(env.episode.id)
    assert replay(records).total == pytest.approx(sum(o.reward for o in rewards))
    assert cached_rewards(records) == [o.reward for o in rewards]
    assert verify_episode(env.store, env.episode.id).ok


def test_grading_is_strict_where_the_original_was_not():
    """The original credited any approved request; here a request of another type is
    collateral damage and never a success, and flags hold only while their fact does."""
    env = calm()
    play(env, "ticketdesk", "update_ticket", ticket_id="T-001", field="priority", value="high")
    play(env, "ticketdesk", "update_ticket", ticket_id="T-001", field="verified", value=True)
    play(env, "datahub", "refresh_data", metric_name="vendor_compliance_score")
    play(env, "approvalflow", "submit_approval", approval_type="expense_report",
         approver="david.kim",
         data={"amount": 4350, "employee_id": "john.doe", "report_id": "447"})  # fmt: skip
    obs = play(env, "approvalflow", "check_status", approval_id="APR-001")
    assert obs.last_result["status"] == "approved" and not obs.done
    f = flags(env.episode.world)
    assert f["ticket_verified"] and f["metric_refreshed"] and not f["approval_approved"]
    play(env, "ticketdesk", "update_ticket", ticket_id="T-001", field="verified", value=False)
    assert not flags(env.episode.world)["ticket_verified"]


@pytest.mark.parametrize("task", TASK_IDS)
def test_every_original_task_is_solvable_at_every_difficulty(task):
    from companyos.agents import in_process_oracle

    for difficulty in range(4):
        env = CompanyOSEnvironment()
        for seed in range(3):
            obs = env.reset(seed=seed, task_id=task, difficulty=difficulty)
            oracle = in_process_oracle(env)
            oracle.reset(obs)
            while not obs.done:
                obs = env.step(oracle.act(obs))
            assert obs.outcome == "success", (task, difficulty, seed)


# What each original task's request must be about, and a request about something else.
OTHER_OBJECT = {
    "task_vendor_onboarding": ("vendor_onboarding", {"vendor_name": "Globex Corporation"}),
    "task_expense_report": ("expense_report", {"employee_id": "jane.roe", "report_id": "999"}),
    "task_license_renewal": ("license_renewal", {"license_name": "Q4 design suite licence"}),
    "task_handbook_update": ("handbook_update", {"section": "9", "change_summary": "x"}),
}


@pytest.mark.parametrize("task", sorted(OTHER_OBJECT))
def test_a_request_about_another_object_is_damage_and_never_success(task):
    """The original checked only that a request's data had the right keys: onboarding another
    vendor, another employee's report, another licence or another handbook section passed.
    Here what a request is about must be what the task names: otherwise it is collateral
    damage (an `:object` item) and the task is not done, though the request is approved."""
    from companyos.agents import in_process_oracle

    env = CompanyOSEnvironment()
    obs = env.reset(seed=3, task_id=task, difficulty=0)
    oracle = in_process_oracle(env)
    oracle.reset(obs)
    approval_type, other = OTHER_OBJECT[task]
    while True:
        action = oracle.act(obs)
        if action["method"] == "submit_approval":
            action["params"]["data"] = {**action["params"]["data"], **other}
            obs = env.step(action)
            break
        obs = env.step(action)
    aid = obs.last_result["approval_id"]
    while not obs.done and env.episode.world.approvals[aid].status == "pending":
        obs = play(env, "approvalflow", "check_status", approval_id=aid)
    assert env.episode.world.approvals[aid].status == "approved"
    assert f"{aid}:{approval_type}:object" in env.state.collateral
    assert env.state.outcome != "success"


@pytest.mark.parametrize("task", TASK_IDS)
def test_every_requirement_of_an_original_goal_is_in_its_text(task):
    """The original graded a priority its vendor-onboarding text never asked for, an assignee
    its bug text never asked for, and a verified ticket its licence text never named. Each
    task's text now says what its goal checks."""
    text = TASKS[task].text.lower()
    for tg in TASKS[task].goal.tickets:
        if "priority" in tg.fields:
            assert "priority" in text
        if "assignee" in tg.fields:
            assert "assign" in text
        if tg.verify:
            assert "verify" in text
        if tg.unblock:
            assert "unblock" in text


def test_a_curriculum_of_an_original_task_is_in_its_log():
    env = CompanyOSEnvironment()
    obs = env.reset(seed=1, task_id="task_expense_report", show_progress=True)
    assert obs.progress and env.store.read(obs.episode_id)[0].event.show_progress is True
