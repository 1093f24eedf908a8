"""Causal failure analysis: the first unrecovered mistake of a failed episode.

`diagnose` folds an ended, failed episode (timeout or abandoned) and lists every mistake it can
see, each at the step it was made: bad calls, hammering a rate limit, harm done to tickets,
defective requests (judged on the evidence each was submitted with, as the approver and grading
judge it), wrong decisions. Omissions (a fault not retried, access never asked for, a rejection
left standing) sit at the first step where the oracle, planning on the world as it then was,
would have done the thing and the agent did not: the oracle may put other work first, so a
budget that ran out before the thing was due blames nothing. Each mistake says what makes it
good (a corrected call, a retry, a resubmission without the defect, the ticket put back); the
answer is the earliest one nothing later made good. Only when there is none: how the episode
idled away its last steps (polling, looking, looping), else a fallback (ran out of steps, quit).

Pure like every projection: the log in, a label out. `LABELS` is the documented taxonomy
(docs/failure_taxonomy.md); its order breaks ties between mistakes of one step, so it follows
the workflow (the call itself, tickets, access, data, routing, outcomes, time).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from companyos.domain import goals
from companyos.domain.catalogue import APPS, TOOLS, methods
from companyos.domain.model import (
    MINUTES_PER_STEP,
    Approval,
    ApprovalType,
    Metric,
    World,
    as_number,
    normalize_ticket_id,
    same_text,
)
from companyos.domain.oracle import WAIT, Call, plan
from companyos.events.store import RecordedEvent
from companyos.events.types import (
    ActionRejected,
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalSubmitted,
    Event,
    FaultInjected,
    InvalidAction,
    TicketUpdated,
)

from .replay import Replay, StepRecord, replay

LABELS: dict[str, str] = {
    "hallucinated_tool": "Called a tool that does not exist (an unknown app or method).",
    "invalid_params": "Called a real tool with parameters it cannot accept: malformed or "
    "missing arguments, or an id or name that names nothing.",
    "ignored_rate_limit": "Called a rate-limited service again before the retry-after it was "
    "given (every call counts, so hammering keeps it closed) and never got a call through.",
    "no_retry_after_fault": "A call that would have changed the world was refused by the "
    "service (transient fault, rate limit, outage) and never made again when it was due.",
    "closed_blocked_ticket": "Tried to close one of the task's tickets while it was blocked "
    "instead of resolving the blocker first.",
    "collateral_damage": "Changed something the task did not call for: another ticket, a field "
    "of a task ticket beyond the goal, an approval request of a type the task does not need, "
    "about another ticket or dataset, or made twice while the first was still live.",
    "undid_progress": "Reverted work the task needs: un-verified a task ticket, moved it off "
    "the status the task asks for, or withdrew a right decision.",
    "premature_request": "Submitted a request while a task ticket still lacked a fix the task "
    "asks for (a missing field, still blocked, not yet resolved).",
    "skipped_verification": "Acted on a ticket without the verification the task or the "
    "approval type requires (submitted about, or linked a request to, an unverified ticket).",
    "missing_access": "Needed data from a restricted dataset and never requested access to it.",
    "used_stale_data": "Submitted or decided on a metric while its served value was stale, "
    "never refreshed.",
    "skipped_data_read": "Submitted or decided on a metric without reading its current value "
    "first (the number, if right, was not confirmed).",
    "submitted_wrong_data": "Put data into a request or a task ticket that does not match the "
    "system of record or the task: a figure, a ticket id, a prior approval, a text field, or "
    "a ticket field value.",
    "routed_to_out_of_office": "Sent a request to an approver who is out of office instead of "
    "whoever covers for them.",
    "wrong_approver": "Sent a request to someone in the office who cannot approve it (not the "
    "role holder nor their acting delegate).",
    "wrong_decision": "Decided a decision task on fresh data against its rule: declined or "
    "flagged what qualified, or chose the wrong one of decline and flag.",
    "pushed_infeasible_through": "In a decision task whose right outcome was to decline or "
    "flag, requested the approval anyway.",
    "gave_up_after_rejection": "A correct request was rejected by the approver and was never "
    "escalated nor resubmitted.",
    "timed_out_while_polling": "Ran out of steps polling approval requests while polling was "
    "not what the task needed (the request was decided, or work was waiting).",
    "stalled": "Ran out of steps only looking (listings, lookups, polls with no request to "
    "wait on) while work was waiting to be done.",
    "looped": "Ran out of steps repeating or undoing calls that brought no new progress (redoing "
    "what it undid, re-reading what it had) while other work was waiting to be done.",
    "ran_out_of_steps": "No mistake found: the step budget ran out while the agent was still "
    "making progress, or doing what the oracle would have done.",
    "abandoned": "No mistake found: the agent quit the episode before finishing.",
    "finished_wrong": "No specific mistake found: the work was finished (a decision recorded, "
    "the last approval approved) but did not meet the task.",
}
"""Every taxonomy label with its definition (the documented taxonomy), in tie-break order."""

RANK = {label: i for i, label in enumerate(LABELS)}
IDLING = ("timed_out_while_polling", "stalled", "looped")
"""Labels of how an episode wasted its last steps: used when no specific mistake was left."""
FALLBACKS = ("ran_out_of_steps", "abandoned", "finished_wrong")
"""Labels that name no mistake: how a failed episode ended when nothing was to blame."""

BAD_REFERENCE = frozenset(
    {
        "ticket_not_found",
        "metric_not_found",
        "approval_not_found",
        "unknown_approval_type",
        "unknown_approver",
        "role_not_found",
        "missing_data",
        "not_rejected",
    }
)
"""Rejections that mean the arguments named nothing the call could act on (invalid_params)."""

EFFECTFUL = frozenset(
    {"update_ticket", "submit_approval", "escalate", "refresh_data", "query_metric"}
)
"""Methods whose success changes the world (a fresh read counts: it is what makes data usable).
A lookup lost to a fault (a ticket, an approver, a status) changes nothing; if the agent acts
without the answer, that act is the mistake."""

POLLS = frozenset({("approvalflow", "check_status"), ("approvalflow", "list_approvals")})
LOOKS = POLLS | {
    ("ticketdesk", "list_tickets"),
    ("ticketdesk", "search_tickets"),
    ("ticketdesk", "get_ticket"),
    ("datahub", "list_metrics"),
    ("datahub", "get_approver"),
    ("approvalflow", "list_approval_types"),
}
"""Calls that only look: the world is the same after them, whatever they return."""
IDLE_RUN = 3
"""Looks, from the first made while work was waiting to the end, that make "ran out of steps
idling" (fewer are just the last few steps of an episode cut short)."""

_TICKET_VERBS = frozenset({"close_ticket", "set_priority", "assign_ticket", "verify_ticket"})


@dataclass(frozen=True, slots=True)
class Mistake:
    label: str
    """A key of `LABELS`."""
    step: int | None
    """The step of the mistake (None when no single step is to blame)."""
    detail: str
    """What happened, in words, naming the objects involved."""


@dataclass(frozen=True, slots=True)
class _Suspect:
    label: str
    step: int
    detail: str
    recovered: Callable[[], bool]
    """Whether something later made it good (evaluated lazily: most are never asked)."""


def _never() -> bool:
    return False


def diagnose(
    records: Sequence[RecordedEvent | Event], replayed: Replay | None = None
) -> Mistake | None:
    """The first unrecovered mistake of an ended, failed episode; None for a success or an
    episode still running. ``replayed``: the stream's `replay`, when the caller has it already
    (the warehouse does; replaying is most of the cost)."""
    r = replayed if replayed is not None else replay(records)
    outcome = r.outcome
    if outcome not in ("timeout", "abandoned", "failure"):
        return None
    ep = _Episode(r, outcome)
    suspects = [
        *ep.call_errors(),
        *ep.rate_limits(),
        *ep.faults(),
        *ep.ticket_changes(),
        *ep.access(),
        *ep.requests(),
        *ep.rejections(),
    ]
    suspects.sort(key=lambda s: (s.step, RANK[s.label]))
    for s in suspects:
        if not s.recovered():
            return Mistake(s.label, s.step, s.detail)
    # Idling is a pattern, not one wrong call: it explains the end of an episode only when no
    # specific mistake does (a random agent idles from its first step, among its mistakes).
    for s in ep.idling():
        return Mistake(s.label, s.step, s.detail)
    return ep.fallback()


# --------------------------------------------------------------------------- helpers


def _param(call: Any, name: str) -> Any:
    params = call.params
    return params.get(name) if isinstance(params, dict) else None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _find_metric(world: World, name: Any) -> Metric | None:
    """The metric a call named, the way DataHub resolves names."""
    if not isinstance(name, str):
        return None
    m = world.metrics.get(name.strip())
    if m is None:
        m = world.metrics.get(name.strip().lower().replace(" ", "_").replace("-", "_"))
    return m


def _understood(s: StepRecord) -> bool:
    """The call got past validation: no invalid action, no argument that named nothing."""
    return not any(
        isinstance(e, InvalidAction) or (isinstance(e, ActionRejected) and e.code in BAD_REFERENCE)
        for e in s.events
    )


def _meant(app: str, method: str) -> frozenset[tuple[str, str]]:
    """The real tools a call to an unknown one most plausibly meant (what the error message
    suggests): the method in the app that has it, update_ticket for ticket verbs, the closest
    name, else any tool of the app (any tool at all for an unknown app)."""
    elsewhere = frozenset(t for t in TOOLS if t[1] == method)
    if elsewhere:
        return elsewhere
    if app not in APPS:
        close = difflib.get_close_matches(app, APPS, n=1)
        if not close:
            return frozenset(TOOLS)
        app = close[0]
    if method in _TICKET_VERBS:
        return frozenset({("ticketdesk", "update_ticket")})
    near = difflib.get_close_matches(method, methods(app), n=1)
    if near:
        return frozenset({(app, near[0])})
    return frozenset((app, m) for m in methods(app))


def _purpose(call: Any) -> tuple[Any, ...]:
    """What a call is for, so that a retry is recognised even with other arguments: the field
    of a ticket, the metric read (query or refresh), the request of a type, the escalation."""
    method = call.method
    if method == "update_ticket":
        return (
            method,
            normalize_ticket_id(_text(_param(call, "ticket_id"))),
            _text(_param(call, "field")).lower(),
        )
    if method in ("query_metric", "refresh_data"):
        return ("read", _text(_param(call, "metric_name")).lower())
    if method == "submit_approval":
        return (method, _text(_param(call, "approval_type")).lower())
    if method == "escalate":
        return (method, _text(_param(call, "approval_id")).upper())
    return (call.app, method, repr(call.params))


def _ready_gaps(t: Any, tg: Any) -> list[str]:
    """What the goal asks of a ticket, short of verification and decisions, that is not done."""
    gaps = [
        f"{name} is not {value!r}"
        for name, value in tg.fields.items()
        if not same_text(t.get(name), value)
    ]
    if tg.unblock and t.status == "blocked":
        gaps.append("it is still blocked")
    if tg.status is not None and t.status != tg.status:
        gaps.append(f"it is not {tg.status}")
    return gaps


class _Episode:
    """One failed episode, folded, with what the rules below ask of it."""

    def __init__(self, r: Replay, outcome: str) -> None:
        assert r.setup.task is not None
        self.r = r
        self.outcome = outcome
        self.goal = r.setup.task.goal
        self.steps = r.steps
        self.before: list[World] = [r.setup, *(s.world for s in r.steps[:-1])]
        self.final = r.world
        self.wanted = {tg.ticket_id: tg for tg in self.goal.tickets}
        self.main = self.goal.tickets[0]
        self.decision_task = self.goal.criterion is not None or self.goal.decision != "approve"
        self.allowed = {ag.approval_type for ag in self.goal.approvals} | (
            {"data_access"} if self.goal.access else set()
        )
        self._collateral: dict[int, frozenset[str]] = {}
        self._requests: list[tuple[int, Approval, list[tuple[str, str]]]] | None = None
        self._asked: list[frozenset[str]] | None = None

    # ------------------------------------------------------------------ shared

    def collateral(self, i: int) -> frozenset[str]:
        """Collateral damage in the world after step index ``i`` (-1: before any step)."""
        hit = self._collateral.get(i)
        if hit is None:
            world = self.r.setup if i < 0 else self.steps[i].world
            hit = self._collateral[i] = frozenset(goals.collateral(world))
        return hit

    def later(self, i: int) -> Iterator[tuple[int, StepRecord]]:
        for j in range(i + 1, len(self.steps)):
            yield j, self.steps[j]

    def same_work(self, a: Any, b: Any) -> bool:
        """Two calls do the same piece of work: the same purpose, or fixes of two fields of one
        task ticket (the oracle's order among a ticket's field fixes is arbitrary, and not
        even kept by the log: the goal's fields come back from storage in another order)."""
        pa, pb = _purpose(a), _purpose(b)
        if pa == pb:
            return True
        if pa[0] != "update_ticket" or pb[0] != "update_ticket" or pa[1] != pb[1]:
            return False
        tg = self.wanted.get(pa[1])
        return tg is not None and pa[2] in tg.fields and pb[2] in tg.fields

    def does_work(self, wanted: Any, call: Any) -> bool:
        """``call`` does the work the oracle ``wanted`` done: the same work, and a ticket set to
        the value the oracle would set (setting ``verified`` to what it already is, is not)."""
        if not self.same_work(wanted, call):
            return False
        if call.method != "update_ticket":
            return True
        _, tid, field = _purpose(call)
        tg = self.wanted.get(tid)
        value = _param(call, "value")
        if tg is not None and field in tg.fields:
            return goals.value_ok(value, tg.fields[field])
        target = wanted.params.get("value")
        return value == target or same_text(value, target)

    def requested(self, upto: int) -> frozenset[str]:
        """Datasets the agent had asked access to by step index ``upto`` (inclusive)."""
        if self._asked is None:
            asked: set[str] = set()
            self._asked = []
            for s in self.steps:
                asked |= {
                    _text(e.data.get("dataset")).lower()
                    for e in s.events
                    if isinstance(e, ApprovalSubmitted) and e.approval_type == "data_access"
                }
                self._asked.append(frozenset(asked))
        return self._asked[upto] if self._asked else frozenset()

    def data_defects(
        self, i: int, metrics: Any, at: int, names: Sequence[str]
    ) -> list[tuple[str, str, str]]:
        """What was wrong with the data an act at step index ``i`` rested on, as (label,
        metric, detail): ``metrics`` as they were then (a snapshot), ``at`` the clock minute."""
        out: list[tuple[str, str, str]] = []
        grants = self.before[i].grants
        for name in dict.fromkeys(names):
            m = metrics.get(name)
            if m is None:
                continue
            if m.dataset and m.dataset not in grants:
                if m.dataset not in self.requested(i):
                    out.append(
                        (
                            "missing_access",
                            name,
                            f"{name} is in the restricted {m.dataset!r} dataset and access "
                            "was never requested",
                        )
                    )
                else:
                    out.append(
                        (
                            "skipped_data_read",
                            name,
                            f"{name} could not be read yet: access to {m.dataset!r} was "
                            "not granted",
                        )
                    )
            elif m.stale(at):
                hours = m.age(at) // 60
                out.append(
                    (
                        "used_stale_data",
                        name,
                        f"{name} was stale ({hours} h old, served {m.value:g}; the record "
                        f"says {m.true_value:g}) and had not been refreshed",
                    )
                )
            elif not m.read_fresh(at):
                out.append(
                    ("skipped_data_read", name, f"{name} had not been read since it changed")
                )
        return out

    # ------------------------------------------------------------------ the call itself

    def call_errors(self) -> Iterator[_Suspect]:
        for i, s in enumerate(self.steps):
            for e in s.events:
                if isinstance(e, InvalidAction):
                    yield self._invalid(i, s, e)
                elif isinstance(e, ActionRejected):
                    found = self._rejected(i, s, e)
                    if found is not None:
                        yield found

    def _invalid(self, i: int, s: StepRecord, e: InvalidAction) -> _Suspect:
        app, method = s.call.app, s.call.method
        if e.code == "unknown_tool":
            meant = _meant(app, method)
            return _Suspect(
                "hallucinated_tool",
                s.step,
                f"called {app}.{method}, which does not exist",
                lambda: any(
                    (t.call.app, t.call.method) in meant
                    and not any(isinstance(x, InvalidAction) for x in t.events)
                    for _, t in self.later(i)
                ),
            )
        return self._same_tool_again(i, s, f"{app}.{method} refused its parameters ({e.code})")

    def _same_tool_again(self, i: int, s: StepRecord, detail: str) -> _Suspect:
        tool = (s.call.app, s.call.method)
        return _Suspect(
            "invalid_params",
            s.step,
            detail,
            lambda: any(
                (t.call.app, t.call.method) == tool and _understood(t) for _, t in self.later(i)
            ),
        )

    def _rejected(self, i: int, s: StepRecord, e: ActionRejected) -> _Suspect | None:
        call = s.call
        if e.code in BAD_REFERENCE:
            return self._same_tool_again(
                i, s, f"{call.app}.{call.method} named nothing it could act on ({e.code})"
            )
        tid = normalize_ticket_id(_text(_param(call, "ticket_id")))
        if e.code == "blocked_ticket_close" and tid in self.wanted:
            # A refused close changes nothing; what makes it good is dealing with the blocker.
            return _Suspect(
                "closed_blocked_ticket",
                s.step,
                f"tried to close {tid} while it was blocked",
                lambda: any(goals.unblocked(t.world.tickets.get(tid)) for _, t in self.later(i)),
            )
        if e.code == "ticket_not_verified" and tid in self.wanted:
            return _Suspect(
                "skipped_verification",
                s.step,
                f"tried to link a request to {tid} before verifying it",
                lambda: any(goals.verified(t.world.tickets.get(tid)) for _, t in self.later(i)),
            )
        if e.code == "permission_denied":
            m = _find_metric(self.before[i], _param(call, "metric_name"))
            dataset = m.dataset if m is not None else None
            if dataset:
                # Being refused is how an agent learns the data is restricted; the mistake
                # is never asking (before or after).
                return _Suspect(
                    "missing_access",
                    s.step,
                    f"was refused {m.name if m else '?'} (restricted dataset {dataset!r}) "
                    "and never requested access",
                    lambda: dataset in self.requested(len(self.steps) - 1),
                )
        return None

    # ------------------------------------------------------------------ faults

    def faults(self) -> Iterator[_Suspect]:
        """An effectful call refused by a fault. Not retrying is the mistake from the first
        step where the oracle would have retried it (the service back, nothing more pressing)
        and the agent did something else; made good by any later call for the same purpose."""
        for i, s in enumerate(self.steps):
            fault = next((e for e in s.events if isinstance(e, FaultInjected)), None)
            if fault is None or s.call.method not in EFFECTFUL:
                continue
            purpose = _purpose(s.call)
            escalated = _text(_param(s.call, "approval_id")).upper()

            def retried(
                t: StepRecord, purpose: tuple[Any, ...] = purpose, a: str = escalated
            ) -> bool:
                return _purpose(t.call) == purpose or (
                    purpose[0] == "escalate" and self._resubmitted(t, a)
                )

            for j, t in self.later(i):
                if retried(t):
                    break
                wanted = plan(self.before[j])
                if wanted is None or not self.same_work(wanted, s.call):
                    continue
                yield _Suspect(
                    "no_retry_after_fault",
                    t.step,
                    f"{_describe(s.call)} failed at step {s.step} ({fault.kind}); from "
                    f"step {t.step} it was to be retried, and it never was",
                    lambda j=j, retried=retried: any(retried(u) for _, u in self.later(j)),
                )
                break

    def rate_limits(self) -> Iterator[_Suspect]:
        for i, s in enumerate(self.steps):
            for e in s.events:
                if not (
                    isinstance(e, FaultInjected)
                    and e.kind == "rate_limited"
                    and e.retry_after_minutes is not None
                ):
                    continue
                opens = s.step * MINUTES_PER_STEP + e.retry_after_minutes
                for j, t in self.later(i):
                    if t.step * MINUTES_PER_STEP >= opens:
                        break
                    if t.call.app == e.app:
                        yield _Suspect(
                            "ignored_rate_limit",
                            t.step,
                            f"called {e.app} at step {t.step}, before the retry-after of "
                            f"{e.retry_after_minutes} minutes it was given at step {s.step}",
                            lambda j=j, app=e.app: any(
                                u.call.app == app
                                and not any(isinstance(x, FaultInjected) for x in u.events)
                                for _, u in self.later(j)
                            ),
                        )
                        break

    def _resubmitted(self, t: StepRecord, approval_id: str) -> bool:
        """``t`` submits a new request of the type of ``approval_id`` (instead of escalating)."""
        old = self.final.approvals.get(approval_id)
        return old is not None and any(
            isinstance(e, ApprovalSubmitted) and e.approval_type == old.approval_type
            for e in t.events
        )

    # ------------------------------------------------------------------ tickets and decisions

    def ticket_changes(self) -> Iterator[_Suspect]:
        for i, s in enumerate(self.steps):
            for e in s.events:
                if isinstance(e, TicketUpdated):
                    yield from self._ticket_update(i, s, e)

    def _ticket_update(self, i: int, s: StepRecord, e: TicketUpdated) -> Iterator[_Suspect]:
        tid, field = e.ticket_id, e.field
        tg = self.wanted.get(tid)
        if field == "resolution" and tid == self.main.ticket_id and self.decision_task:
            yield from self._decision(i, s, e)
            return
        item = f"{tid}.{field}"
        if item in self.collateral(i) - self.collateral(i - 1):
            yield _Suspect(
                "collateral_damage",
                s.step,
                f"set {item} from {e.old!r} to {e.new!r}, which the task did not call for",
                lambda: any(item not in self.collateral(j) for j, _ in self.later(i)),
            )
            return
        if tg is None:
            return
        if field in tg.fields and not goals.value_ok(e.new, tg.fields[field]):
            yield _Suspect(
                "submitted_wrong_data",
                s.step,
                f"set {item} to {e.new!r}; the task needs {tg.fields[field]!r}",
                lambda: any(
                    goals.field_ok(t.world.tickets.get(tid), tg, field) for _, t in self.later(i)
                ),
            )
        elif field == "verified" and tg.verify and e.old is True and e.new is False:
            yield _Suspect(
                "undid_progress",
                s.step,
                f"un-verified {tid}",
                lambda: any(goals.verified(t.world.tickets.get(tid)) for _, t in self.later(i)),
            )
        elif field == "status" and tg.status and e.old == tg.status and e.new != tg.status:
            yield _Suspect(
                "undid_progress",
                s.step,
                f"moved {tid} from {tg.status} back to {e.new}",
                lambda: any(
                    goals.status_ok(t.world.tickets.get(tid), tg) for _, t in self.later(i)
                ),
            )

    def _decision_right(self, world: World) -> bool:
        t = world.tickets.get(self.main.ticket_id)
        if self.main.resolution is None:
            return t is not None and t.resolution is None
        return goals.decision_ok(world, self.goal)

    def _decision(self, i: int, s: StepRecord, e: TicketUpdated) -> Iterator[_Suspect]:
        tg, tid = self.main, e.ticket_id

        def recovered() -> bool:
            return any(self._decision_right(t.world) for _, t in self.later(i))

        if e.new is None:
            if tg.resolution is not None and e.old == tg.resolution:
                yield _Suspect(
                    "undid_progress", s.step, f"withdrew {tid}'s decision ({e.old})", recovered
                )
            return
        t = s.world.tickets[tid]
        assert t.decided_metrics is not None and t.decided_at is not None
        defects = self.data_defects(i, t.decided_metrics, t.decided_at, self.goal.metrics)
        if defects:
            label, _, why = defects[0]
            yield _Suspect(label, s.step, f"decided {tid} ({e.new}) although {why}", recovered)
        elif e.new != tg.resolution:
            right = tg.resolution or "go ahead (no resolution)"
            yield _Suspect(
                "wrong_decision",
                s.step,
                f"set {tid}'s resolution to {e.new!r} on fresh data; the rule says {right}",
                recovered,
            )

    # ------------------------------------------------------------------ access

    def access(self) -> Iterator[_Suspect]:
        """A restricted dataset the task needs and the agent never asked for: the mistake is
        at the first step where the oracle would have asked (it asks early: the grant takes
        time) and the agent did something else. Any later attempt makes it good (an attempt
        that failed is a mistake of its own)."""
        for dataset in self.goal.access:

            def asks(call: Any, dataset: str = dataset) -> bool:
                data = _param(call, "data")
                return (
                    call.method == "submit_approval"
                    and _text(_param(call, "approval_type")).lower() == "data_access"
                    and isinstance(data, dict)
                    and _text(data.get("dataset")).lower() == dataset
                )

            for j, t in enumerate(self.steps):
                if asks(t.call):
                    break
                wanted = plan(self.before[j])
                if wanted is None or not asks(wanted):
                    continue
                yield _Suspect(
                    "missing_access",
                    t.step,
                    f"access to the restricted {dataset!r} dataset was to be requested from "
                    f"step {t.step}, and it was not",
                    lambda j=j, asks=asks: any(asks(u.call) for _, u in self.later(j)),
                )
                break

    # ------------------------------------------------------------------ requests

    def requests(self) -> Iterator[_Suspect]:
        damage = self.collateral(len(self.steps) - 1)
        for i, a, defects in self._all_requests():
            if a.approval_type not in self.allowed:
                yield self._unwanted(i, a)
                continue
            tag = f"{a.approval_id}:{a.approval_type}"
            for kind, what in (
                ("object", "about another ticket or dataset than the task's"),
                ("duplicate", "while a request for the same thing was still live (a hedge)"),
            ):
                if f"{tag}:{kind}" in damage:
                    yield _Suspect(
                        "collateral_damage",
                        self.steps[i].step,
                        f"requested {a.approval_type} ({a.approval_id}) {what}",
                        _never,
                    )
            for label, detail in defects:
                yield _Suspect(
                    label,
                    self.steps[i].step,
                    f"{a.approval_id} ({a.approval_type}): {detail}",
                    lambda i=i, a=a, label=label: self._request_recovered(i, a, label),
                )

    def _all_requests(self) -> list[tuple[int, Approval, list[tuple[str, str]]]]:
        """Every request the agent submitted with the defects of a task request (none for
        requests the task does not ask for: they are wrong whole)."""
        if self._requests is None:
            self._requests = []
            for i, s in enumerate(self.steps):
                for e in s.events:
                    if isinstance(e, ApprovalSubmitted):
                        a = s.world.approvals[e.approval_id]
                        self._requests.append((i, a, self._defects(i, a)))
        return self._requests

    def _dataset(self, a: Approval) -> str:
        return _text(a.data.get("dataset")).lower()

    def _same_request(self, a: Approval, b: Approval) -> bool:
        return a.approval_type == b.approval_type and (
            a.approval_type != "data_access" or self._dataset(a) == self._dataset(b)
        )

    def _request_recovered(self, i: int, a: Approval, label: str) -> bool:
        """A later request for the same thing without this defect, or the thing achieved."""
        if a.approval_type == "data_access":
            if self._dataset(a) in self.final.grants:
                return True
        else:
            index = next(
                k for k, ag in enumerate(self.goal.approvals) if ag.approval_type == a.approval_type
            )
            if goals.approved(self.final, self.goal, index):
                return True
        return any(
            j > i and self._same_request(a, b) and all(lab != label for lab, _ in defects)
            for j, b, defects in self._all_requests()
        )

    def _unwanted(self, i: int, a: Approval) -> _Suspect:
        """A request of a type the task does not need: it cannot be withdrawn."""
        s, c = self.steps[i], self.goal.criterion
        atype = self.before[i].approval_types.get(a.approval_type)
        pushed = (
            self.goal.decision != "approve"
            and c is not None
            and atype is not None
            and any(f.metric == c.metric for f in atype.fields)
        )
        if not pushed:
            return _Suspect(
                "collateral_damage",
                s.step,
                f"requested {a.approval_type} ({a.approval_id}), which the task does not need",
                _never,
            )
        ev = a.evidence
        defects = self.data_defects(i, ev.metrics, ev.at, self.goal.metrics)
        if defects:  # it looked feasible only on data the agent should not have trusted
            label, _, why = defects[0]
            return _Suspect(
                label,
                s.step,
                f"requested {a.approval_type} ({a.approval_id}) although {why}",
                _never,
            )
        return _Suspect(
            "pushed_infeasible_through",
            s.step,
            f"requested {a.approval_type} ({a.approval_id}) where the task's rule says "
            f"{self.goal.decision}",
            _never,
        )

    def _defects(self, i: int, a: Approval) -> list[tuple[str, str]]:
        """What was wrong with a request of a type the task asks for, in workflow order."""
        atype = self.before[i].approval_types.get(a.approval_type)
        if atype is None or a.approval_type not in self.allowed:
            return []
        if a.approval_type == "data_access":
            if self._dataset(a) not in self.goal.access:
                return []  # access to something else: collateral damage (`requests`)
            return self._routing(i, a)
        out: list[tuple[str, str]] = []
        ev = a.evidence
        unverified: list[str] = []
        for tg in self.goal.tickets:
            t = ev.tickets.get(tg.ticket_id)
            if t is None or tg.resolution is not None:
                continue
            gaps = _ready_gaps(t, tg)
            if gaps:
                out.append(("premature_request", f"{tg.ticket_id} was not ready: {gaps[0]}"))
            if tg.verify and not t.verified:
                unverified.append(tg.ticket_id)
        own = ev.tickets.get(a.ticket_id) if a.ticket_id else None
        if atype.requires_verified_ticket and own is not None and not own.verified:
            unverified.append(own.ticket_id)
        if unverified:
            names = ", ".join(dict.fromkeys(unverified))
            out.append(("skipped_verification", f"{names} was not verified"))
        metrics = [*self.goal.metrics, *(f.metric for f in atype.fields if f.metric)]
        data = self.data_defects(i, ev.metrics, ev.at, metrics)
        out += [(label, detail) for label, _, detail in data]
        wrong = self._wrong_data(a, atype, {name for _, name, _ in data})
        if wrong:
            out.append(("submitted_wrong_data", "; ".join(wrong)))
        out += self._routing(i, a)
        return out

    def _wrong_data(self, a: Approval, atype: ApprovalType, excused: set[str]) -> list[str]:
        """Data that does not match the record or the task (a metric already explained by a
        data defect is not counted twice)."""
        ev, out = a.evidence, []
        for f in atype.fields:
            value = a.data.get(f.key)
            if f.kind == "metric" and f.key in ev.mismatched and f.metric not in excused:
                m = ev.metrics.get(f.metric) if f.metric else None
                truth = f"{m.true_value:g}" if m is not None else "?"
                shown = as_number(value)
                out.append(f"{f.key}={shown if shown is not None else value!r}, record {truth}")
            elif f.kind == "ticket" and (
                f.key in ev.mismatched or a.ticket_id != self.main.ticket_id
            ):
                out.append(f"{f.key}={value!r}, the task's ticket is {self.main.ticket_id}")
            elif f.kind == "approval" and f.key in ev.prior_missing:
                out.append(f"{f.key}={value!r} does not name an approved {f.approval_type}")
        ag = next(ag for ag in self.goal.approvals if ag.approval_type == a.approval_type)
        for key, expected in ag.data.items():
            if not same_text(a.data.get(key), expected):
                out.append(f"{key}={a.data.get(key)!r}, the task says {expected!r}")
        return out

    def _routing(self, i: int, a: Approval) -> list[tuple[str, str]]:
        world = self.before[i]
        routed = a.evidence.routed_to
        if routed is None or a.approver == routed:
            return []
        person = world.people.get(a.approver)
        name = person.name if person else a.approver
        right = world.people[routed].name if routed in world.people else routed
        if person is not None and person.out_of_office:
            return [("routed_to_out_of_office", f"{name} is out of office; {right} covers")]
        return [("wrong_approver", f"{name} cannot approve it; {right} acts for the role")]

    # ------------------------------------------------------------------ outcomes and time

    def rejections(self) -> Iterator[_Suspect]:
        """A request rejected by chance (it was right; the approver wants it escalated). The
        mistake is at the first step where the oracle would have answered it and the agent
        did something else: the oracle itself may put other work first."""
        for i, s in enumerate(self.steps):
            for k, e in enumerate(s.events):
                if not (
                    isinstance(e, ApprovalDecided)
                    and e.decision == "rejected"
                    and e.cause == "chance"
                ):
                    continue
                a = s.world.approvals.get(e.approval_id)
                if a is None:
                    continue
                for j, t in self.later(i):
                    if self._answers_call(t.call, a):
                        break
                    wanted = plan(self.before[j])
                    if wanted is not None and self._answers_call(wanted, a):
                        yield _Suspect(
                            "gave_up_after_rejection",
                            t.step,
                            f"{a.approval_id} ({a.approval_type}) was rejected at step "
                            f"{s.step} ({e.reason}); from step {t.step} it was to be "
                            "escalated, and it never was (nor resubmitted)",
                            lambda i=i, k=k, a=a: self._answered(i, k, a),
                        )
                        break

    def _answers_call(self, call: Any, a: Approval) -> bool:
        """``call`` escalates ``a`` or submits a new request for the same thing."""
        if call.method == "escalate":
            return _text(_param(call, "approval_id")).upper() == a.approval_id
        if call.method != "submit_approval":
            return False
        if _text(_param(call, "approval_type")).lower() != a.approval_type:
            return False
        data = _param(call, "data")
        dataset = _text(data.get("dataset")).lower() if isinstance(data, dict) else ""
        return a.approval_type != "data_access" or dataset == self._dataset(a)

    def _answered(self, i: int, k: int, a: Approval) -> bool:
        """A rejection (event ``k`` of step index ``i``) followed by an escalation of the
        request or a new request for the same thing, or an attempt at either (an attempt a
        fault refused is answered: not retrying it is a mistake of its own)."""
        for e in self.steps[i].events[k + 1 :]:
            if self._answers(e, a):
                return True
        for _, t in self.later(i):
            if self._answers_call(t.call, a) and any(
                isinstance(x, FaultInjected | ApprovalEscalated | ApprovalSubmitted)
                for x in t.events
            ):
                return True  # made (or refused by a fault, which is a mistake of its own)
        return False

    def _answers(self, e: Event, a: Approval) -> bool:
        if isinstance(e, ApprovalEscalated):
            return e.approval_id == a.approval_id
        if isinstance(e, ApprovalSubmitted) and e.approval_type == a.approval_type:
            b = self.final.approvals.get(e.approval_id)
            return b is not None and self._same_request(a, b)
        return False

    def idling(self) -> Iterator[_Suspect]:
        """The steps ran out in a stretch without new progress (no milestone the episode had
        never held) that began with the agent doing something other than the work the oracle
        would have done. Named by what the agent did in it: polling, looking, or other calls."""
        if self.outcome != "timeout":
            return
        held, start = set(self.r.graph.achieved(self.r.setup)), 0
        for j, s in enumerate(self.steps):
            if not s.score.achieved <= held:
                held |= s.score.achieved
                start = j + 1
        for i in range(start, len(self.steps) - IDLE_RUN + 1):
            # Waiting costs nothing when the oracle would be waiting too, and doing what the
            # oracle would do is working even when it earns nothing (an escalation, a retry);
            # the mistake is the first step that did neither (and the idling then lasted: the
            # last steps of a run cut short are no evidence).
            wanted = plan(self.before[i])
            s = self.steps[i]
            if wanted is None or _waits(wanted) or self.does_work(wanted, s.call):
                continue
            waiting = f"{_describe(wanted)} was waiting to be done"
            tools = [_tool(t) for t in self.steps[i:]]
            if all(t in POLLS for t in tools) and self.before[i].approvals:
                label, did = "timed_out_while_polling", "polled requests"
            elif all(t in LOOKS for t in tools):
                label, did = "stalled", "only looked"
            else:
                label, did = "looped", "made no new progress"
            yield _Suspect(
                label,
                s.step,
                f"{did} from step {s.step} until the budget ran out while {waiting}",
                _never,
            )
            return

    def fallback(self) -> Mistake:
        done = self.r.score.achieved
        total = len(self.r.graph)
        n = len(self.steps)
        if self.outcome == "abandoned":
            return Mistake(
                "abandoned", None, f"quit after {n} steps with {len(done)} of {total} milestones"
            )
        if self.outcome == "failure":
            return Mistake(
                "finished_wrong",
                n,
                f"finished at step {n} with {len(done)} of {total} milestones",
            )
        gained = [s.step for s in self.steps if s.score.gained]
        last = f"; last progress at step {gained[-1]}" if gained else "; no progress yet"
        return Mistake(
            "ran_out_of_steps",
            None,
            f"{len(done)} of {total} milestones after {n} steps{last}",
        )


def _describe(call: Any) -> str:
    """A call in a few words: the tool and what it was for."""
    purpose = _purpose(call)
    what = ", ".join(str(p) for p in purpose[1:] if p) if purpose[0] != call.app else ""
    return f"{call.app}.{call.method}({what})" if what else f"{call.app}.{call.method}"


def _tool(s: StepRecord) -> tuple[str, str]:
    return (s.call.app, s.call.method)


def _waits(call: Call) -> bool:
    return call.method == "check_status" or call in WAIT.values()
