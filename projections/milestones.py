"""Milestones: predicates over the world arranged as a dependency graph per task.

A milestone counts only while its predicate holds *and* every prerequisite counts, so progress
made out of order or on the wrong object is worth nothing, and undoing a step takes its credit
away again (the original's flags never reset). The last milestone is the task's end (the last
approval approved, or the right decision made); it needs `clean` (no collateral damage).

Each milestone also says which part of the world its predicate reads (the task's ticket, the
approvals, ...). The world is immutable and a step replaces only what it changes, so a
milestone whose part is the very same object(s) as last time has the same value: the graph
keeps the last (part, value) per milestone and re-evaluates only what a step touched. Those
that depend on the clock (data freshness) have no part and are always evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from companyos.domain import goals
from companyos.domain.model import Approval, Ticket, World
from companyos.events.types import Goal

FIELD_KINDS = {"priority": "set_priority", "assignee": "set_assignee"}
_NOTHING = object()
_FOREVER = 2**62


@dataclass(frozen=True, slots=True)
class Milestone:
    id: str
    kind: str
    """The reward-profile weight it earns."""
    prereqs: tuple[str, ...]
    check: Callable[[World], bool]
    reads: Callable[[World], Any] | None
    """The part(s) of the world ``check`` depends on, compared by identity (None: always
    evaluate)."""


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not tuple or type(b) is not tuple or len(a) != len(b):
        return False
    # A loop, not all() over a generator (a frame per call): asked for most milestones at
    # every step that changed the world.
    for x, y in zip(a, b, strict=True):  # noqa: SIM110
        if x is not y:
            return False
    return True


class GoalMemo:
    """`goals`' verdicts on single requests and tickets, kept per object. A request or ticket
    is immutable and a step replaces only what it changes, so a verdict holds while its object
    (and the approval types it was judged against) is the very same: a step re-judges only the
    request or ticket it touched, not every one. A request whose type names earlier sign-offs
    depends on those too and is judged afresh each time."""

    __slots__ = (
        "_ok",
        "_priors",
        "_requests",
        "_ticket_count",
        "_tickets",
        "_valid",
        "goal",
        "slots",
        "wanted",
    )

    def __init__(self, goal: Goal) -> None:
        self.goal = goal
        self.slots = goals.request_slots(goal)
        self.wanted = {tg.ticket_id: tg for tg in goal.tickets}
        self._ok: dict[tuple[int, int], tuple[Any, Any, Approval, bool]] = {}
        self._valid: dict[int, tuple[Any, Any, list[Approval]]] = {}
        self._tickets: dict[str, tuple[Ticket, Ticket, list[str]]] = {}
        self._requests: dict[int, tuple[Any, Any, Approval, list[str]]] = {}
        self._priors: tuple[Any, dict[str, bool]] = (_NOTHING, {})
        self._ticket_count: tuple[Any, Any, int] = (_NOTHING, _NOTHING, 0)

    def _alone(self, world: World, approval_type: str) -> bool:
        """Whether a request of this type is judged on itself alone (`goals.names_priors`)."""
        types, known = self._priors
        if types is not world.approval_types:
            known = {}
            self._priors = (world.approval_types, known)
        alone = known.get(approval_type)
        if alone is None:
            alone = known[approval_type] = not goals.names_priors(world, approval_type)
        return alone

    def submission_ok(self, world: World, a: Approval, goal: Goal, index: int) -> bool:
        """`goals.submission_ok` of the memo's goal (``goal`` is it: the signature is the
        function's, so that `goals.request_damage` can take either). Kept per submission, not
        per request object: polls and decisions replace the request but not what was submitted
        (its evidence, data, approver, type and ticket), which is all the verdict reads."""
        ev = a.evidence
        key = (id(ev), index)
        types = world.approval_types
        hit = self._ok.get(key)
        if hit is not None and hit[0] is ev and hit[1] is types and _submitted(hit[2], a):
            return hit[3]
        value = goals.submission_ok(world, a, self.goal, index)
        if self._alone(world, a.approval_type):
            if len(self._ok) >= _KEPT:
                self._ok.clear()
            self._ok[key] = (ev, types, a, value)  # holding ``ev``: its id cannot be reused
        return value

    def valid_submissions(self, world: World, index: int) -> list[Approval]:
        """`goals.valid_submissions`, asked again only when the requests changed."""
        hit = self._valid.get(index)
        if hit is not None and hit[0] is world.approvals and hit[1] is world.approval_types:
            return hit[2]
        ok, goal = self.submission_ok, self.goal
        out = [a for a in world.approvals.values() if ok(world, a, goal, index)]
        self._valid[index] = (world.approvals, world.approval_types, out)
        return out

    def approved(self, world: World, index: int) -> bool:
        """`goals.approved`."""
        return any(a.status == "approved" for a in self.valid_submissions(world, index))

    def collateral(self, world: World) -> int:
        """``len(goals.collateral(world))``, each ticket and request judged once per object."""
        n = self._ticket_damage(world)
        if not world.approvals:
            return n
        kept_r, types = self._requests, world.approval_types
        if len(kept_r) >= _KEPT:
            kept_r.clear()
        for a in world.approvals.values():
            ev = a.evidence
            hit_r = kept_r.get(id(ev))
            if (
                hit_r is not None
                and hit_r[0] is ev
                and hit_r[1] is types
                and _submitted(hit_r[2], a)
                and hit_r[2].approval_id == a.approval_id
                and (hit_r[2].status == "approved") == (a.status == "approved")
            ):
                n += len(hit_r[3])
                continue
            found = goals.request_damage(world, a, self.goal, self.slots, self.submission_ok)
            if self._alone(world, a.approval_type):
                kept_r[id(ev)] = (ev, types, a, found)
            n += len(found)
        return n

    def _ticket_damage(self, world: World) -> int:
        """The tickets' share of `collateral`, counted again only when the tickets or their
        baseline are other objects than last time (a poll or a read changes neither)."""
        tickets, baseline, n = self._ticket_count
        if world.tickets is tickets and world.baseline is baseline:
            return n
        n = 0
        base = world.baseline if world.baseline is not None else world.tickets
        kept_t = self._tickets
        for tid, t in world.tickets.items():
            before = base.get(tid)
            if before is None or before is t:
                continue
            hit = kept_t.get(tid)
            if hit is None or hit[0] is not before or hit[1] is not t:
                hit = kept_t[tid] = (
                    before,
                    t,
                    goals.ticket_damage(tid, before, t, self.wanted.get(tid)),
                )
            n += len(hit[2])
        # One tuple, read and replaced whole: a graph may be shared between threads.
        self._ticket_count = (world.tickets, world.baseline, n)
        return n


def _submitted(kept: Approval, a: Approval) -> bool:
    """``a`` is ``kept`` as submitted (same evidence known): polls and decisions since aside."""
    return (
        kept.data is a.data
        and kept.approver == a.approver
        and kept.approval_type == a.approval_type
        and kept.ticket_id == a.ticket_id
    )


_KEPT = 256
"""Verdicts a memo keeps at most: an episode has a few requests, and a graph shared by the
episodes of an instance (`graph_for`) needs only the live ones; each verdict holds its
request's evidence (a snapshot of tickets and metrics), so the memo stays small."""


class Collateral:
    """How many things the agent changed or asked for that the task did not call for
    (`goals.collateral`), counted again only when the tickets, their baseline or the approvals
    are other objects than last time (the world replaces only what a step changes), and then
    only for the tickets and requests that changed (`GoalMemo`). The `clean` milestone and the
    reward's damage term share one, so a step counts at most once."""

    __slots__ = ("_kept", "_memo")

    def __init__(self, memo: GoalMemo | None = None) -> None:
        self._kept: tuple[Any, Any, Any, int] = (_NOTHING, _NOTHING, _NOTHING, 0)
        self._memo = memo

    def __call__(self, world: World) -> int:
        # One tuple, read and replaced whole: a graph may be shared between threads.
        tickets, baseline, approvals, n = self._kept
        if world.tickets is tickets and world.approvals is approvals and world.baseline is baseline:
            return n
        if world.task is None:
            n = 0
        elif self._memo is not None and (
            self._memo.goal is world.task.goal or self._memo.goal == world.task.goal
        ):
            n = self._memo.collateral(world)
        else:
            n = len(goals.collateral(world))
        self._kept = (world.tickets, world.baseline, world.approvals, n)
        return n


class MilestoneGraph:
    """A task's milestones in dependency order, with the memo described above."""

    def __init__(
        self,
        milestones: tuple[Milestone, ...],
        collateral: Collateral | None = None,
        memo: GoalMemo | None = None,
    ) -> None:
        self.milestones = milestones
        self.ids = tuple(m.id for m in milestones)
        self.success_id = milestones[-1].id
        self._memo: list[tuple[Any, bool]] = [(_NOTHING, False)] * len(milestones)
        self._phi: dict[tuple[int, frozenset[str]], tuple[Any, float]] = {}
        self._weights: dict[int, tuple[Any, tuple[tuple[str, float], ...]]] = {}
        self._collateral = collateral if collateral is not None else Collateral(memo)
        self.memo = memo
        """The per-submission verdicts the predicates share (None: a graph built without)."""
        self.metrics: tuple[str, ...] = ()
        """The goal's metrics: the only part of a predicate that the clock alone changes."""
        self._last: tuple[Any, int, int, frozenset[str]] | None = None
        self._finished: tuple[Any, Any, bool] = (_NOTHING, _NOTHING, False)

    def __iter__(self) -> Iterator[Milestone]:
        return iter(self.milestones)

    def __len__(self) -> int:
        return len(self.milestones)

    def __getitem__(self, i: int) -> Milestone:
        return self.milestones[i]

    def achieved(self, world: World) -> frozenset[str]:
        """The milestones that count in ``world``. A step that replaced none of the parts the
        predicates read, while no goal metric crossed its freshness limit, gets the last answer
        back (`_last_answer`); otherwise each milestone is checked unless its own part is the
        same as last time."""
        key, done = self._last_answer(world)
        if done is not None:
            return done
        done = self._evaluate(world)
        self._last = (key, world.clock, self._fresh_until(world), done)
        return done

    def reached(self, world: World) -> bool:
        """Whether the task's end counts in ``world`` (``success_id in achieved(world)``).
        A milestone counts only if its own predicate holds, so the end's predicate is asked
        first: while it does not hold (nearly every step of a simulated fork, which needs
        only this) no other milestone is checked. Its verdict is kept in the same memo
        `_evaluate` keeps, under the same rule (same part, same value)."""
        done = self._last_answer(world)[1]
        if done is not None:
            return self.success_id in done
        i = len(self.milestones) - 1
        m = self.milestones[i]
        if m.reads is None:
            value = m.check(world)
        else:
            part = m.reads(world)
            seen, value = self._memo[i]
            if not _same(seen, part):
                value = m.check(world)
                self._memo[i] = (part, value)
        return bool(value) and self.success_id in self.achieved(world)

    def _last_answer(self, world: World) -> tuple[tuple[Any, ...], frozenset[str] | None]:
        """The parts of ``world`` the predicates read (compared by identity), and the last
        answer if it still holds for them at this clock (else None)."""
        last = self._last
        if last is not None and last[1] <= world.clock < last[2]:
            kept = last[0]  # compared in place: the key tuple is built only on a miss
            if (
                kept[0] is world.tickets
                and kept[1] is world.approvals
                and kept[2] is world.baseline
                and kept[3] is world.grants
                and kept[4] is world.metrics
                and kept[5] is world.approval_types
            ):
                return kept, last[3]
        key = (
            world.tickets,
            world.approvals,
            world.baseline,
            world.grants,
            world.metrics,
            world.approval_types,
        )
        return key, None

    def _fresh_until(self, world: World) -> int:
        """The first clock minute at which a goal metric that is fresh now goes stale: until
        then (and from now on) every clock-dependent predicate keeps its value."""
        until = _FOREVER
        for name in self.metrics:
            m = world.metrics.get(name)
            if m is not None and not m.stale(world.clock):
                until = min(until, m.as_of + m.max_age + 1)
        return until

    def _evaluate(self, world: World) -> frozenset[str]:
        done: set[str] = set()
        memo = self._memo
        parts: dict[Any, Any] = {}  # milestones share their readers: read each part once
        for i, m in enumerate(self.milestones):
            reads = m.reads
            if reads is None:
                value = m.check(world)
            else:
                part = parts.get(reads, _NOTHING)
                if part is _NOTHING:
                    part = parts[reads] = reads(world)
                seen, value = memo[i]
                if seen is not part and not _same(seen, part):
                    value = m.check(world)
                    memo[i] = (part, value)
            if value and (not m.prereqs or done.issuperset(m.prereqs)):
                done.add(m.id)
        return frozenset(done)

    def finished(self, world: World) -> bool:
        """`goals.finished`, asked again only when the tickets or the requests changed."""
        key = self._finished
        if world.tickets is key[0] and world.approvals is key[1]:
            return bool(key[2])
        done = goals.finished(world)
        self._finished = (world.tickets, world.approvals, done)
        return done

    def damage(self, world: World) -> int:
        """How many things the agent changed or asked for that the task did not call for
        (`goals.collateral`), re-counted only when tickets or approvals changed."""
        return self._collateral(world)

    def potential(self, done: frozenset[str], profile: Any) -> float:
        """The weight of the milestones in ``done`` (a task sees only a few distinct sets)."""
        key = (id(profile), done)
        hit = self._phi.get(key)
        if hit is not None and hit[0] is profile:
            return hit[1]
        weights = self._weights.get(id(profile))
        if weights is None or weights[0] is not profile:
            # Kept per (frozen) profile: every new set of a new instance's graph asks for them.
            weights = (profile, tuple((m.id, profile.weight(m.kind)) for m in self.milestones))
            self._weights[id(profile)] = weights
        # Summed in the milestones' order, as ever: the same float, bit for bit.
        phi = sum(w for i, w in weights[1] if i in done)
        self._phi[key] = (profile, phi)
        return phi


def milestones_for(goal: Goal) -> MilestoneGraph:
    """The task's milestones in dependency order (every prerequisite comes first)."""
    g = goal
    ms: list[Milestone] = []
    memo = GoalMemo(g)
    damage = Collateral(memo)
    settled_memo: list[tuple[Any, bool]] = [(_NOTHING, False)]

    def approvals(w: World) -> Any:
        return w.approvals

    def settled(w: World) -> bool:
        # Once the task's work stands on fresh data, later staleness cannot take that away.
        if g.decision != "approve":
            return goals.decision_ok(w, g)
        if not g.approvals:
            return False
        # Read by the freshness milestones every step; it depends only on the requests.
        approvals, value = settled_memo[0]
        if w.approvals is not approvals:
            value = bool(memo.valid_submissions(w, 0))
            settled_memo[0] = (w.approvals, value)
        return value

    ready: list[str] = []
    for j, tg in enumerate(g.tickets):
        tid = tg.ticket_id
        suffix = "" if j == 0 else f":{tid}"

        def ticket(w: World, _t: str = tid) -> Any:
            return w.tickets.get(_t)

        fixes: list[str] = []
        if tg.unblock:
            ms.append(
                Milestone(
                    f"ticket_unblocked{suffix}",
                    "unblock",
                    (),
                    lambda w, _t=tid: goals.unblocked(w.tickets.get(_t)),
                    ticket,
                )
            )
            fixes.append(ms[-1].id)
        for name in tg.fields:
            ms.append(
                Milestone(
                    f"ticket_{name}{suffix}",
                    FIELD_KINDS.get(name, "fix_field"),
                    (),
                    lambda w, _t=tid, _n=name, _g=tg: goals.field_ok(w.tickets.get(_t), _g, _n),
                    ticket,
                )
            )
            fixes.append(ms[-1].id)
        last = tuple(fixes)
        if tg.verify:
            ms.append(
                Milestone(
                    f"ticket_verified{suffix}",
                    "verify",
                    last,
                    lambda w, _t=tid: goals.verified(w.tickets.get(_t)),
                    ticket,
                )
            )
            last = (ms[-1].id,)
        if tg.status is not None:
            ms.append(
                Milestone(
                    f"ticket_{tg.status}{suffix}",
                    "resolve_ticket",
                    last,
                    lambda w, _t=tid, _g=tg: goals.status_ok(w.tickets.get(_t), _g),
                    ticket,
                )
            )
            last = (ms[-1].id,)
        ready += last
    for dataset in g.access:
        ms.append(
            Milestone(
                f"access:{dataset}",
                "access",
                (),
                lambda w, _d=dataset: goals.access_ok(w, _d),
                lambda w: w.grants,
            )
        )
        ready.append(ms[-1].id)
    for metric in g.metrics:
        fresh, read = f"data_fresh:{metric}", f"data_read:{metric}"
        ms.append(
            Milestone(
                fresh,
                "refresh_stale",
                (),
                lambda w, _m=metric: goals.metric_fresh(w, _m) or settled(w),
                None,
            )
        )
        ms.append(
            Milestone(
                read,
                "fresh_read",
                (fresh,),
                lambda w, _m=metric: goals.metric_read(w, _m) or settled(w),
                None,
            )
        )
    ms.append(
        Milestone(
            "clean",
            "clean",
            (),
            lambda w: not damage(w),
            lambda w: (w.tickets, w.approvals, w.baseline),
        )
    )
    if g.decision != "approve":
        ms.append(
            Milestone(
                f"decided:{g.decision}",
                "decision",
                (*ready, "clean"),
                lambda w: goals.decision_ok(w, g),
                lambda w, _t=g.ticket_id: w.tickets.get(_t),
            )
        )
        return _with_metrics(MilestoneGraph(tuple(ms), damage, memo), g)
    before: tuple[str, ...] = tuple(ready)
    for i, ag in enumerate(g.approvals):
        final = i == len(g.approvals) - 1
        sid, aid = f"submitted:{ag.approval_type}", f"approved:{ag.approval_type}"
        ms.append(
            Milestone(
                sid,
                "valid_submission",
                before,
                lambda w, _i=i: bool(memo.valid_submissions(w, _i)),
                approvals,
            )
        )
        ms.append(
            Milestone(
                aid,
                "approved",
                (sid, "clean") if final else (sid,),
                lambda w, _i=i: memo.approved(w, _i),
                approvals,
            )
        )
        before = (aid,)
    clean = next(m for m in ms if m.id == "clean")
    ms.remove(clean)
    ms.insert(len(ms) - 1, clean)  # just before the end it guards
    return _with_metrics(MilestoneGraph(tuple(ms), damage, memo), g)


_GRAPHS: dict[int, tuple[Goal, MilestoneGraph]] = {}
GRAPHS_KEPT = 64
"""Goals whose graph `graph_for` keeps (the instances a training loop cycles through; all are
dropped when it is full, as the store's caches do)."""


def graph_for(goal: Goal) -> MilestoneGraph:
    """`milestones_for`, shared by every episode whose task is this very goal object (the
    episodes of a cached instance): its memos carry over, so an instance played again starts
    with its first score known and re-judges nothing it judged before. Sharing between
    episodes and threads is safe: every memo entry is one immutable tuple, checked by the
    identity of what it was computed from, whichever episode asked (and two threads that miss
    together build two graphs, both right)."""
    hit = _GRAPHS.get(id(goal))
    if hit is not None and hit[0] is goal:
        return hit[1]
    graph = milestones_for(goal)
    if len(_GRAPHS) >= GRAPHS_KEPT:
        _GRAPHS.clear()
    _GRAPHS[id(goal)] = (goal, graph)  # holding the goal: its id cannot be reused
    return graph


def _with_metrics(graph: MilestoneGraph, goal: Goal) -> MilestoneGraph:
    graph.metrics = tuple(goal.metrics)
    return graph


def achieved(world: World, graph: MilestoneGraph) -> frozenset[str]:
    return graph.achieved(world)


def progress(graph: MilestoneGraph, done: frozenset[str]) -> dict[str, bool]:
    return {i: i in done for i in graph.ids}
