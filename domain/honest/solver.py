"""The honest solver: plays a task from what the agent is shown and nothing else.

It reads the task text (`brief`), then works the apps the way a careful person would: looks at
the approval forms and the metric catalogue, fixes and verifies the tickets, asks for access to
restricted data early (a grant takes time), pulls every figure fresh from its source just before
it is used, decides what the text's rule says, finds who acts for each role, submits, waits,
escalates a rejection the approver says to escalate, resubmits one that expired, retries a
transient failure, and works elsewhere (or waits) while a service is down or rate-limited.

Its beliefs come only from observations: the task text, each call's result, message and error
code, and the clock. It never sees the world, the goal or the grader. That it solves every
instance of every suite is the proof that every instance is solvable from observations (tests
check it), and its worst case against an adversary is each instance's step budget
(`domain.instances`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .brief import Brief, TicketNeed, matches, read_brief


@dataclass(frozen=True, slots=True)
class Seen:
    """What one observation shows, as the solver reads it."""

    clock: int
    """Simulated minutes since the start (the observation's ``clock_minutes``)."""
    result: Any
    message: str
    error: str | None


Call = tuple[str, str, dict[str, Any]]

WAITS: tuple[Call, ...] = (
    ("approvalflow", "list_approvals", {}),
    ("datahub", "list_metrics", {}),
    ("ticketdesk", "list_tickets", {}),
)
"""Calls that change nothing: what to do while waiting on a decision or a service."""
ESCALATION = "The request meets the policy and its data is current; please review it again."


def _minute(label: str) -> int | None:
    """Minutes since Monday 09:00 from a label such as "Mon 09:40"."""
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    try:
        day, hhmm = label.split()
        hours, minutes = hhmm.split(":")
        return days.index(day) * 1440 + int(hours) * 60 + int(minutes) - 9 * 60
    except ValueError:
        return None


_UNSEEN = object()


class HonestSolver:
    """One episode's solver: ``act(seen)`` gives the next call after seeing ``seen``."""

    def __init__(self, task: str, family: str) -> None:
        self.brief: Brief = read_brief(task, family)
        self.main: str | None = self.brief.main or None
        """The task's ticket (found by its title when the text does not name it)."""
        self.needs: list[TicketNeed] = list(self.brief.tickets)
        self.now = 0
        self.types: dict[str, Any] | None = None
        self.catalog: list[dict[str, Any]] | None = None
        self.tickets: dict[str, dict[str, Any]] = {}
        self.values: dict[str, float] = {}
        """Figures as their source gave them, by metric name."""
        self.approvers: dict[str, str] = {}
        self.requests: dict[str, dict[str, Any]] = {}
        self.slot: dict[str, str] = {}
        """Approval type (or ``access:<dataset>``) -> the id of the request working on it."""
        self.granted: set[str] = set()
        self.down_until: dict[str, int] = {}
        self.limits: dict[str, tuple[int, int]] = {}
        self.calls: dict[str, list[int]] = {}
        self.last: Call | None = None
        self.retry = False
        self.decision: bool | None = None
        """True: go ahead; False: the rule says decline (or flag)."""
        self._needs_of: tuple[Any, list[dict[str, Any]]] = (_UNSEEN, [])
        """`_needed` for the catalogue it was found in: a plan asks it several times."""

    # ------------------------------------------------------------------ seeing

    def observe(self, seen: Seen) -> None:
        before, self.now = self.now, seen.clock
        self.retry = False
        call, self.last = self.last, None
        if call is None:
            return
        app, method, params = call
        result = seen.result if isinstance(seen.result, dict) else {}
        if seen.error == "service_unavailable":
            self.retry, self.last = True, call
            if seen.clock == before and self.calls.get(app):
                self.calls[app].pop()  # it took no time: it never reached the service
            return
        if seen.error == "rate_limited":
            self.down_until[app] = seen.clock + int(result.get("retry_after_minutes", 5))
            limit = result.get("limit")
            if isinstance(limit, dict):
                self.limits[app] = (int(limit["calls"]), int(limit["window_minutes"]))
            return
        if seen.error == "service_down":
            until = _minute(str(result.get("until", "")))
            self.down_until[app] = seen.clock + 5 if until is None else until
            return
        if seen.error is not None:
            self._refused(app, method, params, seen)
            return
        if method == "list_approval_types":
            self.types = result.get("approval_types", {})
        elif method == "list_metrics":
            # Copies: a refusal later notes an entry's dataset in it (`_refused`), and what was
            # shown is not ours to change (simulated forks share each step's rendering).
            metrics = result.get("metrics", [])
            self.catalog = [dict(e) if isinstance(e, dict) else e for e in metrics]
        elif method == "list_tickets" and self.main is None:
            for t in result.get("tickets", []):
                if matches(self.brief.find, str(t.get("title", ""))):
                    self.main = str(t["ticket_id"])
                    self.needs = [TicketNeed(self.main, verify=self.brief.verify_found)]
                    break
        elif method in ("get_ticket", "update_ticket"):
            view = result.get("ticket", result)
            self.tickets[str(view.get("ticket_id"))] = view
        elif method == "refresh_data":
            self.values[str(result.get("metric"))] = float(result["value"])
        elif method == "get_approver":
            if result.get("approver"):
                self.approvers[str(params["role"])] = str(result["approver"])
        elif method in ("submit_approval", "check_status", "escalate"):
            aid = str(result.get("approval_id"))
            self.requests[aid] = result
            if method == "submit_approval":
                self.slot[self._slot_of(params)] = aid
            if result.get("status") == "approved" and result.get("approval_type") == "data_access":
                self.granted.add(str(result.get("data", {}).get("dataset", "")).lower())

    def _refused(self, app: str, method: str, params: dict[str, Any], seen: Seen) -> None:
        """A call the app refused: learn what the refusal says."""
        if seen.error == "permission_denied" and self.catalog is not None:
            name = params.get("metric_name")
            for entry in self.catalog:
                if entry.get("metric") == name and "dataset" not in entry:
                    entry["dataset"] = _quoted(seen.message)
        if method == "update_ticket":
            self.tickets.pop(str(params.get("ticket_id")), None)  # look again

    def _slot_of(self, params: dict[str, Any]) -> str:
        kind = str(params.get("approval_type"))
        if kind == "data_access":
            return f"access:{str(params.get('data', {}).get('dataset', '')).lower()}"
        return kind

    # ------------------------------------------------------------------ acting

    def act(self, seen: Seen | None) -> Call:
        if seen is not None:
            self.observe(seen)
        if self.retry and self.last is not None and self._takes(self.last[0]):
            call = self.last
        else:
            call = next((c for c in self._plan() if self._takes(c[0])), None)
            if call is None:
                # Wait where it costs nothing: not on a rate-limited service.
                waits = sorted(WAITS, key=lambda w: w[0] in self.limits)
                call = next((w for w in waits if self._takes(w[0])), waits[0])
        self.last = call
        self.calls.setdefault(call[0], []).append(self.now + 5)
        return call

    def _takes(self, app: str) -> bool:
        """The app will take a call at the next step: not down, and within its rate limit."""
        at = self.now + 5
        if self.down_until.get(app, -1) > at:
            return False
        limit = self.limits.get(app)
        if limit is not None:
            calls, window = limit
            recent = [t for t in self.calls.get(app, ()) if t > at - window]
            if len(recent) + 1 > calls:
                return False
        return True

    def _plan(self) -> list[Call]:
        """Useful calls, most urgent first (the first whose app is open is made)."""
        b = self.brief
        out: list[Call] = []
        if self.main is None:
            out.append(("ticketdesk", "list_tickets", {}))
        if self.types is None:
            out.append(("approvalflow", "list_approval_types", {}))
        if self.catalog is None and (b.subject or b.rule or b.above):
            out.append(("datahub", "list_metrics", {}))
        out += self._access(submit_only=True)
        deciding = b.rule is not None and self.decision is None
        if not deciding and self.decision is not False:
            out += self._ticket_work()
        out += self._access(submit_only=False)
        figures = self._figures()
        # Work that can be done at any time comes after, for when the app the next step
        # needs is down or rate-limited.
        anytime = figures + self._lookups()
        if out:
            return out + anytime
        if figures:
            return anytime
        if deciding:
            self.decision = self._rule_holds()
        if self.decision is False:
            assert b.rule is not None
            assert self.main is not None
            return [_update(self.main, "resolution", b.rule.otherwise)]
        if deciding:
            return self._plan()
        return self._chain()

    def _lookups(self) -> list[Call]:
        """Who acts for each role the requests need, asked once each."""
        if self.types is None:
            return []
        kinds = [k for k in self.brief.chain if k in self.types]
        if any(m.get("dataset") for m in self._needed()):
            kinds.insert(0, "data_access")
        roles = dict.fromkeys(r for k in kinds if (r := self._role(k)) is not None)
        return [
            ("datahub", "get_approver", {"role": role})
            for role in roles
            if role not in self.approvers
        ]

    # ------------------------------------------------------------------ tickets

    def _ticket_work(self) -> list[Call]:
        out: list[Call] = []
        for need in self.needs:
            view = self.tickets.get(need.ticket_id)
            if view is None:
                out.append(("ticketdesk", "get_ticket", {"ticket_id": need.ticket_id}))
                continue
            fill = self.brief.fill if need.ticket_id == self.main else {}
            fix = _next_fix(view, need, fill)
            if fix is not None:
                out.append(fix)
        return out

    # ------------------------------------------------------------------ data

    def _metric(self, hints: tuple[str, ...]) -> dict[str, Any] | None:
        for entry in self.catalog or ():
            if matches(hints, str(entry.get("metric", "")), str(entry.get("description", ""))):
                return entry
        return None

    def _needed(self) -> list[dict[str, Any]]:
        # Which entries match depends only on their names and descriptions, and a catalogue
        # is replaced whole when listed again (entries only learn a dataset in place).
        catalog, needed = self._needs_of
        if catalog is self.catalog:
            return needed
        b = self.brief
        wanted = [b.subject, b.above, b.rule.bound if b.rule else ()]
        needed = [m for hints in wanted if hints and (m := self._metric(hints)) is not None]
        self._needs_of = (self.catalog, needed)
        return needed

    def _figures(self) -> list[Call]:
        """Pull each figure the work stands on fresh from its source (a refresh reads the
        system of record, stale cache or not), once access to it is granted."""
        out: list[Call] = []
        for m in self._needed():
            name = str(m["metric"])
            dataset = m.get("dataset")
            if name in self.values or (dataset and str(dataset).lower() not in self.granted):
                continue
            out.append(("datahub", "refresh_data", {"metric_name": name}))
        return out

    def _value(self, hints: tuple[str, ...]) -> float | None:
        m = self._metric(hints)
        return None if m is None else self.values.get(str(m["metric"]))

    def _rule_holds(self) -> bool:
        rule = self.brief.rule
        assert rule is not None
        value = self._value(self.brief.subject)
        bound = rule.threshold if rule.threshold is not None else self._value(rule.bound)
        assert value is not None and bound is not None
        return value >= bound if rule.op == ">=" else value <= bound

    # ------------------------------------------------------------------ access

    def _access(self, submit_only: bool) -> list[Call]:
        out: list[Call] = []
        if self.types is None:
            return out
        for m in self._needed():
            dataset = m.get("dataset")
            if not dataset or str(dataset).lower() in self.granted:
                continue
            key = f"access:{str(dataset).lower()}"
            live = self._live(key)
            if live is None:
                approver = self._approver("data_access")
                if approver is None:
                    out.append(self._lookup("data_access"))
                    continue
                data = {"dataset": str(dataset), "reason": f"Needed for ticket {self.main}."}
                out.append(_submit("data_access", approver, data))
            elif not submit_only:
                out += self._follow(live)
        return out

    # ------------------------------------------------------------------ approvals

    def _steps(self) -> tuple[str, ...]:
        assert self.types is not None
        chain = tuple(kind for kind in self.brief.chain if kind in self.types)
        if self.brief.above:
            subject, threshold = self._value(self.brief.subject), self._value(self.brief.above)
            assert subject is not None and threshold is not None
            if subject <= threshold:
                return chain[1:]
        return chain

    def _chain(self) -> list[Call]:
        prior: str | None = None
        steps = self._steps()
        for kind in steps:
            live = self._live(kind)
            if live is not None and self.requests[live].get("status") == "approved":
                prior = live
                continue
            if live is not None:
                return self._follow(live)
            approver = self._approver(kind)
            if approver is None:
                return [self._lookup(kind)]
            return [_submit(kind, approver, self._data(kind, prior))]
        return []

    def _live(self, key: str) -> str | None:
        """The request working on ``key``, unless it can no longer get approved."""
        aid = self.slot.get(key)
        if aid is None:
            return None
        view = self.requests[aid]
        status = view.get("status")
        if status == "expired" or (status == "rejected" and not _escalate(view)):
            return None
        return aid

    def _follow(self, aid: str) -> list[Call]:
        view = self.requests[aid]
        if view.get("status") == "rejected":
            return [("approvalflow", "escalate", {"approval_id": aid, "reason": ESCALATION})]
        return [("approvalflow", "check_status", {"approval_id": aid})]

    def _role(self, kind: str) -> str | None:
        assert self.types is not None
        form = self.types.get(kind)
        return None if form is None else str(form.get("required_role"))

    def _approver(self, kind: str) -> str | None:
        role = self._role(kind)
        return None if role is None else self.approvers.get(role)

    def _lookup(self, kind: str) -> Call:
        return ("datahub", "get_approver", {"role": self._role(kind)})

    def _data(self, kind: str, prior: str | None) -> dict[str, Any]:
        """The request's data, field by field, from what its form says each one is."""
        assert self.types is not None
        form = self.types[kind]
        optional = set(form.get("optional_data", []))
        data: dict[str, Any] = {}
        for key, what in form.get("fields", {}).items():
            what = str(what).lower()
            if key in self.brief.entities:
                data[key] = self.brief.entities[key]
            elif "ticket" in key:
                data[key] = self.main
            elif "approv" in key:
                if prior is not None:
                    data[key] = prior
                elif key not in optional:
                    data[key] = ""
            elif "datahub" in what or (self.brief.subject and key not in optional):
                # The figure the work stands on, as its source gave it (a form that does not
                # say which field is the figure leaves one field unaccounted for: that one).
                value = self._value(self.brief.subject)
                data[key] = value if value is not None else ""
            elif key not in optional:
                data[key] = self.brief.entities.get(key, "")
        return data


def _next_fix(view: dict[str, Any], need: TicketNeed, fill: dict[str, str]) -> Call | None:
    tid = need.ticket_id
    if view.get("status") == "blocked":
        return _update(tid, "status", "open")
    for name, value in fill.items():
        if not view.get(name) or view.get(name) == "unknown":
            return _update(tid, name, value)
    if need.priority and view.get("priority") != need.priority:
        return _update(tid, "priority", need.priority)
    if need.assignee and view.get("assignee") != need.assignee:
        return _update(tid, "assignee", need.assignee)
    if need.verify and view.get("verified") is not True:
        return _update(tid, "verified", True)
    if need.resolve and view.get("status") != "resolved":
        return _update(tid, "status", "resolved")
    return None


def _update(ticket_id: str, field: str, value: Any) -> Call:
    return ("ticketdesk", "update_ticket", {"ticket_id": ticket_id, "field": field, "value": value})


def _submit(kind: str, approver: str, data: dict[str, Any]) -> Call:
    params = {"approval_type": kind, "approver": approver, "data": data}
    return ("approvalflow", "submit_approval", params)


def _escalate(view: dict[str, Any]) -> bool:
    """The approver's reason says to escalate (a rejection the request did not cause)."""
    return "escalate" in str(view.get("reason", "")).lower()


def _quoted(message: str) -> str:
    """The first quoted word of a message (the dataset a refusal names)."""
    parts = message.split("'")
    return parts[1] if len(parts) > 2 else ""
