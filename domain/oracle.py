"""The oracle: plans the next call from the true current world (privileged), so it can play
from any state: a fresh episode, a fork, the middle of someone else's failed attempt.

It asks for access early (a grant takes time), fixes and verifies the tickets, reads each
needed metric fresh just before acting on it, decides decision tasks the way the fresh data
says, and walks the approval chain: submits to whoever acts for the role now, waits, escalates
chance rejections, resubmits what expired. It never calls a service it knows to be down or
rate-limited, doing other work or waiting instead. A transient fault leaves the world as it
was, so the same call comes out again: that is the retry.

With ``aware=False`` it is the naive baseline: it follows the task text and ignores chaos
(never refreshes, routes to the role holder, does not escalate or ask for access, decides on
whatever value DataHub served).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from companyos.events.types import Goal

from . import goals
from .chaos import unavailable
from .model import MINUTES_PER_STEP, Approval, World, effective_approver


@dataclass(frozen=True, slots=True)
class Call:
    app: str
    method: str
    params: dict[str, Any]

    def as_action(self) -> dict[str, Any]:
        return {"app": self.app, "method": self.method, "params": self.params}

    def __hash__(self) -> int:
        return hash((self.app, self.method, repr(sorted(self.params.items()))))


WAIT = {
    "approvalflow": Call("approvalflow", "list_approvals", {}),
    "ticketdesk": Call("ticketdesk", "list_tickets", {}),
    "datahub": Call("datahub", "list_metrics", {}),
}


def _update(ticket_id: str, field: str, value: Any) -> Call:
    return Call(
        "ticketdesk", "update_ticket", {"ticket_id": ticket_id, "field": field, "value": value}
    )


def plan(world: World, aware: bool = True, done: frozenset[Call] = frozenset()) -> Call | None:
    """The next call towards the goal, or None when the task is done. ``done`` are calls the
    naive baseline believes it has made (it does not notice that one failed)."""
    if world.task is None or world.ended or goals.success(world):
        return None
    candidates = list(_candidates(world, world.task.goal, aware))
    if not aware:
        fresh = [c for c in candidates if c not in done or c.method == "check_status"]
        return fresh[0] if fresh else WAIT["approvalflow"]
    for call in candidates:
        if _accepts(world, call):
            return call
    for wait in WAIT.values():
        if _accepts(world, wait):
            return wait
    return candidates[0] if candidates else WAIT["approvalflow"]


def _accepts(world: World, call: Call) -> bool:
    """The service would take the call at the next step (no outage, within its rate limit)."""
    after = world._replace(step=world.step + 1)
    limits = after.services.limits
    if call.app in limits:
        clock = after.clock
        _, window = limits[call.app]
        kept = tuple(t for t in after.services.calls.get(call.app, ()) if t > clock - window)
        calls = {**after.services.calls, call.app: (*kept, clock)}
        after = after._replace(services=after.services._replace(calls=calls))
    return unavailable(after, call.app, call.method) is None


def _candidates(world: World, g: Goal, aware: bool) -> Iterator[Call]:
    """Useful calls in the order the oracle prefers them."""
    now = world.clock
    if aware:
        yield from _access(world, g, submit_only=True)
    for tg in g.tickets:
        t = world.tickets.get(tg.ticket_id)
        if t is None or t.status == "closed":
            continue
        if tg.unblock and t.status == "blocked":
            yield _update(t.ticket_id, "status", "open")
        for name, value in tg.fields.items():
            if not goals.field_ok(t, tg, name):
                yield _update(t.ticket_id, name, goals.target_value(name, value))
        if tg.verify and not t.verified:
            yield _update(t.ticket_id, "verified", True)
        if tg.status is not None and t.status != tg.status:
            yield _update(t.ticket_id, "status", tg.status)
    if aware:
        yield from _access(world, g, submit_only=False)
    if any(
        not goals.ticket_ready(world.tickets.get(tg.ticket_id), tg)
        for tg in g.tickets
        if tg.resolution is None
    ):
        return  # data and approvals come once the tickets are in order
    soon = now + MINUTES_PER_STEP
    for name in g.metrics:
        m = world.metrics.get(name)
        if m is None:
            continue
        if m.dataset and m.dataset not in world.grants:
            return  # nothing rests on data it cannot read yet: wait for the grant
        if aware and m.stale(soon):
            yield Call("datahub", "refresh_data", {"metric_name": name})
            return
        unread = not m.read_fresh(soon) if aware else m.fresh_read != m.version
        if unread:
            yield Call("datahub", "query_metric", {"metric_name": name})
            return
    decision = g.decision if aware else _naive_decision(world, g)
    if decision != "approve":
        main = g.tickets[0]
        resolution = "declined" if decision == "decline" else "flagged"
        yield _update(main.ticket_id, "resolution", resolution)
        return
    yield from _approvals(world, g, aware)


def _access(world: World, g: Goal, submit_only: bool) -> Iterator[Call]:
    atype = world.approval_types.get("data_access")
    if atype is None:
        return
    for dataset in g.access:
        if dataset in world.grants:
            continue
        mine = [
            a
            for a in world.approvals.values()
            if a.approval_type == "data_access"
            and str(a.data.get("dataset", "")).lower() == dataset
            and a.approver == a.evidence.routed_to
        ]
        live = [a for a in mine if a.status in ("pending", "rejected")]
        if not live:
            approver = effective_approver(world, atype.required_role)
            if approver is not None:
                yield Call(
                    "approvalflow",
                    "submit_approval",
                    {
                        "approval_type": "data_access",
                        "approver": world.people[approver].name,
                        "data": {
                            "dataset": dataset,
                            "reason": f"Needed for the task's ticket {g.ticket_id}.",
                        },
                    },
                )
        elif not submit_only:
            yield from _follow(world, live[-1], aware=True)


def _follow(world: World, a: Approval, aware: bool) -> Iterator[Call]:
    """Wait on a request (polling it) or escalate a chance rejection."""
    if a.status == "pending":
        yield Call("approvalflow", "check_status", {"approval_id": a.approval_id})
    elif a.status == "rejected" and a.cause == "chance" and aware:
        yield Call(
            "approvalflow",
            "escalate",
            {"approval_id": a.approval_id, "reason": "Requirements met; please review again."},
        )


def _approvals(world: World, g: Goal, aware: bool) -> Iterator[Call]:
    prior: Approval | None = None
    for i, ag in enumerate(g.approvals):
        valid = goals.valid_submissions(world, g, i)
        done = [a for a in valid if a.status == "approved"]
        if done:
            prior = done[-1]
            continue
        live = [
            a
            for a in valid
            if a.status == "pending" or (a.status == "rejected" and a.cause == "chance")
        ]
        if not aware:  # the naive baseline keeps polling whatever it sent
            live = [
                a
                for a in world.approvals.values()
                if a.approval_type == ag.approval_type and a.status == "pending"
            ]
            if live:
                yield from _follow(world, live[-1], aware)
                return
            if any(a.approval_type == ag.approval_type for a in world.approvals.values()):
                return
        elif live:
            yield from _follow(world, live[-1], aware)
            return
        yield _submit(world, g, i, prior, aware)
        return


def _submit(world: World, g: Goal, i: int, prior: Approval | None, aware: bool) -> Call:
    ag = g.approvals[i]
    atype = world.approval_types[ag.approval_type]
    role = atype.required_role
    approver = effective_approver(world, role) if aware else world.roles.get(role)
    data: dict[str, Any] = {}
    for f in atype.fields:
        if f.kind == "ticket":
            data[f.key] = g.ticket_id
        elif f.kind == "metric" and f.metric is not None:
            data[f.key] = world.metrics[f.metric].value
        elif f.kind == "approval":
            data[f.key] = prior.approval_id if prior else ""
        else:
            data[f.key] = ag.data.get(f.key) or ag.mentions.get(f.key, "")
    name = world.people[approver].name if approver else ""
    return Call(
        "approvalflow",
        "submit_approval",
        {"approval_type": ag.approval_type, "approver": name, "data": data},
    )


def _naive_decision(world: World, g: Goal) -> str:
    """What the task's rule says on the values DataHub serves, fresh or not."""
    c = g.criterion
    if c is None:
        return g.decision
    value = world.metrics[c.metric].value
    bound = world.metrics[c.against].value if c.against else c.threshold
    assert bound is not None
    if value >= bound if c.op == ">=" else value <= bound:
        return "approve"
    return "decline" if c.op == ">=" else "flag"  # the vendor review declines, the audit flags
