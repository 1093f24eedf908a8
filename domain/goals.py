"""Predicates over the world that say how far a task's goal is met: what grading, the reward's
milestones and the oracle all ask. Strict on purpose: the right tickets with the right values,
the right approver at the time, data read fresh before acting on it, the approvals in order, and
nothing changed that the task did not call for."""

from __future__ import annotations

from collections.abc import Callable

from companyos.events.types import ApprovalGoal, Goal, TicketGoal

from .approvalflow import request_object
from .model import Approval, Metric, Ticket, World, mentions, same_text

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
        and ev.duplicate_of is None
        and about_the_task(a, ag)
        and all(ticket_ready(ev.tickets.get(tg.ticket_id), tg) for tg in goal.tickets)
        and read_fresh_then(ev.metrics, goal.metrics, ev.at)
        and _priors_ok(world, a, goal, index)
    )


def about_the_task(a: Approval, ag: ApprovalGoal) -> bool:
    """The request's text fields say what the task's approval is about: the values the goal
    expects, and the words it must name."""
    return all(same_text(a.data.get(k), v) for k, v in ag.data.items()) and all(
        mentions(a.data.get(k), w) for k, w in ag.mentions.items()
    )


def _priors_ok(world: World, a: Approval, goal: Goal, index: int) -> bool:
    """Every sign-off a request names is the task's own earlier approval, made right and
    approved; a sign-off the task does not need is not named at all."""
    atype = world.approval_types.get(a.approval_type)
    if atype is None:
        return False
    for f in atype.fields:
        if f.kind != "approval":
            continue
        value = a.data.get(f.key)
        named = value.strip().upper() if isinstance(value, str) and value.strip() else None
        slots = [j for j in range(index) if goal.approvals[j].approval_type == f.approval_type]
        if not slots:
            if named is not None:
                return False
            continue
        prior = world.approvals.get(named) if named else None
        if prior is None or prior.status != "approved":
            return False
        if not any(submission_ok(world, prior, goal, j) for j in slots):
            return False
    return True


def _names_ticket(world: World, approval_type: str) -> bool:
    """Requests of this type name their ticket (the original's types mostly did not: their
    request is about the task's ticket by being the task's request)."""
    t = world.approval_types.get(approval_type)
    return t is None or any(f.kind == "ticket" for f in t.fields)


def valid_submissions(world: World, goal: Goal, index: int) -> list[Approval]:
    return [a for a in world.approvals.values() if submission_ok(world, a, goal, index)]


def approved(world: World, goal: Goal, index: int) -> bool:
    """Some valid submission of the ``index``-th approval is approved. The status is asked
    first: a request not approved is not judged (most requests, most steps)."""
    return any(
        a.status == "approved" and submission_ok(world, a, goal, index)
        for a in world.approvals.values()
    )


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
    fields changed beyond the goal (closing it, a wrong decision), and every request the task
    did not ask for: a type it does not need (any at all in a decline task), a request about
    another ticket or dataset, one sent to someone who could not act on it (the wrong person,
    or someone out of office), a second request while the first was still live (a hedge), and
    a request approved although it was not made right (data unread, the ticket not ready)."""
    assert world.task is not None
    g = world.task.goal
    return _ticket_damage(world, g) + _request_damage(world, g)


def _ticket_damage(world: World, g: Goal) -> list[str]:
    base = world.baseline if world.baseline is not None else world.tickets
    wanted = {tg.ticket_id: tg for tg in g.tickets}
    out: list[str] = []
    for tid, t in world.tickets.items():
        before = base.get(tid)
        if before is None or before is t:  # a ticket never touched is the very same object
            continue
        out += ticket_damage(tid, before, t, wanted.get(tid))
    return out


def ticket_damage(tid: str, before: Ticket, t: Ticket, tg: TicketGoal | None) -> list[str]:
    """The fields of ticket ``tid`` changed from ``before`` to ``t`` that its goal ``tg`` (None:
    the task has none for it) does not call for."""
    out = []
    for name in EDITABLE:
        old, new = before.get(name), t.get(name)
        if old == new or (tg is not None and _called_for(tg, name, old, new)):
            continue
        out.append(f"{tid}.{name}")
    return out


def request_slots(g: Goal) -> dict[str, list[int]]:
    """Per approval type, the indices of the task's approvals of that type."""
    slots: dict[str, list[int]] = {}
    for i, ag in enumerate(g.approvals):
        slots.setdefault(ag.approval_type, []).append(i)
    return slots


def _request_damage(world: World, g: Goal) -> list[str]:
    if not world.approvals:
        return []
    slots = request_slots(g)
    out: list[str] = []
    for a in world.approvals.values():
        out += request_damage(world, a, g, slots)
    return out


def request_damage(
    world: World,
    a: Approval,
    g: Goal,
    slots: dict[str, list[int]],
    ok: Callable[[World, Approval, Goal, int], bool] | None = None,
) -> list[str]:
    """What is wrong with request ``a`` for the task (``slots``: `request_slots` of its goal;
    ``ok``: `submission_ok`, or a caller's memo of it)."""
    ok = ok or submission_ok
    atype = world.approval_types.get(a.approval_type)
    tag = f"{a.approval_id}:{a.approval_type}"
    grants = atype is not None and atype.grants is not None
    if atype is None or (a.approval_type not in slots and not (grants and g.access)):
        return [tag]
    out = []
    if a.approver != a.evidence.routed_to:
        out.append(f"{tag}:approver")
    about = request_object(atype, a.data)
    if grants:
        if about not in g.access:
            out.append(f"{tag}:object")
    elif (about != g.ticket_id and _names_ticket(world, a.approval_type)) or not any(
        about_the_task(a, g.approvals[i]) for i in slots[a.approval_type]
    ):
        out.append(f"{tag}:object")  # another ticket, vendor, employee, report, ...
    if a.evidence.duplicate_of is not None:
        out.append(f"{tag}:duplicate")
    if (
        a.status == "approved"
        and not grants
        and not any(ok(world, a, g, i) for i in slots[a.approval_type])
    ):
        out.append(f"{tag}:unfit")
    return out


def names_priors(world: World, approval_type: str) -> bool:
    """Requests of this type name earlier sign-offs: whether one is made right depends on
    other requests too, not on itself alone."""
    t = world.approval_types.get(approval_type)
    return t is not None and any(f.kind == "approval" for f in t.fields)


def _called_for(tg: TicketGoal, name: str, old: object, new: object) -> bool:
    if name in tg.fields or name in ("verified", "linked_approval"):
        return True  # verifying or linking a task ticket is never harm
    if name == "status":
        allowed = {"open", "in_progress"} | ({tg.status} if tg.status else set())
        return new in allowed and (old != "blocked" or tg.unblock)
    return name == "resolution" and tg.resolution is not None and new == tg.resolution


def finished(world: World) -> bool:
    """The work is observably over, right or wrong: a decision recorded on the task's ticket,
    or a request of a type that ends the task approved. What counts is the same whichever way
    the task's hidden values fall, so an episode's end tells the agent nothing of its grade."""
    assert world.task is not None
    g = world.task.goal
    main = world.tickets.get(g.ticket_id)
    if main is not None and main.resolution is not None:
        return True
    ends = g.finishing_types
    return any(a.status == "approved" and a.approval_type in ends for a in world.approvals.values())


def complete(world: World) -> bool:
    """The task's work is done: the last approval approved, or the right decision made."""
    assert world.task is not None
    g = world.task.goal
    if g.decision != "approve":
        return decision_ok(world, g)
    return bool(g.approvals) and approved(world, g, len(g.approvals) - 1)


def success(world: World) -> bool:
    return world.task is not None and complete(world) and not collateral(world)
