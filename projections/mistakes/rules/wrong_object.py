"""Doing the task's work on the wrong object: a ticket mix-up (setting on another ticket what
the task asks of one of its own), a request about another ticket than the task's or carrying
another metric's figure, or an escalation of a request that was not the rejected one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from companyos.domain import goals
from companyos.domain.model import Ticket, normalize_ticket_id
from companyos.events.types import (
    ActionRejected,
    ApprovalEscalated,
    FaultInjected,
    TicketGoal,
    TicketUpdated,
)

from ..context import Episode, Suspect, param, text, understood

LABEL = "wrong_object"
ORDER = 70
DEFINITION = (
    "Did the task's work on the wrong object: set on another ticket a field the task asks of "
    "one of its own tickets (a mix-up of tickets), sent a request of a type the task needs "
    "about another ticket or with another metric's figure in a field (a mix-up of metrics), or "
    "escalated a request that was not the rejected one. A ticket change is made good when it "
    "is put back (one that changed nothing, when the work is done on the task's ticket), an "
    "escalation by a later one that went through; a request cannot be withdrawn."
)


def asked_of_task(ep: Episode, field: str) -> bool:
    """Whether the task asks ``field`` of one of its tickets (a mix-up sets it elsewhere)."""
    for tg in ep.goal.tickets:
        if field in tg.fields:
            return True
        if field == "verified" and tg.verify:
            return True
        if field == "status" and (tg.status is not None or tg.unblock):
            return True
    return field == "resolution" and ep.decision_task


def _asks(tg: TicketGoal, field: str, value: Any) -> bool:
    """The task asks ``field`` of ``tg``'s ticket, with ``value`` as one that would do."""
    if field in tg.fields:
        return goals.value_ok(value, tg.fields[field])
    if field == "verified":
        return tg.verify and value is True
    if field == "status":
        return value == tg.status or (tg.unblock and value != "blocked")
    return False


def _done(t: Ticket | None, tg: TicketGoal, field: str) -> bool:
    if field in tg.fields:
        return goals.field_ok(t, tg, field)
    if field == "verified":
        return goals.verified(t)
    return goals.status_ok(t, tg) if tg.status is not None else goals.unblocked(t)


def done_on_task(ep: Episode, i: int, field: str, value: Any) -> bool:
    """Before step index ``i``, the agent had itself set ``field`` on the task's tickets, and
    every task ticket the value would do for had it done: setting it on another ticket too is
    extra work (collateral damage), not the task's work on the wrong ticket."""
    asked = {tg.ticket_id: tg for tg in ep.goal.tickets if _asks(tg, field, value)}
    if not asked:
        return False
    own = any(
        isinstance(e, TicketUpdated) and e.ticket_id in asked and e.field == field
        for s in ep.steps[:i]
        for e in s.events
    )
    world = ep.before[i]
    return own and all(_done(world.tickets.get(t), tg, field) for t, tg in asked.items())


def mixed_up(ep: Episode, i: int, e: TicketUpdated) -> bool:
    """A change at step index ``i`` on another ticket than the task's is the task's work done
    on the wrong ticket."""
    return (
        e.ticket_id not in ep.wanted
        and asked_of_task(ep, e.field)
        and not done_on_task(ep, i, e.field, e.new)
    )


def find(ep: Episode) -> Iterator[Suspect]:
    for i, s in enumerate(ep.steps):
        call = s.call
        if call.method != "update_ticket" or not understood(s):
            continue
        tid = normalize_ticket_id(text(param(call, "ticket_id")))
        field = text(param(call, "field")).lower()
        if tid in ep.wanted or tid not in ep.before[i].tickets or not asked_of_task(ep, field):
            continue
        if any(isinstance(e, TicketUpdated) and not mixed_up(ep, i, e) for e in s.events):
            continue  # a copy of work it had done on the task's tickets: collateral damage
        if any(isinstance(e, FaultInjected) for e in s.events):
            continue
        item = f"{tid}.{field}"
        was, now = ep.before[i].tickets[tid].get(field), s.world.tickets[tid].get(field)
        if item not in ep.collateral(i) and was != now:
            continue  # a change the task calls for (a blocker resolved), or a value put back
        mine = ", ".join(ep.wanted)

        harm = item in ep.collateral(i)

        def made_good(
            i: int = i, item: str = item, field: str = field, harm: bool = harm
        ) -> int | None:
            if harm:  # put back
                return ep.first_after(i, lambda t: item not in ep.collateral(t.step - 1))
            # A change that did no harm (the value was already so) is made good by doing the
            # work on the task's ticket.
            return ep.first_after(
                i,
                lambda t: (
                    t.call.method == "update_ticket"
                    and normalize_ticket_id(text(param(t.call, "ticket_id"))) in ep.wanted
                    and text(param(t.call, "field")).lower() == field
                    and understood(t)
                ),
            )

        yield Suspect(
            LABEL,
            s.step,
            f"set {item} to {param(call, 'value')!r}: the task asks that of {mine}, not {tid}",
            made_good,
        )
    yield from ep.request_defects(LABEL)  # a figure taken from another metric
    for req in ep.requests():
        if req.approval.approval_type not in ep.allowed:
            found = ep.unwanted_request(req.i, req.approval)
            if found is not None and found.label == LABEL:
                yield found
    for i, s in enumerate(ep.steps):
        if s.call.method != "escalate":
            continue
        for e in s.events:
            if isinstance(e, ActionRejected) and e.code == "not_rejected":
                aid = text(param(s.call, "approval_id")).upper()
                yield Suspect(
                    LABEL,
                    s.step,
                    f"escalated {aid}, which was not rejected: not the request to escalate",
                    lambda i=i: ep.first_after(
                        i, lambda t: any(isinstance(x, ApprovalEscalated) for x in t.events)
                    ),
                )
    for req in ep.requests():
        other = ep.names_other_ticket(req.approval)
        if other is not None:
            a = req.approval
            yield Suspect(
                LABEL,
                ep.steps[req.i].step,
                f"requested {a.approval_type} ({a.approval_id}) about {other}; the task's "
                f"ticket is {ep.main.ticket_id}",
            )
