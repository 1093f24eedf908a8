"""Predicates over the world that say how far a task's goal is met: what grading, the reward's
milestones and the oracle all ask. Strict on purpose: the right tickets with the right values,
the right approver at the time, data read fresh before acting on it, the approvals in order, and
nothing changed that the task did not call for."""

from __future__ import annotations

from companyos.events.types import Goal, TicketGoal

from .model import Approval, Metric, Ticket, World, same_text

EDITABLE = ("priority", "assignee", "status", "verified", "resolution", "linked_approval")
ANY_VALUE = "*"
"""A ticket goal's field value that any non-empty value meets: the original CompanyOS's tasks
asked for a missing priority or assignee to be set, not for a particular one."""
ANY_EXAMPLES = {"priority": "high", "assignee": "on-call engineer"}
"""What a planner sets where any value will do."""


# ------------------------------------------------------------------ tickets


def value_ok(have: object, want: str) -> bool:
    """A ticket field's value meets a goal's value (`ANY_VALUE`: any non-empty one)."""
    if want == ANY_VALUE:
        return isinstance(have, str) and bool(have.strip())
    return same_text(have, want)


def field_ok(t: Ticket | None, tg: TicketGoal, name: str) -> bool:
    return t is not None and value_ok(t.get(name), tg.fields[name])


def target_value(name: str, want: str) -> str:
    """A value that meets a ticket goal's ``want`` for field ``name``."""
    return ANY_EXAMPLES.get(name, "set") if want == ANY_VALUE else want


def unblocked(t: Ticket | None) -> bool:
    return t is not None and t.status != "blocked"


def verified(t: Ticket | None) -> bool:
    return t is not None and t.verified


def status_ok(t: Ticket | None, tg: TicketGoal) -> bool:
    return t is not None and t.status == tg.status


def ticket_ready(t: Ticket | None, tg: TicketGoal) -> bool:
    """Everything the goal asks of the ticket except a decision."""
    return (
        t is not None
        and all(field_ok(t, tg, f) for f in tg.fields)
        and (not tg.unblock or t.status != "blocked")
        and (not tg.verify or t.verified)
        and (tg.status is None or t.status == tg.status)
    )


# ------------------------------------------------------------------ data


def metric_fresh(world: World, metric: str) -> bool:
    m = world.metrics.get(metric)
    return m is not None and not m.stale(world.clock)


def metric_read(world: World, metric: str) -> bool:
    m = world.metrics.get(metric)
    return m is not None and m.read_fresh(world.clock)


def read_fresh_then(metrics: dict[str, Metric] | object, names: tuple[str, ...], at: int) -> bool:
    got = metrics  # a snapshot of world.metrics
    return all(
        (m := got.get(n)) is not None and m.read_fresh(at)  # type: ignore[attr-defined]
        for n in names
    )


def access_ok(world: World, dataset: str) -> bool:
    return dataset in world.grants


# ------------------------------------------------------------------ approvals


def submission_ok(world: World, a: Approval, goal: Goal, index: int) -> bool:
    """``a`` is the request the ``index``-th approval of the task asks for, made right."""
    ag = goal.approvals[index]
    ev = a.evidence
    return (
        a.approval_type == ag.approval_type
        and a.approver == ev.routed_to
        and (a.ticket_id == goal.ticket_id or not _names_ticket(world, a.approval_type))
        and not ev.mismatched
        and not ev.unread
        and not ev.prior_missing
        and all(same_text(a.data.get(k), v) for k, v in ag.data.items())
        and all(ticket_ready(ev.tickets.get(tg.ticket_id), tg) for tg in goal.tickets)
        and read_fresh_then(ev.metrics, goal.metrics, ev.at)
    )


def _names_ticket(world: World, approval_type: str) -> bool:
    """Requests of this type name their ticket (the original's types mostly did not: their
    request is about the task's ticket by being the task's request)."""
    t = world.approval_types.get(approval_type)
    return t is None or any(f.kind == "ticket" for f in t.fields)


def valid_submissions(world: World, goal: Goal, index: int) -> list[Approval]:
    return [a for a in world.approvals.values() if submission_ok(world, a, goal, index)]


def approved(world: World, goal: Goal, index: int) -> bool:
    return any(a.status == "approved" for a in valid_submissions(world, goal, index))


# ------------------------------------------------------------------ decisions


def decision_ok(world: World, goal: Goal) -> bool:
    """A decision task's main ticket carries the right resolution, set on data read fresh."""
    tg = goal.tickets[0]
    t = world.tickets.get(tg.ticket_id)
    return (
        t is not None
        and tg.resolution is not None
        and t.resolution == tg.resolution
        and t.decided_at is not None
        and t.decided_metrics is not None
        and read_fresh_then(t.decided_metrics, goal.metrics, t.decided_at)
    )


# ------------------------------------------------------------------ the whole task


def collateral(world: World) -> list[str]:
    """What changed that the task did not call for: other tickets touched, a task ticket's
    fields changed beyond the goal (closing it, a wrong decision), approvals requested that the
    task does not need (any at all in a decline task: an infeasible request pushed through)."""
    assert world.task is not None
    g = world.task.goal
    base = world.baseline if world.baseline is not None else world.tickets
    wanted = {tg.ticket_id: tg for tg in g.tickets}
    out = []
    for tid, t in world.tickets.items():
        before = base.get(tid)
        if before is None:
            continue
        tg = wanted.get(tid)
        for name in EDITABLE:
            old, new = before.get(name), t.get(name)
            if old == new or (tg is not None and _called_for(tg, name, old, new)):
                continue
            out.append(f"{tid}.{name}")
    types = {ag.approval_type for ag in g.approvals} | ({"data_access"} if g.access else set())
    out += [
        f"{a.approval_id}:{a.approval_type}"
        for a in world.approvals.values()
        if a.approval_type not in types
    ]
    return out


def _called_for(tg: TicketGoal, name: str, old: object, new: object) -> bool:
    if name in tg.fields or name in ("verified", "linked_approval"):
        return True  # verifying or linking a task ticket is never harm
    if name == "status":
        allowed = {"open", "in_progress"} | ({tg.status} if tg.status else set())
        return new in allowed and (old != "blocked" or tg.unblock)
    return name == "resolution" and tg.resolution is not None and new == tg.resolution


def complete(world: World) -> bool:
    """The task's work is done: the last approval approved, or the right decision made."""
    assert world.task is not None
    g = world.task.goal
    if g.decision != "approve":
        return decision_ok(world, g)
    return bool(g.approvals) and approved(world, g, len(g.approvals) - 1)


def success(world: World) -> bool:
    return world.task is not None and complete(world) and not collateral(world)
