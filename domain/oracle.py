"""The oracle: plans the next call from the true current world (privileged), so it can play
from any state: a fresh episode, a fork, the middle of someone else's failed attempt.

It fixes the ticket, refreshes or reads each needed metric, submits to whoever acts for the role
now with the fresh values, polls, and escalates chance rejections. A fault leaves the world as
it was, so the same call comes out again: that is the retry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import goals
from .model import World, effective_approver


@dataclass(frozen=True, slots=True)
class Call:
    app: str
    method: str
    params: dict[str, Any]

    def as_action(self) -> dict[str, Any]:
        return {"app": self.app, "method": self.method, "params": self.params}


def _update(ticket_id: str, field: str, value: Any) -> Call:
    return Call(
        "ticketdesk", "update_ticket", {"ticket_id": ticket_id, "field": field, "value": value}
    )


def plan(world: World) -> Call | None:
    """The next call towards the goal, or None when there is nothing left to do."""
    if world.task is None or world.ended:
        return None
    g = world.task.goal
    t = goals.task_ticket(world, g)
    if t is not None and t.status != "closed":
        if g.unblock and t.status == "blocked":
            return _update(t.ticket_id, "status", "open")
        for name, value in g.ticket_fields.items():
            if not goals.field_ok(world, g, name):
                return _update(t.ticket_id, name, value)
        if g.verify and not t.verified:
            return _update(t.ticket_id, "verified", True)
    for metric in g.metrics:
        m = world.metrics[metric]
        if m.stale:
            return Call("datahub", "refresh_data", {"metric_name": metric})
        if not m.read_fresh:
            return Call("datahub", "query_metric", {"metric_name": metric})
    valid = goals.valid_submissions(world, g)
    if any(a.status == "approved" for a in valid):
        return None
    for a in reversed(valid):
        if a.status == "pending":
            return Call("approvalflow", "check_status", {"approval_id": a.approval_id})
    for a in reversed(valid):
        if a.status == "rejected" and a.cause == "chance":
            return Call(
                "approvalflow",
                "escalate",
                {"approval_id": a.approval_id, "reason": "Requirements met; please review again."},
            )
    atype = world.approval_types[g.approval_type]
    approver = effective_approver(world, atype.required_role)
    data: dict[str, Any] = {}
    for f in atype.fields:
        if f.kind == "ticket":
            data[f.key] = g.ticket_id
        elif f.kind == "metric" and f.metric is not None:
            data[f.key] = world.metrics[f.metric].value
        else:
            data[f.key] = g.approval_data.get(f.key, "")
    name = world.people[approver].name if approver else ""
    return Call(
        "approvalflow",
        "submit_approval",
        {"approval_type": g.approval_type, "approver": name, "data": data},
    )
