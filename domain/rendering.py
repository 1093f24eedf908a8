"""What a tool call shows the agent: the result of its last call rendered from the world after
the step and the step's events.

Partial observability is the point: the agent learns about the world only through tool results,
which show what the apps show (a stale metric's cached value, an auto-reply), never the hidden
truth. This lives in the domain, beside the apps whose views it uses, because the honest solver
(`domain.honest`) plays on exactly these results when an instance's step budget is worked out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from companyos.events.types import (
    ActionRejected,
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalPolled,
    ApprovalsListed,
    ApprovalSubmitted,
    ApprovalTypesListed,
    ApproverLookedUp,
    Event,
    FaultInjected,
    InvalidAction,
    MetricQueried,
    MetricRefreshed,
    MetricsListed,
    TicketsListed,
    TicketsSearched,
    TicketUpdated,
    TicketViewed,
)

from .approvalflow import approval_type_view, approval_view
from .datahub import approver_view, metric_summary, metric_view
from .model import World, clock_label
from .ticketdesk import ticket_summary, ticket_view

APP_TITLES = {"ticketdesk": "TicketDesk", "datahub": "DataHub", "approvalflow": "ApprovalFlow"}


Rendered = tuple[Any, str, str | None]
"""(result, message, error code) of one step."""


def _invalid(world: World, e: InvalidAction) -> Rendered:
    return {"error": e.code, "message": e.message}, f"Invalid action: {e.message}", e.code


def _rejected(world: World, e: ActionRejected) -> Rendered:
    return {"error": e.code, "message": e.message}, f"Rejected: {e.message}", e.code


def _fault(world: World, e: FaultInjected) -> Rendered:
    title = APP_TITLES.get(e.app, e.app)
    if e.kind == "rate_limited":
        code = "rate_limited"
        calls, window = world.services.limits.get(e.app, (0, 0))
        msg = (
            f"{title} answered 429 Too Many Requests (limit: {calls} calls per {window} "
            f"minutes): nothing changed; retry after {e.retry_after_minutes} minutes (calls "
            "made meanwhile count too)."
        )
        result = {
            "error": code,
            "retryable": True,
            "retry_after_minutes": e.retry_after_minutes,
            "limit": {"calls": calls, "window_minutes": window},
            "message": msg,
        }
    elif e.kind == "outage":
        code = "service_down"
        until = clock_label(e.until_minute or 0)
        msg = (
            f"{title} is down for maintenance until {until}. Nothing changed; work in the "
            "other apps meanwhile."
        )
        result = {"error": code, "retryable": True, "until": until, "message": msg}
    else:
        code = "service_unavailable"
        msg = f"{title} is temporarily unavailable (503). Nothing changed; retry the same call."
        if world.rules.untimed_faults:
            msg = (
                f"{title} is temporarily unavailable (503). The call did not reach it: nothing "
                "changed, no time passed and it does not count against a rate limit; retry the "
                "same call."
            )
        result = {"error": code, "retryable": True, "message": msg}
    return result, msg, code


def _tickets_listed(world: World, e: TicketsListed) -> Rendered:
    tickets = [ticket_summary(t) for t in world.tickets.values()]
    return {"tickets": tickets}, f"{e.count} tickets.", None


def _tickets_searched(world: World, e: TicketsSearched) -> Rendered:
    hits = [ticket_summary(world.tickets[t]) for t in e.ticket_ids]
    return {"query": e.query, "tickets": hits}, f"{len(hits)} tickets match {e.query!r}.", None


def _ticket_viewed(world: World, e: TicketViewed) -> Rendered:
    return ticket_view(world.tickets[e.ticket_id]), f"Ticket {e.ticket_id}.", None


def _ticket_updated(world: World, e: TicketUpdated) -> Rendered:
    view = ticket_view(world.tickets[e.ticket_id])
    changed = {"field": e.field, "old": e.old, "new": e.new}
    return (
        {"ticket": view, "changed": changed},
        f"{e.ticket_id}: {e.field} {e.old!r} -> {e.new!r}.",
        None,
    )


def _metrics_listed(world: World, e: MetricsListed) -> Rendered:
    metrics = [metric_summary(m) for m in world.metrics.values()]
    return {"metrics": metrics}, f"{e.count} metrics.", None


def _metric_queried(world: World, e: MetricQueried) -> Rendered:
    # What was served at the time, not what the metric holds after later refreshes.
    m = world.metrics[e.metric]
    view = metric_view(m, world.clock, value=e.value)
    view["is_stale"] = e.stale
    stale = " (STALE: refresh before use)" if e.stale else ""
    return view, f"{e.metric} = {e.value} {m.unit}{stale}.", None


def _metric_refreshed(world: World, e: MetricRefreshed) -> Rendered:
    view = metric_view(world.metrics[e.metric], world.clock)
    view["previous_value"] = e.old
    changed = "changed" if e.old != e.new else "unchanged"
    return view, f"{e.metric} refreshed: {e.old} -> {e.new} ({changed}).", None


def _approver(world: World, e: ApproverLookedUp) -> Rendered:
    view = approver_view(world, e)
    return view, f"{view['role']} approver: {view['approver']}.", None


def _types_listed(world: World, e: ApprovalTypesListed) -> Rendered:
    types = {n: approval_type_view(t) for n, t in world.approval_types.items()}
    return {"approval_types": types}, f"{e.count} approval types.", None


def _submitted(world: World, e: ApprovalSubmitted) -> Rendered:
    view = approval_view(world, world.approvals[e.approval_id])
    return view, f"Submitted {e.approval_id} ({e.approval_type}); status pending.", None


def _approval(world: World, e: ApprovalPolled | ApprovalDecided) -> Rendered:
    a = world.approvals[e.approval_id]
    view = approval_view(world, a)
    msg = f"{a.approval_id} is {a.status}" + (f": {a.reason}" if a.reason else "")
    if "auto_reply" in view:
        msg += f" ({view['auto_reply']})"
    return view, msg + ".", None


def _escalated(world: World, e: ApprovalEscalated) -> Rendered:
    view = approval_view(world, world.approvals[e.approval_id])
    return view, f"{e.approval_id} escalated; it is under review again.", None


def _approvals_listed(world: World, e: ApprovalsListed) -> Rendered:
    approvals = [approval_view(world, a) for a in world.approvals.values()]
    return {"approvals": approvals}, f"{e.count} approvals.", None


_RENDER: dict[str, Any] = {
    "InvalidAction": _invalid,
    "ActionRejected": _rejected,
    "FaultInjected": _fault,
    "TicketsListed": _tickets_listed,
    "TicketsSearched": _tickets_searched,
    "TicketViewed": _ticket_viewed,
    "TicketUpdated": _ticket_updated,
    "MetricsListed": _metrics_listed,
    "MetricQueried": _metric_queried,
    "MetricRefreshed": _metric_refreshed,
    "ApproverLookedUp": _approver,
    "ApprovalTypesListed": _types_listed,
    "ApprovalSubmitted": _submitted,
    "ApprovalPolled": _approval,
    "ApprovalDecided": _approval,
    "ApprovalEscalated": _escalated,
    "ApprovalsListed": _approvals_listed,
}


def render_result(world: World, events: Sequence[Event]) -> Rendered:
    """What one step returns to the agent, from the world after it and the events it caused.

    The last event that has a rendering says what the call did (a decision comes after the
    poll that caused it; chaos bookkeeping has no rendering)."""
    for e in reversed(events):
        render = _RENDER.get(e.type)
        if render is not None:
            return render(world, e)  # type: ignore[no-any-return]
    return None, "Nothing happened.", None
