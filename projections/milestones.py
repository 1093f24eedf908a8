"""Milestones: predicates over the world arranged as a dependency graph per task.

A milestone counts only while its predicate holds *and* every prerequisite counts, so progress
made out of order or on the wrong object is worth nothing, and undoing a step takes its credit
away again (the original's flags never reset).

Each milestone also says which part of the world its predicate reads (the task's ticket, one
metric, the approvals). The world is immutable and a step replaces only what it changes, so a
milestone whose part is the very same object as last time has the same value: the graph keeps
the last (part, value) per milestone and re-evaluates only what a step touched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from companyos.domain import goals
from companyos.domain.model import World
from companyos.events.types import Goal

FIELD_KINDS = {"priority": "set_priority", "assignee": "set_assignee"}
SUCCESS = "approval_approved"
_NOTHING = object()


@dataclass(frozen=True, slots=True)
class Milestone:
    id: str
    kind: str
    """The reward-profile weight it earns."""
    prereqs: tuple[str, ...]
    check: Callable[[World], bool]
    reads: Callable[[World], Any]
    """The part of the world ``check`` depends on (compared by identity)."""


class MilestoneGraph:
    """A task's milestones in dependency order, with the memo described above."""

    def __init__(self, milestones: tuple[Milestone, ...]) -> None:
        self.milestones = milestones
        self.ids = tuple(m.id for m in milestones)
        self._memo: list[tuple[Any, bool]] = [(_NOTHING, False)] * len(milestones)
        self._phi: dict[tuple[int, frozenset[str]], tuple[Any, float]] = {}

    def __iter__(self) -> Iterator[Milestone]:
        return iter(self.milestones)

    def __len__(self) -> int:
        return len(self.milestones)

    def __getitem__(self, i: int) -> Milestone:
        return self.milestones[i]

    def achieved(self, world: World) -> frozenset[str]:
        done: set[str] = set()
        memo = self._memo
        parts: dict[Any, Any] = {}  # milestones share their readers: read each part once
        for i, m in enumerate(self.milestones):
            part = parts.get(m.reads, _NOTHING)
            if part is _NOTHING:
                part = parts[m.reads] = m.reads(world)
            seen, value = memo[i]
            if seen is not part:
                value = m.check(world)
                memo[i] = (part, value)
            if value and done.issuperset(m.prereqs):
                done.add(m.id)
        return frozenset(done)

    def potential(self, done: frozenset[str], profile: Any) -> float:
        """The weight of the milestones in ``done`` (a task sees only a few distinct sets)."""
        key = (id(profile), done)
        hit = self._phi.get(key)
        if hit is not None and hit[0] is profile:
            return hit[1]
        phi = sum(profile.weight(m.kind) for m in self.milestones if m.id in done)
        self._phi[key] = (profile, phi)
        return phi


def milestones_for(goal: Goal) -> MilestoneGraph:
    """The task's milestones in dependency order (every prerequisite comes first)."""
    g = goal

    def ticket(w: World) -> Any:
        return w.tickets.get(g.ticket_id)

    def approvals(w: World) -> Any:
        return w.approvals

    ms: list[Milestone] = []
    ticket_ids: list[str] = []
    if g.unblock:
        ms.append(
            Milestone("ticket_unblocked", "unblock", (), lambda w: goals.unblocked(w, g), ticket)
        )
        ticket_ids.append("ticket_unblocked")
    for name in g.ticket_fields:
        mid = f"ticket_{name}"
        kind = FIELD_KINDS.get(name, "fix_field")
        ms.append(Milestone(mid, kind, (), lambda w, n=name: goals.field_ok(w, g, n), ticket))
        ticket_ids.append(mid)
    ready = tuple(ticket_ids)
    if g.verify:
        ms.append(
            Milestone("ticket_verified", "verify", ready, lambda w: goals.verified(w, g), ticket)
        )
        ready = ("ticket_verified",)
    reads: list[str] = []
    for metric in g.metrics:
        fresh, read = f"data_fresh:{metric}", f"data_read:{metric}"

        def part(w: World, m: str = metric) -> Any:
            return w.metrics.get(m)

        ms.append(
            Milestone(
                fresh, "refresh_stale", (), lambda w, m=metric: goals.metric_fresh(w, m), part
            )
        )
        ms.append(
            Milestone(
                read, "fresh_read", (fresh,), lambda w, m=metric: goals.metric_read(w, m), part
            )
        )
        reads.append(read)
    ms.append(
        Milestone(
            "approval_submitted",
            "valid_submission",
            ready + tuple(reads),
            lambda w: bool(goals.valid_submissions(w, g)),
            approvals,
        )
    )
    ms.append(
        Milestone(
            SUCCESS, "approved", ("approval_submitted",), lambda w: goals.approved(w, g), approvals
        )
    )
    return MilestoneGraph(tuple(ms))


def achieved(world: World, graph: MilestoneGraph) -> frozenset[str]:
    return graph.achieved(world)


def progress(graph: MilestoneGraph, done: frozenset[str]) -> dict[str, bool]:
    return {i: i in done for i in graph.ids}
