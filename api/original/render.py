"""The original CompanyOS's wire shapes, rendered from the log: what its clients read.

Tool results keep the original's keys (``{"ticket": {...}}``, ``{"success": true,
"approval_id": "APR-001", ...}``, ``{"error": ..., "hint": ...}``, ...), the observation its
fields (``task``, ``step``, ``max_steps``, ``steps_remaining``, ``last_result``, ``message``,
``tools``), and ``info`` the trainer's fields (``step``, ``progress``, ``total_reward``,
``success``, ``timeout``, ``shortcut_attempts``). The observation carries ``progress`` only on
the curriculum mount: it is the grader's view (`projections.original.flags`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from companyos.domain import TOOLS
from companyos.domain.model import World
from companyos.domain.original import METRIC_BY_NAME, ROLE_NAMES, TAGS
from companyos.events.types import Event
from companyos.projections.original import flags
from companyos.projections.reward import ScoreState

APPS = {"ticketdesk": "TicketDesk", "datahub": "DataHub", "approvalflow": "ApprovalFlow"}
VERSION = "0.1.0"


def tool_manifest() -> dict[str, list[str]]:
    """The tools as the original listed them for prompting: ``method(arg, ...)`` per app."""
    out: dict[str, list[str]] = {}
    for (app, method), spec in TOOLS.items():
        args = ", ".join(spec.params.model_fields)
        out.setdefault(app, []).append(f"{method}({args})" if args else method)
    return out


MANIFEST = tool_manifest()
ACTION_FORMAT = {
    "app": "ticketdesk | datahub | approvalflow",
    "method": "a method name from the manifest",
    "params": "the method's keyword arguments, as an object",
}


def _role(role: str) -> str:
    return ROLE_NAMES.get(role, role.upper())


# ------------------------------------------------------------------ tool results


def _ticket(world: World, tid: str) -> dict[str, Any]:
    t = world.tickets[tid]
    return {
        "id": t.ticket_id,
        "title": t.title,
        "status": t.status,
        "priority": t.priority,
        "assignee": t.assignee,
        "tags": list(TAGS.get(tid, ())),
        "linked_approval": t.linked_approval,
        "verified": t.verified,
    }


def _metric(world: World, e: Any) -> dict[str, Any]:
    m = world.metrics[e.metric]
    known = METRIC_BY_NAME.get(m.name)
    view: dict[str, Any] = {
        "metric_name": m.name,
        "value": e.value,
        "unit": m.unit,
        "stale_days": e.stale_days,
        "source": m.source,
        "threshold_pass": m.threshold,
        "note": known.description if known else m.description,
        "is_stale": e.stale,
    }
    if e.stale:
        view["warning"] = (
            f"This value is {e.stale_days} days old (older than {m.max_age // 1440} days is "
            f"stale): call refresh_data('{m.name}') and query again before using it."
        )
    return view


def _approval(world: World, approval_id: str) -> dict[str, Any]:
    a = world.approvals[approval_id]
    view: dict[str, Any] = {
        "approval_id": a.approval_id,
        "status": a.status,
        "type": a.approval_type,
    }
    if a.status == "pending":
        view["message"] = "Not decided yet: check the status again."
    elif a.status == "rejected":
        view["rejection_reason"] = a.reason
        view["hint"] = "Escalate it with escalate(approval_id, reason), or fix and resubmit."
    return view


Ctx = tuple[World, World, tuple[str, str]]
"""(the world after the call, the world before it, the call's app and method)."""


def _error(c: Ctx, e: Any) -> dict[str, Any]:
    if e.type == "FaultInjected":
        return {"error": f"{APPS.get(e.app, e.app)} is temporarily unavailable. Retry."}
    if e.type == "InvalidAction" and e.code == "unknown_tool":
        app, method = c[2]
        return {
            "error": f"Unknown action ({app}, {method}).",
            "hint": f"{e.message} The manifest lists the valid app/method pairs.",
        }
    return {"error": e.message}


def _listed(c: Ctx, e: Any) -> dict[str, Any]:
    tickets = c[0].tickets.values()
    return {"tickets": [{"id": t.ticket_id, "title": t.title, "status": t.status} for t in tickets]}


def _searched(c: Ctx, e: Any) -> dict[str, Any]:
    keep = ("id", "title", "status", "tags")
    hits = [{k: v for k, v in _ticket(c[0], tid).items() if k in keep} for tid in e.ticket_ids]
    if hits:
        return {"results": hits}
    return {"results": [], "hint": "No ticket matches: try fewer or broader words."}


def _updated(c: Ctx, e: Any) -> dict[str, Any]:
    return {"success": True, "ticket_id": e.ticket_id, "updated": {e.field: e.new}}


def _metrics(c: Ctx, e: Any) -> dict[str, Any]:
    return {"available_metrics": list(c[0].metrics), "hint": "query_metric(metric_name) reads one."}


def _refreshed(c: Ctx, e: Any) -> dict[str, Any]:
    world, before, _ = c
    old = before.metrics[e.metric]
    return {
        "success": True,
        "metric_name": old.name,
        "was_stale": old.stale(world.clock),
        "message": "Refreshed from the source system: query it again for the value.",
    }


def _approver(c: Ctx, e: Any) -> dict[str, Any]:
    view: dict[str, Any] = {"role": _role(e.role), "approver": e.holder}
    if e.delegated:
        acting = e.approver
        deputy = next((r for r, p in c[0].roles.items() if p == acting), None)
        view["warning"] = (
            f"{view['role']} {e.holder} is out of office (OOO): route requests to "
            f"{_role(deputy) if deputy else acting} ({acting})."
        )
        view["delegate"] = acting
    return view


def _types(c: Ctx, e: Any) -> dict[str, Any]:
    return {
        "approval_types": {
            name: {"required_role": _role(t.required_role), "requires_data_keys": list(t.keys)}
            for name, t in c[0].approval_types.items()
        }
    }


def _submitted(c: Ctx, e: Any) -> dict[str, Any]:
    return {
        "success": True,
        "approval_id": e.approval_id,
        "message": "Submitted: check_status(approval_id) until it is decided.",
    }


def _escalated(c: Ctx, e: Any) -> dict[str, Any]:
    return {
        "success": True,
        "approval_id": e.approval_id,
        "message": "Escalated: it is decided at the next status check.",
    }


def _approvals(c: Ctx, e: Any) -> dict[str, Any]:
    approvals = c[0].approvals.values()
    return {
        "approvals": [
            {"id": a.approval_id, "type": a.approval_type, "status": a.status} for a in approvals
        ]
    }


_RESULTS: dict[str, Callable[[Ctx, Any], dict[str, Any]]] = {
    "InvalidAction": _error,
    "ActionRejected": _error,
    "FaultInjected": _error,
    "TicketsListed": _listed,
    "TicketsSearched": _searched,
    "TicketViewed": lambda c, e: {"ticket": _ticket(c[0], e.ticket_id)},
    "TicketUpdated": _updated,
    "MetricsListed": _metrics,
    "MetricQueried": lambda c, e: _metric(c[0], e),
    "MetricRefreshed": _refreshed,
    "ApproverLookedUp": _approver,
    "ApprovalTypesListed": _types,
    "ApprovalSubmitted": _submitted,
    "ApprovalPolled": lambda c, e: _approval(c[0], e.approval_id),
    "ApprovalDecided": lambda c, e: _approval(c[0], e.approval_id),
    "ApprovalEscalated": _escalated,
    "ApprovalsListed": _approvals,
}


def result(world: World, before: World, events: Sequence[Event], call: tuple[str, str]) -> Any:
    """What the original returned for the call whose ``events`` turned ``before`` into
    ``world``: the last event that has an answer gives it, as in our own rendering."""
    for e in reversed(events):
        answer = _RESULTS.get(e.type)
        if answer is not None:
            return answer((world, before, call), e)
    return {}


# ------------------------------------------------------------------ observation, info, render

STARTED = "Episode started. Read the task and begin."
SUCCEEDED = "TASK COMPLETE: every success condition is met."
TIMED_OUT = "TIMEOUT: the step limit was reached before the task was done."
ENDED = "This episode has ended: POST reset to start another."


def observation(world: World, last_result: Any, message: str, curriculum: bool) -> dict[str, Any]:
    info = world.info
    assert info is not None and world.task is not None
    obs: dict[str, Any] = {
        "task": world.task.text,
        "step": world.step,
        "max_steps": info.max_steps,
        "steps_remaining": world.steps_remaining,
    }
    if curriculum:
        obs["progress"] = flags(world)
    obs |= {"last_result": last_result, "message": message, "tools": MANIFEST}
    return obs


def end_message(outcome: str | None) -> str:
    return {"success": SUCCEEDED, "timeout": TIMED_OUT}.get(outcome or "", "")


def info(world: World, score: ScoreState) -> dict[str, Any]:
    return {
        "step": world.step,
        "progress": flags(world),
        "total_reward": score.total,
        "success": world.outcome == "success",
        "timeout": world.outcome == "timeout",
        "shortcut_attempts": score.shortcut_attempts,
    }


def render(world: World | None, score: ScoreState | None) -> dict[str, Any]:
    """The original's `/render`: the task, progress and return, and a count per app."""
    if world is None or world.task is None:
        tickets, metrics, approvals = [], [], []
        task, step, progress, total = None, 0, {}, 0.0
    else:
        tickets = list(world.tickets.values())
        metrics = list(world.metrics.values())
        approvals = [a.status for a in world.approvals.values()]
        task, step, progress = world.task.text, world.step, flags(world)
        total = score.total if score else 0.0
    return {
        "task": task,
        "step": step,
        "progress": progress,
        "total_reward": round(total, 3),
        "ticketdesk_state": {
            "open": sum(t.status == "open" for t in tickets),
            "blocked": sum(t.status == "blocked" for t in tickets),
            "verified": sum(t.verified for t in tickets),
        },
        "datahub_state": {
            "total_metrics": len(metrics),
            "stale_metrics": sum(m.stale(world.clock) for m in metrics) if world else 0,
        },
        "approvalflow_state": {
            "total": len(approvals),
            "pending": approvals.count("pending"),
            "approved": approvals.count("approved"),
            "rejected": approvals.count("rejected"),
        },
    }
