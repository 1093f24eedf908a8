"""TicketDesk: Jira-like tickets with missing fields and blocked states.

Rules (as in the original): an approval can be linked only to a verified ticket; a blocked
ticket cannot be closed directly. Closing is irreversible: a closed ticket is read-only, and a
link must name an existing approval (the original's fixed worlds relax both: `AppRulesSet`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from companyos.events.types import (
    ChaosInjected,
    Event,
    InvalidAction,
    TicketCreated,
    TicketsListed,
    TicketsSearched,
    TicketUpdated,
    TicketViewed,
)

from .model import (
    PRIORITIES,
    RESOLUTIONS,
    STATUSES,
    TICKET_FIELDS,
    Ticket,
    World,
    normalize_ticket_id,
)
from .tooling import Ctx, Params, Registry, reject

APP = "ticketdesk"
registry = Registry(APP)
Scalar = str | int | float | bool


class NoParams(Params):
    pass


class SearchTicketsParams(Params):
    query: str = Field(
        min_length=1, max_length=200, description="Words to find in ticket ids, titles and text."
    )


class GetTicketParams(Params):
    ticket_id: str = Field(min_length=1, max_length=64, description="A ticket id such as TKT-1042.")


class UpdateTicketParams(Params):
    ticket_id: str = Field(min_length=1, max_length=64, description="The ticket to change.")
    field: str = Field(
        min_length=1, max_length=64, description="One of: " + ", ".join(TICKET_FIELDS) + "."
    )
    value: Scalar | None = Field(
        description=(
            "New value. priority: low|medium|high|critical; assignee: a person's name (null to "
            "unassign); status: open|in_progress|blocked|resolved|closed; verified: true|false; "
            "linked_approval: an approval id such as APR-1001; resolution: declined|flagged "
            "(a decision not to go ahead, or to hand it to a human), or null."
        )
    )


# ------------------------------------------------------------------ views (what the agent sees)


def ticket_view(t: Ticket) -> dict[str, Any]:
    view: dict[str, Any] = {
        "ticket_id": t.ticket_id,
        "title": t.title,
        "description": t.description,
        "priority": t.priority,
        "assignee": t.assignee,
        "status": t.status,
        "verified": t.verified,
        "linked_approval": t.linked_approval,
        "resolution": t.resolution,
    }
    if t.blocked_reason and t.status == "blocked":
        view["blocked_reason"] = t.blocked_reason
    return view


def ticket_summary(t: Ticket) -> dict[str, Any]:
    return {
        "ticket_id": t.ticket_id,
        "title": t.title,
        "status": t.status,
        "priority": t.priority,
    }


# ------------------------------------------------------------------ deciders


def _no_ticket(ticket_id: str) -> list[Event]:
    return reject(
        "ticket_not_found",
        f"No ticket {ticket_id!r}. Find ticket ids with ticketdesk.search_tickets(query) or "
        "ticketdesk.list_tickets().",
    )


@registry.tool(
    "list_tickets", NoParams, "List all tickets (id, title, status, priority).", faultable=False
)
def list_tickets(world: World, p: NoParams, ctx: Ctx) -> list[Event]:
    return [TicketsListed(count=len(world.tickets))]


@registry.tool(
    "search_tickets",
    SearchTicketsParams,
    "Find tickets whose id, title or description contain every word of the query.",
)
def search_tickets(world: World, p: SearchTicketsParams, ctx: Ctx) -> list[Event]:
    words = p.query.lower().split()
    hits = tuple(
        t.ticket_id
        for t in world.tickets.values()
        if all(w in f"{t.ticket_id} {t.title} {t.description}".lower() for w in words)
    )
    return [TicketsSearched(query=p.query, ticket_ids=hits)]


@registry.tool("get_ticket", GetTicketParams, "Read one ticket with all its fields.")
def get_ticket(world: World, p: GetTicketParams, ctx: Ctx) -> list[Event]:
    tid = normalize_ticket_id(p.ticket_id)
    if tid not in world.tickets:
        return _no_ticket(tid)
    return [TicketViewed(ticket_id=tid)]


def _coerce(field: str, value: Any) -> tuple[Any, str | None]:
    """The canonical value for ``field``, or a message saying what would be accepted."""
    if field == "priority":
        if isinstance(value, str) and value.strip().lower() in PRIORITIES:
            return value.strip().lower(), None
        return None, f"priority must be one of {', '.join(PRIORITIES)}"
    if field == "assignee":
        if value is None or (isinstance(value, str) and not value.strip()):
            return None, None
        if isinstance(value, str) and len(value) <= 80:
            return value.strip(), None
        return None, "assignee must be a person's name (at most 80 characters) or null"
    if field == "status":
        if isinstance(value, str):
            key = value.strip().lower().replace(" ", "_").replace("-", "_")
            if key in STATUSES:
                return key, None
        return None, f"status must be one of {', '.join(STATUSES)}"
    if field == "verified":
        if isinstance(value, bool):
            return value, None
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true", None
        return None, "verified must be true or false"
    if field == "resolution":
        if value is None:
            return None, None
        if isinstance(value, str) and value.strip().lower() in RESOLUTIONS:
            return value.strip().lower(), None
        return None, f"resolution must be one of {', '.join(RESOLUTIONS)}, or null"
    if field == "linked_approval":
        if value is None:
            return None, None
        if isinstance(value, str) and value.strip():
            return value.strip().upper(), None
        return None, "linked_approval must be an approval id such as APR-1001, or null"
    return None, f"field must be one of {', '.join(TICKET_FIELDS)}"


@registry.tool(
    "update_ticket",
    UpdateTicketParams,
    "Set one field of a ticket: priority, assignee, status, verified or linked_approval. "
    "A blocked ticket must be unblocked (status open) before it can be closed; an approval "
    "can be linked only to a verified ticket; closed tickets are read-only.",
)
def update_ticket(world: World, p: UpdateTicketParams, ctx: Ctx) -> list[Event]:
    field = p.field.strip().lower()
    if field not in TICKET_FIELDS:
        return [
            InvalidAction(
                code="invalid_field",
                message=f"Unknown ticket field {p.field!r}: use one of {', '.join(TICKET_FIELDS)}.",
            )
        ]
    new, problem = _coerce(field, p.value)
    if problem:
        return [
            InvalidAction(code="invalid_value", message=f"Invalid value {p.value!r}: {problem}.")
        ]
    tid = normalize_ticket_id(p.ticket_id)
    ticket = world.tickets.get(tid)
    if ticket is None:
        return _no_ticket(tid)
    if ticket.status == "closed" and world.rules.closed_read_only:
        return reject(
            "ticket_closed",
            f"{tid} is closed and closed tickets are read-only; closing cannot be undone.",
        )
    if field == "status" and new == "closed" and ticket.status == "blocked":
        return reject(
            "blocked_ticket_close",
            f"{tid} is blocked and cannot be closed directly: resolve the blocker and set its "
            "status to 'open' first.",
        )
    if field == "linked_approval" and new is not None:
        if not ticket.verified:
            return reject(
                "ticket_not_verified",
                f"An approval can be linked only to a verified ticket: verify {tid} first "
                "(update_ticket field='verified' value=true).",
            )
        if new not in world.approvals and world.rules.link_needs_approval:
            return reject(
                "approval_not_found",
                f"No approval {new!r}. List requests with approvalflow.list_approvals().",
            )
    return [TicketUpdated(ticket_id=tid, field=field, old=ticket.get(field), new=new)]


# ------------------------------------------------------------------ evolve


def on_ticket_created(world: World, e: TicketCreated) -> World:
    t = Ticket(
        e.ticket_id,
        e.title,
        e.description,
        e.priority,
        e.assignee,
        e.status,
        e.verified,
        resolution=e.resolution,
    )
    return world._replace(tickets={**world.tickets, e.ticket_id: t})


def on_ticket_updated(world: World, e: TicketUpdated) -> World:
    t = world.tickets[e.ticket_id]
    changes: dict[str, Any] = {e.field: e.new}
    if e.field == "status" and e.new != "blocked":
        changes["blocked_reason"] = None
    if e.field == "resolution":
        # A decision rests on the data as it was when it was made: keep that with it.
        decided = e.new is not None
        changes["decided_at"] = world.clock if decided else None
        changes["decided_metrics"] = world.metrics if decided else None
    return world._replace(tickets={**world.tickets, e.ticket_id: t._replace(**changes)})


def on_chaos(world: World, e: ChaosInjected) -> World:
    t = world.tickets[e.target]
    if e.kind == "missing_field":
        t = t._replace(**{e.params["field"]: None})
    elif e.kind == "blocked_ticket":
        t = t._replace(status="blocked", blocked_reason=e.params.get("reason"))
    elif e.kind == "conflicting_values":  # the ticket states a figure the record contradicts
        t = t._replace(description=str(e.params["description"]))
    return world._replace(tickets={**world.tickets, e.target: t})


EVOLVERS = {
    "TicketCreated": on_ticket_created,
    "TicketUpdated": on_ticket_updated,
}
CHAOS = {"missing_field": on_chaos, "blocked_ticket": on_chaos, "conflicting_values": on_chaos}
