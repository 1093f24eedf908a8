"""The original CompanyOS's own hard-coded clients, re-expressed (behaviour, not code) so that
tests and benchmarks can play them against the compatibility surface (`/original`) exactly as
they played the original: flat calls, the original's observation and `info`.

- `RANDOM_ACTIONS` / `random_baseline`: its random baseline (training/random_baseline.py):
  a uniform choice among 27 fixed calls, episodes played until ``done``, the return summed
  from the step rewards and success read from the last ``info``.
- `ReadmeTrace`: the vendor-onboarding trace of its README, as a policy (a failed call is
  made again, the request is polled until decided, a rejection is escalated).
- `NotebookExpert`: the scripted expert of its training notebook, which reads the progress
  flags from the observation (so it plays on the curriculum mount) and the ids it needs from
  the last result.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import requests

Action = dict[str, Any]


def _call(app: str, method: str, **params: Any) -> Action:
    return {"app": app, "method": method, "params": params}


ACME = {"vendor_name": "ACME", "compliance_score": 85}
RANDOM_ACTIONS: tuple[Action, ...] = (
    _call("ticketdesk", "list_tickets"),
    *(_call("ticketdesk", "search_tickets", query=q) for q in ("vendor", "expense", "bug")),
    *(_call("ticketdesk", "get_ticket", ticket_id=t) for t in ("T-001", "T-002", "T-003")),
    _call("ticketdesk", "update_ticket", ticket_id="T-001", field="priority", value="high"),
    _call("ticketdesk", "update_ticket", ticket_id="T-001", field="verified", value=True),
    _call("ticketdesk", "update_ticket", ticket_id="T-003", field="status", value="open"),
    _call("ticketdesk", "update_ticket", ticket_id="T-003", field="assignee", value="mike.ross"),
    _call("datahub", "list_metrics"),
    *(
        _call("datahub", "query_metric", metric_name=m)
        for m in ("vendor_compliance_score", "expense_report_447_amount", "auth_service_error_rate")
    ),
    _call("datahub", "refresh_data", metric_name="vendor_compliance_score"),
    *(_call("datahub", "get_approver", role=r) for r in ("CFO", "CFO_DELEGATE", "CTO")),
    _call("approvalflow", "list_approval_types"),
    _call(
        "approvalflow",
        "submit_approval",
        approval_type="vendor_onboarding",
        approver="david.kim",
        data=ACME,
    ),
    _call(
        "approvalflow",
        "submit_approval",
        approval_type="expense_report",
        approver="david.kim",
        data={"amount": 4350, "employee_id": "john.doe", "report_id": "447"},
    ),
    _call("approvalflow", "check_status", approval_id="APR-001"),
    _call("approvalflow", "list_approvals"),
    # the baseline's deliberate mistakes
    _call(
        "ticketdesk", "update_ticket", ticket_id="T-001", field="linked_approval", value="APR-001"
    ),
    _call("ticketdesk", "update_ticket", ticket_id="T-003", field="status", value="closed"),
    _call(
        "approvalflow",
        "submit_approval",
        approval_type="vendor_onboarding",
        approver="sarah.chen",
        data=ACME,
    ),
)


@dataclass
class BaselineRun:
    rewards: list[float] = field(default_factory=list)
    successes: list[bool] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    info_totals: list[float] = field(default_factory=list)

    @property
    def mean_reward(self) -> float:
        return sum(self.rewards) / len(self.rewards)

    @property
    def success_rate(self) -> float:
        return sum(self.successes) / len(self.successes)


def random_baseline(
    base_url: str,
    episodes: int,
    rng: random.Random,
    task_id: str | None = None,
    session: Any = requests,
) -> Iterator[tuple[int, BaselineRun]]:
    """The original's remote random baseline against ``base_url`` (the original's base URL,
    or ours with `/original`): yields after each episode, so callers can show progress."""
    run = BaselineRun()
    for ep in range(episodes):
        body = {"task_id": task_id} if task_id else {}
        session.post(f"{base_url}/reset", json=body, timeout=30).raise_for_status()
        done, total, info = False, 0.0, {}
        while not done:
            r = session.post(f"{base_url}/step", json=rng.choice(RANDOM_ACTIONS), timeout=30)
            r.raise_for_status()
            out = r.json()
            total += out["reward"]
            done, info = out["done"], out["info"]
        run.rewards.append(total)
        run.successes.append(bool(info.get("success", False)))
        run.steps.append(int(info.get("step", 0)))
        run.info_totals.append(float(info.get("total_reward", 0.0)))
        yield ep + 1, run


README_TRACE: tuple[Action, ...] = (
    _call("ticketdesk", "get_ticket", ticket_id="T-001"),
    _call("ticketdesk", "update_ticket", ticket_id="T-001", field="priority", value="high"),
    _call("ticketdesk", "update_ticket", ticket_id="T-001", field="verified", value=True),
    _call("datahub", "query_metric", metric_name="vendor_compliance_score"),
    _call("datahub", "refresh_data", metric_name="vendor_compliance_score"),
    _call("datahub", "query_metric", metric_name="vendor_compliance_score"),
    _call("datahub", "get_approver", role="CFO"),
    _call(
        "approvalflow",
        "submit_approval",
        approval_type="vendor_onboarding",
        approver="david.kim",
        data=ACME,
    ),
)


class ReadmeTrace:
    """The README's trace (steps 1-8), then status checks of APR-001 until it is decided;
    a call that fails is made again, a rejection is escalated. ``act`` gets the last result
    (None before the first call)."""

    def __init__(self) -> None:
        self.done = 0
        self.started = False

    def act(self, last_result: dict[str, Any] | None) -> Action:
        last = last_result or {}
        if self.started and self.done < len(README_TRACE) and "error" not in last:
            self.done += 1
        self.started = True
        if self.done < len(README_TRACE):
            return README_TRACE[self.done]
        if last.get("status") == "rejected":
            return _call(
                "approvalflow", "escalate", approval_id="APR-001", reason="Vendor deadline today."
            )
        return _call("approvalflow", "check_status", approval_id="APR-001")


# The notebook's expert knew each task by a word of its text, and what to send for it.
PROFILES: dict[str, dict[str, Any]] = {
    "vendor onboarding": {
        "ticket": "T-001",
        "metric": "vendor_compliance_score",
        "type": "vendor_onboarding",
        "role": "CFO_DELEGATE",
        "data": ACME,
    },
    "expense report": {
        "ticket": "T-002",
        "metric": "expense_report_447_amount",
        "type": "expense_report",
        "role": "CFO_DELEGATE",
        "data": {"amount": 4350.0, "employee_id": "john.doe", "report_id": "447"},
    },
    "bug": {
        "ticket": "T-003",
        "metric": "auth_service_error_rate",
        "type": "bug_escalation",
        "role": "CTO",
        "data": {"ticket_id": "T-003", "error_rate": 18.5},
    },
    "license": {
        "ticket": "T-004",
        "metric": "software_license_expiry_days",
        "type": "license_renewal",
        "role": "PROCUREMENT",
        "data": {"license_name": "Q3 Software License", "expiry_days": 12},
    },
    "handbook": {
        "ticket": "T-005",
        "metric": "employee_count_hr_dept",
        "type": "handbook_update",
        "role": "HR_LEAD",
        "data": {"section": "4", "change_summary": "Policy update for section 4"},
    },
}
APPROVERS = {
    "CFO_DELEGATE": "david.kim",
    "CTO": "mike.ross",
    "HR_LEAD": "priya.nair",
    "PROCUREMENT": "tom.baker",
}


class NotebookExpert:
    """The notebook's expert: the first unmet progress flag (in a fixed order) says what to
    do; after a lookup it submits to the name it knows; it polls the id of the last result,
    or lists approvals when it has none. It never escalates."""

    @staticmethod
    def act(obs: dict[str, Any]) -> Action:
        text = obs["task"].lower()
        p = next((v for k, v in PROFILES.items() if k in text), PROFILES["vendor onboarding"])
        progress = obs["progress"]
        last = obs.get("last_result") or {}
        tid = p["ticket"]

        def todo(flag: str) -> bool:
            return flag in progress and not progress[flag]

        fixes = (
            ("ticket_verified", "verified", True),
            ("ticket_priority_set", "priority", "high"),
            ("ticket_unblocked", "status", "open"),
            ("ticket_assignee_set", "assignee", "engineering-team"),
        )
        for flag, name, value in fixes:
            if todo(flag):
                return _call("ticketdesk", "update_ticket", ticket_id=tid, field=name, value=value)
        if todo("metric_refreshed"):
            return _call("datahub", "refresh_data", metric_name=p["metric"])
        if todo("metric_queried"):
            return _call("datahub", "query_metric", metric_name=p["metric"])
        if todo("approval_submitted"):
            if last.get("approver"):
                return _call(
                    "approvalflow",
                    "submit_approval",
                    approval_type=p["type"],
                    approver=APPROVERS.get(p["role"], "david.kim"),
                    data=p["data"],
                )
            return _call("datahub", "get_approver", role=p["role"])
        if todo("approval_approved"):
            if last.get("approval_id"):
                return _call("approvalflow", "check_status", approval_id=last["approval_id"])
            return _call("approvalflow", "list_approvals")
        return _call("ticketdesk", "list_tickets")
