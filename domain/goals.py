"""Predicates over the world that say how far a task's goal is met. Strict on purpose: the
right ticket, the right value, the right approver at the time, data read fresh before the
request went out."""

from __future__ import annotations

from companyos.events.types import Goal

from .model import Approval, Ticket, World, same_text


def task_ticket(world: World, goal: Goal) -> Ticket | None:
    return world.tickets.get(goal.ticket_id)


def field_ok(world: World, goal: Goal, name: str) -> bool:
    t = task_ticket(world, goal)
    return t is not None and same_text(t.get(name), goal.ticket_fields[name])


def unblocked(world: World, goal: Goal) -> bool:
    t = task_ticket(world, goal)
    return t is not None and t.status != "blocked"


def verified(world: World, goal: Goal) -> bool:
    t = task_ticket(world, goal)
    return t is not None and t.verified


def metric_fresh(world: World, metric: str) -> bool:
    m = world.metrics.get(metric)
    return m is not None and not m.stale


def metric_read(world: World, metric: str) -> bool:
    m = world.metrics.get(metric)
    return m is not None and m.read_fresh


def submission_ok(world: World, a: Approval, goal: Goal) -> bool:
    """The request is the one the task asks for, made the right way."""
    ev = a.evidence
    return (
        a.approval_type == goal.approval_type
        and a.approver == ev.routed_to
        and a.ticket_id == goal.ticket_id
        and (ev.ticket_verified or not goal.verify)
        and not ev.mismatched
        and not ev.unread
        and all(same_text(a.data.get(k), v) for k, v in goal.approval_data.items())
    )


def valid_submissions(world: World, goal: Goal) -> list[Approval]:
    return [a for a in world.approvals.values() if submission_ok(world, a, goal)]


def approved(world: World, goal: Goal) -> bool:
    return any(a.status == "approved" for a in valid_submissions(world, goal))
