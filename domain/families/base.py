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


class Family(Protocol):
    name: str
    title: str
    summary: str
    original: bool
    """One of the original CompanyOS's five workflows."""

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


def task_ticket(tid: str, priority: str, assignee: str, *, verify: bool = True) -> TicketGoal:
    """The usual goal for a task's ticket: these values, not blocked, and (mostly) verified."""
    return TicketGoal(
        ticket_id=tid,
        fields={"priority": priority, "assignee": assignee},
        unblock=True,
        verify=verify,
    )
