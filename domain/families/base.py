"""What a workflow family produces for one instance before the generic chaos is laid on: the
task (text and goal), the world it needs, and the chaos it offers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from companyos.events.types import (
    ApprovalTypeDefined,
    Goal,
    MetricRecorded,
    TicketCreated,
    TicketGoal,
)

from ..chaos import ChaosProfile
from ..company import Company, Draw


@dataclass(frozen=True, slots=True)
class ChaosItem:
    kind: str
    target: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Draft:
    text: str
    goal: Goal
    tickets: list[TicketCreated]
    """The task's tickets (the builder adds distractors)."""
    metrics: list[MetricRecorded]
    """The metrics the task reads, as their systems of record hold them."""
    types: list[ApprovalTypeDefined]
    """The task's approval types, bound to its metrics."""
    roles: tuple[str, ...]
    """Roles whose approvers the task needs."""
    apps: tuple[str, ...] = ("ticketdesk", "datahub", "approvalflow")
    original: list[ChaosItem] = field(default_factory=list)
    """Chaos of the original's kinds, where the original had it: each present with the
    level's set-up probability (all of it at level 2)."""
    extra: list[ChaosItem] = field(default_factory=list)
    """The same kinds on everything else the task needs (level 3)."""
    inherent: list[ChaosItem] = field(default_factory=list)
    """The family's own chaos, its reason to exist (from level 1)."""
    stale_values: dict[str, float] = field(default_factory=dict)
    """What a stale cache of each task metric serves."""
    base_steps: int = 20
    hidden: str | None = None
    """The draw (a purpose of the family's `Draw`) that decides which way the task goes (qualify
    or decline, above or below a threshold). The step budget is the larger of both ways, so
    that the budget says nothing of the answer."""


class Family(Protocol):
    name: str
    title: str
    summary: str
    original: bool
    """One of the original CompanyOS's five workflows."""
    hidden: str | None
    """The name of the draw that decides which way the task goes (a family without one sets
    None): `domain.instances` draws it per level, not per seed alone."""

    def draft(
        self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile
    ) -> Draft: ...


def stale(metric: str, served: float, days: int) -> ChaosItem:
    return ChaosItem("stale_metric", metric, {"served_value": served, "age_minutes": days * 1440})


def away(company: Company, role: str) -> ChaosItem:
    holder = company.staff[role].holder
    name = company.name_of(holder)
    return ChaosItem(
        "out_of_office", holder, {"note": f"Auto-reply: {name} is out of office this week."}
    )


def missing(ticket_id: str, field_name: str) -> ChaosItem:
    return ChaosItem("missing_field", ticket_id, {"field": field_name})


def blocked(ticket_id: str, reason: str) -> ChaosItem:
    return ChaosItem("blocked_ticket", ticket_id, {"reason": reason})


def open_ticket(
    tid: str, title: str, description: str, priority: str, assignee: str
) -> TicketCreated:
    """A task's ticket as it is created: open, unverified (chaos may then take fields away)."""
    return TicketCreated(
        ticket_id=tid,
        title=title,
        description=description,
        priority=priority,
        assignee=assignee,
        status="open",
    )


def must(
    priority: str | None = None,
    assignee: str | None = None,
    *,
    verify: bool = False,
    unblocked: bool = False,
    resolved: bool = False,
) -> str:
    """What a ticket must look like, in words: every value the goal checks is stated, so the
    task can be done from what it says even after chaos has wiped a field."""
    parts = []
    if unblocked:
        parts.append("not be blocked")
    if priority:
        parts.append(f"have priority '{priority}'")
    if assignee:
        parts.append(f"be assigned to {assignee}")
    if resolved:
        parts.append("be resolved")
    if verify:
        parts.append("be verified")
    words = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    return f"must {words}"


def task_ticket(tid: str, priority: str, assignee: str, *, verify: bool = True) -> TicketGoal:
    """The usual goal for a task's ticket: these values, not blocked, and (mostly) verified."""
    return TicketGoal(
        ticket_id=tid,
        fields={"priority": priority, "assignee": assignee},
        unblock=True,
        verify=verify,
    )
