"""What the label rules share: one episode, folded, with the facts several rules ask of it.

A rule (`rules/<label>.py`) gets an `Episode` and yields `Suspect`s: a mistake at a step, with
its evidence and a lazy question, "at which later step was it made good?" (None: never). The
facts here are the ones more than one rule needs: the world before each step, collateral damage
after each step, what each request was submitted on (its defects), and what a call is for.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from companyos.domain import goals
from companyos.domain.catalogue import APPS, TOOLS, methods
from companyos.domain.model import (
    Approval,
    ApprovalType,
    Metric,
    World,
    as_number,
    normalize_ticket_id,
    same_text,
)
from companyos.events.types import (
    ActionRejected,
    ApprovalSubmitted,
    FaultInjected,
    InvalidAction,
    MetricQueried,
    MetricRefreshed,
    TicketUpdated,
)

from ..replay import Replay, StepRecord

PSEUDO_APP = "llm"
"""The app an agent's reply that was no usable tool call is recorded under (``agents.toolcalls
.JUNK_APP``: ``llm.no_tool_call`` for prose, ``llm.bad_tool_call``, ``llm.empty_reply``)."""

BAD_REFERENCE = frozenset(
    {
        "ticket_not_found",
        "metric_not_found",
        "approval_not_found",
        "unknown_approval_type",
        "unknown_approver",
        "role_not_found",
        "missing_data",
    }
)
"""Rejections that mean the arguments named nothing the call could act on (invalid_params;
escalating a request that was not rejected names the wrong one: wrong_object)."""

EFFECTFUL = frozenset(
    {"update_ticket", "submit_approval", "escalate", "refresh_data", "query_metric"}
)
"""Methods whose success changes the world (a fresh read counts: it is what makes data usable)."""

READS = frozenset(
    {
        ("ticketdesk", "list_tickets"),
        ("ticketdesk", "search_tickets"),
        ("ticketdesk", "get_ticket"),
        ("datahub", "list_metrics"),
        ("datahub", "get_approver"),
        ("datahub", "query_metric"),
        ("approvalflow", "list_approval_types"),
        ("approvalflow", "check_status"),
        ("approvalflow", "list_approvals"),
    }
)
"""Calls that only read: a failed one, corrected later, did no harm (it is never decisive)."""

TICKET_VERBS = frozenset({"close_ticket", "set_priority", "assign_ticket", "verify_ticket"})


def never() -> int | None:
    return None


@dataclass(frozen=True, slots=True)
class Suspect:
    """A mistake a rule found."""

    label: str
    step: int
    evidence: str
    made_good: Callable[[], int | None] = never
    """The step at which something later made it good (None: never); asked lazily."""
    harmless: bool = False
    """A failed read later corrected: kept in the table, never decisive."""


def param(call: Any, name: str) -> Any:
    params = call.params
    return params.get(name) if isinstance(params, dict) else None


def text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def find_metric(world: World, name: Any) -> Metric | None:
    """The metric a call named, the way DataHub resolves names."""
    if not isinstance(name, str):
        return None
    m = world.metrics.get(name.strip())
    if m is None:
        m = world.metrics.get(name.strip().lower().replace(" ", "_").replace("-", "_"))
    return m


def understood(s: StepRecord) -> bool:
    """The call got past validation: it reached the app (no fault refused it before it was
    read), with no invalid action and no argument that named nothing."""
    return not any(
        isinstance(e, InvalidAction | FaultInjected)
        or (isinstance(e, ActionRejected) and e.code in BAD_REFERENCE)
        for e in s.events
    )


def tool(s: StepRecord) -> tuple[str, str]:
    return (str(s.call.app), str(s.call.method))


def meant(app: str, method: str) -> frozenset[tuple[str, str]]:
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
    verb = method in TICKET_VERBS or method.startswith(("set_", "update_", "verify", "close"))
    if verb and app == "ticketdesk":
        return frozenset({("ticketdesk", "update_ticket")})
    near = difflib.get_close_matches(method, methods(app), n=1)
    if near:
        return frozenset({(app, near[0])})
    return frozenset((app, m) for m in methods(app))


def purpose(call: Any) -> tuple[Any, ...]:
    """What a call is for, so that a retry is recognised even with other arguments: the field
    of a ticket, the metric read (query or refresh), the request of a type, the escalation."""
    method = call.method
    if method == "update_ticket":
        return (
            method,
            normalize_ticket_id(text(param(call, "ticket_id"))),
            text(param(call, "field")).lower(),
        )
    if method in ("query_metric", "refresh_data"):
        return ("read", text(param(call, "metric_name")).lower())
    if method == "submit_approval":
        return (method, text(param(call, "approval_type")).lower())
    if method == "escalate":
        return (method, text(param(call, "approval_id")).upper())
    return (call.app, method, repr(call.params))


def describe(call: Any) -> str:
    """A call in a few words: the tool and what it was for."""
    p = purpose(call)
    what = ", ".join(str(x) for x in p[1:] if x) if p[0] != call.app else ""
    return f"{call.app}.{call.method}({what})" if what else f"{call.app}.{call.method}"


def ready_gaps(t: Any, tg: Any) -> list[str]:
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


@dataclass(slots=True)
class Request:
    """A request the agent submitted, at step index ``i``, with what was wrong with it."""

    i: int
    approval: Approval
    defects: list[tuple[str, str]] = field(default_factory=list)


class Episode:
    """One ended, failed episode, folded, with the facts the rules share."""

    def __init__(self, r: Replay) -> None:
        assert r.setup.task is not None
        self.r = r
        self.outcome = r.outcome
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
        self._requests: list[Request] | None = None
        self._asked: list[frozenset[str]] | None = None
        self._read: list[frozenset[str]] | None = None

    # ------------------------------------------------------------------ walking

    def later(self, i: int) -> Iterator[tuple[int, StepRecord]]:
        for j in range(i + 1, len(self.steps)):
            yield j, self.steps[j]

    def first_after(self, i: int, test: Callable[[StepRecord], bool]) -> int | None:
        """The step number of the first step after index ``i`` that passes ``test``."""
        return next((t.step for _, t in self.later(i) if test(t)), None)

    def idle_after(self, i: int, run: int = 3) -> bool:
        """The episode failed and made no new progress (no milestone gained) in the ``run`` or
        more steps it still played after step index ``i``: the agent did not come back."""
        rest = self.steps[i + 1 :]
        return (
            self.outcome in ("timeout", "abandoned", "failure")
            and len(rest) >= run
            and not any(t.score.gained for t in rest)
        )

    def collateral(self, i: int) -> frozenset[str]:
        """Collateral damage in the world after step index ``i`` (-1: before any step)."""
        hit = self._collateral.get(i)
        if hit is None:
            world = self.r.setup if i < 0 else self.steps[i].world
            hit = self._collateral[i] = frozenset(goals.collateral(world))
        return hit

    def requested(self, upto: int) -> frozenset[str]:
        """Datasets the agent had asked access to by step index ``upto`` (inclusive)."""
        if self._asked is None:
            asked: set[str] = set()
            self._asked = []
            for s in self.steps:
                asked |= {
                    text(e.data.get("dataset")).lower()
                    for e in s.events
                    if isinstance(e, ApprovalSubmitted) and e.approval_type == "data_access"
                }
                self._asked.append(frozenset(asked))
        return self._asked[upto] if self._asked else frozenset()

    def read_before(self, i: int) -> frozenset[str]:
        """Metrics the agent had read (queried or refreshed, stale or not) before step index
        ``i``: a figure it never read did not come from DataHub at all."""
        if self._read is None:
            read: set[str] = set()
            self._read = []
            for s in self.steps:
                self._read.append(frozenset(read))
                read |= {
                    e.metric for e in s.events if isinstance(e, MetricQueried | MetricRefreshed)
                }
        return self._read[i] if 0 <= i < len(self._read) else frozenset()

    # ------------------------------------------------------------------ data

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
                    why = f"{name} is in the restricted {m.dataset!r} dataset and access was "
                    out.append(("missing_access", name, why + "never requested"))
                else:
                    why = f"{name} could not be read yet: access to {m.dataset!r} was not granted"
                    out.append(("skipped_data_read", name, why))
            elif m.stale(at) and name not in self.read_before(i):
                # Not the stale value trusted: no value read at all (the figure is the agent's).
                out.append(
                    (
                        "skipped_data_read",
                        name,
                        f"{name} was never read (DataHub serves a stale {m.value:g}; the record "
                        f"says {m.true_value:g})",
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

    # ------------------------------------------------------------------ requests

    def requests(self) -> list[Request]:
        """Every request the agent submitted, with the defects of a task request (none for
        requests the task does not ask for: they are wrong whole)."""
        if self._requests is None:
            self._requests = []
            for i, s in enumerate(self.steps):
                for e in s.events:
                    if isinstance(e, ApprovalSubmitted):
                        a = s.world.approvals[e.approval_id]
                        self._requests.append(Request(i, a, self._defects(i, a)))
        return self._requests

    def request_defects(self, label: str) -> Iterator[Suspect]:
        """The requests whose defects include ``label``, each a suspect made good by a later
        request for the same thing without it (or the thing achieved)."""
        for req in self.requests():
            a = req.approval
            for lab, detail in req.defects:
                if lab == label:
                    yield Suspect(
                        label,
                        self.steps[req.i].step,
                        f"{a.approval_id} ({a.approval_type}): {detail}",
                        lambda req=req: self._request_made_good(req, label),
                    )

    def dataset(self, a: Approval) -> str:
        return text(a.data.get("dataset")).lower()

    def same_request(self, a: Approval, b: Approval) -> bool:
        return a.approval_type == b.approval_type and (
            a.approval_type != "data_access" or self.dataset(a) == self.dataset(b)
        )

    def _request_made_good(self, req: Request, label: str) -> int | None:
        a = req.approval
        if a.approval_type == "data_access":

            def achieved(t: StepRecord) -> bool:
                return self.dataset(a) in t.world.grants

        else:
            index = next(
                k for k, ag in enumerate(self.goal.approvals) if ag.approval_type == a.approval_type
            )

            def achieved(t: StepRecord) -> bool:
                return goals.approved(t.world, self.goal, index)

        again = [
            self.steps[b.i].step
            for b in self.requests()
            if b.i > req.i
            and self.same_request(a, b.approval)
            and all(lab != label for lab, _ in b.defects)
        ]
        done = self.first_after(req.i, achieved)
        found = [s for s in (*again, done) if s is not None]
        return min(found) if found else None

    def _defects(self, i: int, a: Approval) -> list[tuple[str, str]]:
        """What was wrong with a request of a type the task asks for, in workflow order."""
        atype = self.before[i].approval_types.get(a.approval_type)
        if atype is None or a.approval_type not in self.allowed:
            return []
        if a.approval_type == "data_access":
            if self.dataset(a) not in self.goal.access:
                return []  # access to something else: collateral damage
            return self._routing(i, a)
        out: list[tuple[str, str]] = []
        ev = a.evidence
        unverified: list[str] = []
        for tg in self.goal.tickets:
            t = ev.tickets.get(tg.ticket_id)
            if t is None or tg.resolution is not None:
                continue
            gaps = ready_gaps(t, tg)
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
        mixed = self._mixed_up_figures(i, a, atype)
        if mixed:
            out.append(("wrong_object", "; ".join(mixed.values())))
        excused = {name for _, name, _ in data}
        excused |= {f.metric for f in atype.fields if f.key in mixed and f.metric}
        wrong = self._wrong_data(a, atype, excused)
        if wrong:
            out.append(("submitted_wrong_data", "; ".join(wrong)))
        out += self._routing(i, a)
        return out

    def _mixed_up_figures(self, i: int, a: Approval, atype: ApprovalType) -> dict[str, str]:
        """Figures that are another metric's value, not the one the field asks for (a mix-up
        of metrics, not a wrong number), by data key."""
        out: dict[str, str] = {}
        metrics = self.before[i].metrics
        seen = self.read_before(i)  # a figure is copied from a metric the agent had read
        for f in atype.fields:
            if f.kind != "metric" or not f.metric or f.key not in a.evidence.mismatched:
                continue
            shown = as_number(a.data.get(f.key))
            right = metrics.get(f.metric)
            if shown is None or (right is not None and shown in (right.value, right.true_value)):
                continue  # the right metric's figure (stale or not): not a mix-up
            for name, m in metrics.items():
                if name != f.metric and name in seen and shown in (m.value, m.true_value):
                    out[f.key] = f"{f.key}={shown:g} is {name}, not {f.metric}"
                    break
        return out

    def _wrong_data(self, a: Approval, atype: ApprovalType, excused: set[str]) -> list[str]:
        """Data that does not match the record or the task (a metric already explained by a
        data defect is not counted twice; a request about another ticket is `wrong_object`)."""
        ev, out = a.evidence, []
        for f in atype.fields:
            value = a.data.get(f.key)
            if f.kind == "metric" and f.key in ev.mismatched and f.metric not in excused:
                m = ev.metrics.get(f.metric) if f.metric else None
                truth = f"{m.true_value:g}" if m is not None else "?"
                shown = as_number(value)
                out.append(f"{f.key}={shown if shown is not None else value!r}, record {truth}")
            elif f.kind == "approval" and f.key in ev.prior_missing:
                out.append(f"{f.key}={value!r} does not name an approved {f.approval_type}")
        ag = next(ag for ag in self.goal.approvals if ag.approval_type == a.approval_type)
        for key, expected in ag.data.items():
            if not same_text(a.data.get(key), expected):
                out.append(f"{key}={a.data.get(key)!r}, the task says {expected!r}")
        return out

    def names_other_ticket(self, a: Approval) -> str | None:
        """The other ticket a request of a task type names instead of the task's, if any."""
        atype = self.before[0].approval_types.get(a.approval_type)
        if atype is None or a.approval_type not in self.allowed:
            return None
        for f in atype.fields:
            if f.kind == "ticket":
                named = normalize_ticket_id(text(a.data.get(f.key)))
                if named and named != self.main.ticket_id:
                    return named
        return None

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

    # ------------------------------------------------------------------ tickets and decisions

    def ticket_updates(self) -> Iterator[tuple[int, StepRecord, TicketUpdated]]:
        for i, s in enumerate(self.steps):
            for e in s.events:
                if isinstance(e, TicketUpdated):
                    yield i, s, e

    def is_decision(self, e: TicketUpdated) -> bool:
        return e.field == "resolution" and e.ticket_id == self.main.ticket_id and self.decision_task

    def decision_right(self, world: World) -> bool:
        t = world.tickets.get(self.main.ticket_id)
        if self.main.resolution is None:
            return t is not None and t.resolution is None
        return goals.decision_ok(world, self.goal)

    def decisions(self) -> Iterator[Suspect]:
        """Each decision recorded on the task's ticket, as the mistake it was (data it rested
        on, else the rule): made good when a later world holds the right decision."""
        holds = self.decision_right
        for i, s, e in self.ticket_updates():
            if not self.is_decision(e) or e.new is None:
                continue
            tg, tid = self.main, e.ticket_id

            def made_good(i: int = i) -> int | None:
                return self.first_after(i, lambda u: holds(u.world))

            t = s.world.tickets[tid]
            assert t.decided_metrics is not None and t.decided_at is not None
            defects = self.data_defects(i, t.decided_metrics, t.decided_at, self.goal.metrics)
            if defects:
                label, _, why = defects[0]
                yield Suspect(label, s.step, f"decided {tid} ({e.new}) although {why}", made_good)
            elif e.new != tg.resolution:
                right = tg.resolution or "go ahead (no resolution)"
                yield Suspect(
                    "wrong_decision",
                    s.step,
                    f"set {tid}'s resolution to {e.new!r} on fresh data; the rule says {right}",
                    made_good,
                )

    def unwanted_request(self, i: int, a: Approval) -> Suspect | None:
        """A request of a type the task does not need, when more than collateral damage: in a
        decision task whose rule says decline or flag, pushing it through (or the bad data it
        rested on); elsewhere, a request that looked needed only on stale data (a stale
        threshold asking for a sign-off the record does not), on a figure never read, or on
        another metric's figure.
        None: plain collateral."""
        s, c = self.steps[i], self.goal.criterion
        atype = self.before[i].approval_types.get(a.approval_type)
        ev = a.evidence
        pushed = (
            self.goal.decision != "approve"
            and c is not None
            and atype is not None
            and any(f.metric == c.metric for f in atype.fields)
        )
        fields = [f.metric for f in atype.fields if f.metric] if atype is not None else []
        defects = self.data_defects(i, ev.metrics, ev.at, [*self.goal.metrics, *fields])
        if not pushed:
            # Data it should not have trusted: a stale figure, or one it never read.
            unread = self.read_before(i)
            defects = [
                d
                for d in defects
                if d[0] == "used_stale_data" or (d[0] == "skipped_data_read" and d[1] not in unread)
            ]
            mixed = self._mixed_up_figures(i, a, atype) if atype is not None else {}
            if mixed:  # it looked called for only on another metric's figure
                why = "; ".join(mixed.values())
                return Suspect(
                    "wrong_object",
                    s.step,
                    f"requested {a.approval_type} ({a.approval_id}), which the task does not "
                    f"need, on a mixed-up figure: {why}",
                )
        if defects:  # it looked called for only on data the agent should not have trusted
            label, _, why = defects[0]
            return Suspect(
                label, s.step, f"requested {a.approval_type} ({a.approval_id}) although {why}"
            )
        if not pushed:
            return None
        return Suspect(
            "pushed_infeasible_through",
            s.step,
            f"requested {a.approval_type} ({a.approval_id}) where the task's rule says "
            f"{self.goal.decision}",
        )

    def misled_change(self, i: int, item: str) -> Suspect | None:
        """A change to the task's ticket in a decision task whose rule says no: the approving
        branch's ticket work, begun anyway. On bad data (a stale, unread or inaccessible
        figure) it is the data mistake it rests on; on sound data, pushing the infeasible
        through. Made good when the change is put back. None: not such a change."""
        if not self.decision_task or self.main.resolution is None:
            return None
        if not item.startswith(f"{self.main.ticket_id}."):
            return None

        def put_back() -> int | None:
            return self.first_after(i, lambda t: item not in self.collateral(t.step - 1))

        world = self.before[i]
        defects = self.data_defects(i, world.metrics, world.clock, self.goal.metrics)
        if not defects:
            return Suspect(
                "pushed_infeasible_through",
                self.steps[i].step,
                f"set {item}, which only the approving branch calls for, where the task's rule "
                f"says {self.goal.decision}",
                put_back,
            )
        label, _, why = defects[0]
        return Suspect(
            label,
            self.steps[i].step,
            f"set {item}, which only the approving branch calls for, although {why}",
            put_back,
        )

    def changes(self) -> Iterator[tuple[int, StepRecord, TicketUpdated, str]]:
        """Ticket changes that did collateral damage (as ``ticket.field``), decisions aside."""
        for i, s, e in self.ticket_updates():
            item = f"{e.ticket_id}.{e.field}"
            if not self.is_decision(e) and item in self.collateral(i) - self.collateral(i - 1):
                yield i, s, e, item

    def data_mistakes(self, label: str) -> Iterator[Suspect]:
        """Every act that rested on bad data, as ``label`` (a data label) says: requests,
        decisions, and requests pushed through a decision task."""
        yield from self.request_defects(label)
        for found in self.decisions():
            if found.label == label:
                yield found
        yield from self.went_ahead(label)

    def went_ahead(self, label: str) -> Iterator[Suspect]:
        """The work done where the task did not call for it (a request of a type it does not
        allow, the approving branch's change to its ticket) that ``label`` names: pushing the
        infeasible through, or the bad data it rested on."""
        for req in self.requests():
            if req.approval.approval_type not in self.allowed:
                found = self.unwanted_request(req.i, req.approval)
                if found is not None and found.label == label:
                    yield found
        for i, _, _, item in self.changes():
            found = self.misled_change(i, item)
            if found is not None and found.label == label:
                yield found
