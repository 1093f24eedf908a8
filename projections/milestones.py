"""Milestones: predicates over the world arranged as a dependency graph per task.

A milestone counts only while its predicate holds *and* every prerequisite counts, so progress
made out of order or on the wrong object is worth nothing, and undoing a step takes its credit
away again (the original's flags never reset).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from companyos.domain import goals
from companyos.domain.model import World
from companyos.events.types import Goal

FIELD_KINDS = {"priority": "set_priority", "assignee": "set_assignee"}


@dataclass(frozen=True, slots=True)
class Milestone:
    id: str
    kind: str
    """The reward-profile weight it earns."""
    prereqs: tuple[str, ...]
    check: Callable[[World], bool]


def milestones_for(goal: Goal) -> tuple[Milestone, ...]:
    """The task's milestones in dependency order (every prerequisite comes first)."""
    g = goal
    ms: list[Milestone] = []
    ticket_ids: list[str] = []
    if g.unblock:
        ms.append(Milestone("ticket_unblocked", "unblock", (), lambda w: goals.unblocked(w, g)))
        ticket_ids.append("ticket_unblocked")
    for name in g.ticket_fields:
        mid = f"ticket_{name}"
        ms.append(
            Milestone(
                mid,
                FIELD_KINDS.get(name, "fix_field"),
                (),
                lambda w, n=name: goals.field_ok(w, g, n),
            )
        )
        ticket_ids.append(mid)
    ready = tuple(ticket_ids)
    if g.verify:
        ms.append(Milestone("ticket_verified", "verify", ready, lambda w: goals.verified(w, g)))
        ready = ("ticket_verified",)
    reads: list[str] = []
    for metric in g.metrics:
        fresh, read = f"data_fresh:{metric}", f"data_read:{metric}"
        ms.append(
            Milestone(fresh, "refresh_stale", (), lambda w, m=metric: goals.metric_fresh(w, m))
        )
        ms.append(
            Milestone(read, "fresh_read", (fresh,), lambda w, m=metric: goals.metric_read(w, m))
        )
        reads.append(read)
    ms.append(
        Milestone(
            "approval_submitted",
            "valid_submission",
            ready + tuple(reads),
            lambda w: bool(goals.valid_submissions(w, g)),
        )
    )
    ms.append(
        Milestone(
            "approval_approved", "approved", ("approval_submitted",), lambda w: goals.approved(w, g)
        )
    )
    return tuple(ms)


SUCCESS = "approval_approved"


def achieved(world: World, graph: tuple[Milestone, ...]) -> frozenset[str]:
    done: set[str] = set()
    for m in graph:
        if done.issuperset(m.prereqs) and m.check(world):
            done.add(m.id)
    return frozenset(done)


def progress(graph: tuple[Milestone, ...], done: frozenset[str]) -> dict[str, bool]:
    return {m.id: m.id in done for m in graph}
