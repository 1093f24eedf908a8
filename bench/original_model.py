"""A model of the original CompanyOS's step, for the benchmarks' reference: the same three
apps as mutable dicts, the same chance (module-level `random`, a 10% transient failure on most
calls, 1-3 status checks before a decision, 80% approval), the same per-action reward, progress
flags and observation dict, on its vendor-onboarding world.

Written here from the original's documented behaviour (not copied from it), so that `make
bench` measures the ratio in the same run without the original installed. It does what the
original's `step` does and nothing more: route the call, mutate a dict, append to an action log,
deep-copy what a read returns, score the call, update the flags, build the observation and the
`info` dict. It keeps no log, hashes nothing and cannot replay: that is the point of comparison.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

NOISE = 0.1
STALE_AFTER_DAYS = 2
Result = dict[str, Any]

TICKETS: tuple[dict[str, Any], ...] = (
    {"id": "T-001", "title": "Onboard vendor ACME Corp", "status": "open", "priority": None,
     "assignee": "unknown", "tags": ["vendor", "compliance"]},
    {"id": "T-002", "title": "Process expense report #447", "status": "open", "priority": "high",
     "assignee": "john.doe", "tags": ["finance", "expense"]},
    {"id": "T-003", "title": "Escalate critical bug in auth service", "status": "blocked",
     "priority": "critical", "assignee": None, "tags": ["engineering", "bug"]},
    {"id": "T-004", "title": "Renew software license for Q3", "status": "open",
     "priority": "medium", "assignee": "jane.smith", "tags": ["procurement", "license"]},
    {"id": "T-005", "title": "Update employee handbook section 4", "status": "open",
     "priority": None, "assignee": "hr.team", "tags": ["hr", "documentation"]},
)  # fmt: skip
METRICS: dict[str, dict[str, Any]] = {
    "vendor_compliance_score": {"value": 72, "unit": "percent", "stale_days": 4,
                                "source": "compliance_db", "threshold_pass": 80},
    "expense_report_447_amount": {"value": 4350.0, "unit": "USD", "stale_days": 0,
                                  "source": "finance_system", "threshold_pass": None},
    "auth_service_error_rate": {"value": 18.5, "unit": "percent", "stale_days": 0,
                                "source": "monitoring", "threshold_pass": 5},
    "software_license_expiry_days": {"value": 12, "unit": "days", "stale_days": 1,
                                     "source": "procurement_db", "threshold_pass": None},
    "employee_count_hr_dept": {"value": 24, "unit": "headcount", "stale_days": 7,
                               "source": "hr_system", "threshold_pass": None},
}  # fmt: skip
REFRESHED = {"vendor_compliance_score": 85, "employee_count_hr_dept": 31}
DIRECTORY = {
    "CFO": "sarah.chen",
    "CTO": "mike.ross",
    "HR_LEAD": "priya.nair",
    "PROCUREMENT": "tom.baker",
    "CFO_DELEGATE": "david.kim",
}
APPROVAL_TYPES = {
    "vendor_onboarding": ("CFO", ("vendor_name", "compliance_score")),
    "expense_report": ("CFO", ("amount", "employee_id", "report_id")),
    "bug_escalation": ("CTO", ("ticket_id", "error_rate")),
    "license_renewal": ("PROCUREMENT", ("license_name", "expiry_days")),
    "handbook_update": ("HR_LEAD", ("section", "change_summary")),
}
REASONS = (
    "Insufficient supporting data.",
    "Budget threshold exceeded.",
    "Policy violation detected.",
)
TASK = {
    "text": "Complete vendor onboarding for ACME Corp. Verify the ticket, check compliance "
    "data, and submit CFO approval.",
    "ticket": "T-001",
    "flags": (
        "ticket_verified",
        "ticket_priority_set",
        "metric_refreshed",
        "approval_submitted",
        "approval_approved",
    ),
    "max_steps": 20,
}
MANIFEST = {
    "ticketdesk": ["list_tickets", "search_tickets(query)", "get_ticket(ticket_id)",
                   "update_ticket(ticket_id, field, value)"],
    "datahub": ["list_metrics", "query_metric(metric_name)", "refresh_data(metric_name)",
                "get_approver(role)"],
    "approvalflow": ["list_approval_types", "submit_approval(approval_type, approver, data)",
                     "check_status(approval_id)", "escalate(approval_id, reason)",
                     "list_approvals"],
}  # fmt: skip


def _failed() -> bool:
    return random.random() < NOISE


class Apps:
    """The three apps' state: plain dicts, mutated in place."""

    def __init__(self) -> None:
        self.tickets: dict[str, dict[str, Any]] = {}
        self.metrics: dict[str, dict[str, Any]] = {}
        self.approvals: dict[str, dict[str, Any]] = {}
        self.log: list[dict[str, Any]] = []

    def reset(self) -> None:
        self.tickets = {
            t["id"]: {**copy.deepcopy(t), "linked_approval": None, "verified": False}
            for t in TICKETS
        }
        self.metrics = copy.deepcopy(METRICS)
        self.approvals = {}
        self.log = []

    def _note(self, app: str, method: str, args: dict[str, Any], out: Any) -> None:
        self.log.append({"app": app, "method": method, "args": args, "result": out})

    # TicketDesk
    def list_tickets(self) -> Result:
        self._note("TicketDesk", "list_tickets", {}, len(self.tickets))
        return {
            "tickets": [
                {"id": t["id"], "title": t["title"], "status": t["status"]}
                for t in self.tickets.values()
            ]
        }

    def get_ticket(self, ticket_id: str) -> Result:
        if _failed():
            return {"error": "TicketDesk read error. Retry."}
        t = self.tickets.get(ticket_id)
        if t is None:
            return {"error": f"Ticket {ticket_id} not found."}
        self._note("TicketDesk", "get_ticket", {"ticket_id": ticket_id}, "ok")
        return {"ticket": copy.deepcopy(t)}

    def update_ticket(self, ticket_id: str, field: str, value: Any) -> Result:
        if _failed():
            return {"error": "Permission denied. Try again."}
        t = self.tickets.get(ticket_id)
        if t is None:
            return {"error": f"Ticket {ticket_id} not found."}
        if field == "linked_approval" and not t["verified"]:
            return {"error": "Cannot link approval: ticket must be verified first."}
        if field == "status" and value == "closed" and t["status"] == "blocked":
            return {"error": "Cannot close a blocked ticket."}
        if field not in ("priority", "assignee", "status", "verified", "linked_approval"):
            return {"error": f"Field '{field}' not editable."}
        t[field] = value
        args = {"ticket_id": ticket_id, "field": field, "value": value}
        self._note("TicketDesk", "update_ticket", args, "ok")
        return {"success": True, "ticket_id": ticket_id, "updated": {field: value}}

    # DataHub
    def query_metric(self, metric_name: str) -> Result:
        if _failed():
            return {"error": "DataHub query timeout. Retry."}
        m = self.metrics.get(metric_name)
        if m is None:
            return {"error": f"Metric '{metric_name}' not found."}
        out = copy.deepcopy(m)
        out["metric_name"] = metric_name
        out["is_stale"] = m["stale_days"] > STALE_AFTER_DAYS
        if out["is_stale"]:
            out["warning"] = f"Data is {m['stale_days']} days old: refresh {metric_name}."
        self._note("DataHub", "query_metric", {"metric_name": metric_name}, out["value"])
        return out

    def refresh_data(self, metric_name: str) -> Result:
        if _failed():
            return {"error": "Refresh pipeline busy. Retry."}
        m = self.metrics.get(metric_name)
        if m is None:
            return {"error": f"Metric '{metric_name}' not found."}
        was_stale = m["stale_days"] > STALE_AFTER_DAYS
        m["stale_days"] = 0
        if metric_name in REFRESHED:
            m["value"] = REFRESHED[metric_name]
        self._note("DataHub", "refresh_data", {"metric_name": metric_name}, "refreshed")
        return {"success": True, "metric_name": metric_name, "was_stale": was_stale}

    def get_approver(self, role: str) -> Result:
        if _failed():
            return {"error": "DataHub read error. Retry."}
        key = role.upper()
        who = DIRECTORY.get(key)
        if who is None:
            return {"error": f"No approver for role '{role}'."}
        out: Result = {"role": key, "approver": who}
        if key == "CFO":
            out["warning"] = "CFO is OOO. Use CFO_DELEGATE instead."
            out["delegate"] = DIRECTORY["CFO_DELEGATE"]
        self._note("DataHub", "get_approver", {"role": role}, who)
        return out

    # ApprovalFlow
    def submit_approval(self, approval_type: str, approver: str, data: dict[str, Any]) -> Result:
        if _failed():
            return {"error": "ApprovalFlow service unavailable. Retry."}
        spec = APPROVAL_TYPES.get(approval_type)
        if spec is None:
            return {"error": f"Unknown approval type '{approval_type}'."}
        missing = [k for k in spec[1] if k not in data]
        if missing:
            return {"error": f"Missing required data fields: {missing}"}
        if spec[0] == "CFO" and approver == "sarah.chen":
            return {"error": "Approver sarah.chen (CFO) is OOO."}
        aid = f"APR-{len(self.approvals) + 1:03d}"
        self.approvals[aid] = {
            "id": aid,
            "type": approval_type,
            "approver": approver,
            "data": copy.deepcopy(data),
            "status": "pending",
            "polls_left": random.randint(1, 3),
            "reason": None,
        }
        self._note("ApprovalFlow", "submit_approval", {"type": approval_type}, aid)
        return {"success": True, "approval_id": aid}

    def check_status(self, approval_id: str) -> Result:
        if _failed():
            return {"error": "ApprovalFlow read timeout. Retry."}
        a = self.approvals.get(approval_id)
        if a is None:
            return {"error": f"Approval {approval_id} not found."}
        if a["status"] == "pending":
            a["polls_left"] -= 1
            if a["polls_left"] <= 0:
                if random.random() < 0.8:
                    a["status"] = "approved"
                else:
                    a["status"] = "rejected"
                    a["reason"] = random.choice(REASONS)
        self._note("ApprovalFlow", "check_status", {"approval_id": approval_id}, a["status"])
        out: Result = {"approval_id": approval_id, "status": a["status"], "type": a["type"]}
        if a["status"] == "rejected":
            out["rejection_reason"] = a["reason"]
        return out

    def escalate(self, approval_id: str, reason: str) -> Result:
        if _failed():
            return {"error": "Escalation service unavailable. Retry."}
        a = self.approvals.get(approval_id)
        if a is None:
            return {"error": f"Approval {approval_id} not found."}
        if a["status"] == "approved":
            return {"error": "Cannot escalate an already-approved request."}
        a.update(status="pending", polls_left=1, reason=None, escalation=reason)
        self._note("ApprovalFlow", "escalate", {"approval_id": approval_id}, "escalated")
        return {"success": True, "approval_id": approval_id}


def _routes(apps: Apps) -> dict[tuple[str, str], Callable[[dict[str, Any]], Result]]:
    return {
        ("ticketdesk", "list_tickets"): lambda p: apps.list_tickets(),
        ("ticketdesk", "get_ticket"): lambda p: apps.get_ticket(**p),
        ("ticketdesk", "update_ticket"): lambda p: apps.update_ticket(**p),
        ("datahub", "query_metric"): lambda p: apps.query_metric(**p),
        ("datahub", "refresh_data"): lambda p: apps.refresh_data(**p),
        ("datahub", "get_approver"): lambda p: apps.get_approver(**p),
        ("approvalflow", "submit_approval"): lambda p: apps.submit_approval(**p),
        ("approvalflow", "check_status"): lambda p: apps.check_status(**p),
        ("approvalflow", "escalate"): lambda p: apps.escalate(**p),
    }


class OriginalStyleEnv:
    """`reset(seed)` and `step(action) -> (obs, reward, done, info)`, as the original's."""

    def __init__(self) -> None:
        self.apps = Apps()
        self.routes = _routes(self.apps)
        self.step_count = 0
        self.done = False
        self.total = 0.0
        self.progress: dict[str, bool] = {}
        self.last: Result = {}

    def reset(self, seed: int) -> dict[str, Any]:
        random.seed(seed)
        self.apps.reset()
        self.step_count, self.done, self.total, self.last = 0, False, 0.0, {}
        self.progress = dict.fromkeys(TASK["flags"], False)  # type: ignore[arg-type]
        return self._obs("Episode started.")

    def step(self, action: dict[str, Any]) -> tuple[dict[str, Any], float, bool, dict[str, Any]]:
        if self.done:
            return self._obs("Episode already finished."), 0.0, True, {}
        self.step_count += 1
        app = str(action.get("app", "")).lower()
        method = str(action.get("method", "")).lower()
        params = action.get("params", {})
        if not isinstance(params, dict):
            params = {}
        reward = -0.1
        route = self.routes.get((app, method))
        if route is None:
            reward -= 1.0
            result: Result = {"error": f"Unknown action ({app}, {method})."}
        else:
            try:
                result = route(params)
            except TypeError as exc:
                reward -= 0.5
                result = {"error": f"Bad params for {method}: {exc}"}
        self.last = result
        reward += self._shaped(app, method, params, result)
        self._flags(app, method, params, result)
        success = all(self.progress.values())
        timeout = self.step_count >= TASK["max_steps"]  # type: ignore[operator]
        message = ""
        if success:
            reward += 15.0
            self.done, message = True, "TASK COMPLETE."
        elif timeout:
            reward -= 5.0
            self.done, message = True, "TIMEOUT."
        obs = self._obs(message)
        self.total += reward
        info = {
            "step": self.step_count,
            "progress": dict(self.progress),
            "total_reward": self.total,
            "success": success,
            "timeout": timeout,
            "shortcut_attempts": 0,
        }
        return obs, round(reward, 3), self.done, info

    def _obs(self, message: str) -> dict[str, Any]:
        return {
            "task": TASK["text"],
            "step": self.step_count,
            "max_steps": TASK["max_steps"],
            "steps_remaining": TASK["max_steps"] - self.step_count,  # type: ignore[operator]
            "progress": dict(self.progress),
            "last_result": self.last,
            "message": message,
            "tools": MANIFEST,
        }

    @staticmethod
    def _shaped(app: str, method: str, params: dict[str, Any], result: Result) -> float:
        if "error" in result:
            return -0.3
        r = 0.0
        if method == "update_ticket":
            field, value = params.get("field"), params.get("value")
            r += 1.0 if field == "priority" and value is not None else 0.0
            r += 1.5 if field == "verified" and value is True else 0.0
            r += 1.0 if field == "status" and value == "open" else 0.0
            r += 1.0 if field == "linked_approval" else 0.0
        elif method == "refresh_data" and result.get("success"):
            r += 1.0
        elif method == "query_metric" and not result.get("is_stale"):
            r += 0.5
        elif method == "submit_approval" and result.get("success"):
            r += 2.0
        elif method == "check_status":
            status = result.get("status")
            r += 3.0 if status == "approved" else -0.5 if status == "rejected" else 0.0
        return r

    def _flags(self, app: str, method: str, params: dict[str, Any], result: Result) -> None:
        if "error" in result:
            return
        p = self.progress
        if method == "update_ticket" and params.get("ticket_id") == TASK["ticket"]:
            field, value = params.get("field"), params.get("value")
            if field == "priority" and value is not None:
                p["ticket_priority_set"] = True
            if field == "verified" and value is True:
                p["ticket_verified"] = True
        elif method == "refresh_data" and result.get("success"):
            p["metric_refreshed"] = True
        elif method == "submit_approval" and result.get("success"):
            p["approval_submitted"] = True
        elif method == "check_status" and result.get("status") == "approved":
            p["approval_approved"] = True
