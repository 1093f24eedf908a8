"""Scripted mistake agents: for each label of the failure taxonomy (`projections.mistakes`), an
agent that makes exactly that mistake and otherwise plays as well as the oracle. They are the
fixtures that show the diagnosis names what went wrong, and at the step it went wrong.

Each is in-process and privileged like the oracle: it reads the live episode's world, asks
`domain.plan` for the oracle's next call and then changes what it does at the one point its
mistake is about. Some plan on a *pretend* world, the one the agent believes in: the agent that
never refreshes stale data plans as if what it read were fresh, the one that skips verification
as if the ticket were verified. That is how a mistake carries on consistently (the agent keeps
resubmitting with the same flaw) instead of being corrected by the oracle at the next step.

Every agent records ``mistake_step``: the step at which it made its mistake (None before, and
always for the fallbacks, which make none). `find_instances` looks for (family, difficulty, seed)
instances where a label's mistake can be made and fails the episode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from companyos.api.environment import CompanyOSEnvironment
from companyos.api.models import CompanyOSObservation
from companyos.domain import DIFFICULTIES, FAMILY_NAMES, World, build_instance, plan
from companyos.domain.instances import Instance
from companyos.domain.model import MINUTES_PER_STEP, PRIORITIES, effective_approver
from companyos.domain.oracle import WAIT, Call
from companyos.events.types import (
    ApprovalTypeDefined,
    ApproverRegistered,
    ChaosInjected,
    FaultInjected,
    Goal,
    ToolCalled,
)

from .base import play

LOOK = {"app": "approvalflow", "method": "list_approvals", "params": {}}
"""A call that changes nothing (what the oracle does while it waits)."""
FAULT_ERRORS = frozenset({"service_unavailable", "rate_limited", "service_down"})
EFFECTFUL = frozenset(
    {"update_ticket", "submit_approval", "escalate", "refresh_data", "query_metric"}
)


def _update(ticket_id: str, field: str, value: Any) -> dict[str, Any]:
    return {
        "app": "ticketdesk",
        "method": "update_ticket",
        "params": {"ticket_id": ticket_id, "field": field, "value": value},
    }


def _poll(approval_id: str) -> dict[str, Any]:
    return {"app": "approvalflow", "method": "check_status", "params": {"approval_id": approval_id}}


def _is_decision(call: Call) -> bool:
    return call.method == "update_ticket" and call.params.get("field") == "resolution"


def _is_task_request(call: Call, goal: Goal) -> bool:
    """A request of one of the task's own approval types (not an access request)."""
    kinds = {ag.approval_type for ag in goal.approvals}
    return call.method == "submit_approval" and call.params.get("approval_type") in kinds


def _waits(call: Call) -> bool:
    return call.method == "check_status" or call in WAIT.values()


def _goal(world: World) -> Goal:
    assert world.task is not None
    return world.task.goal


# --------------------------------------------------------------------------- pretend worlds


def _pretend_read(world: World, names: Iterable[str], *, fresh: bool) -> World:
    """``world`` as an agent that believes it has read ``names`` (and, with ``fresh``, that
    what it read is current) sees it."""
    metrics = dict(world.metrics)
    for name in names:
        m = metrics.get(name)
        if m is not None:
            changes: dict[str, Any] = {"fresh_read": m.version}
            if fresh:
                changes["as_of"] = world.clock
            metrics[name] = m._replace(**changes)
    return world._replace(metrics=metrics)


def _pretend_tickets(world: World, change: Callable[[Any, Any], dict[str, Any]]) -> World:
    """``world`` with each task ticket changed by ``change(ticket, ticket_goal)``."""
    tickets = dict(world.tickets)
    for tg in _goal(world).tickets:
        t = tickets.get(tg.ticket_id)
        if t is not None:
            changes = change(t, tg)
            if changes:
                tickets[tg.ticket_id] = t._replace(**changes)
    return world._replace(tickets=tickets)


_LISTS = (
    ("ticketdesk", "list_tickets"),
    ("datahub", "list_metrics"),
    ("approvalflow", "list_approval_types"),
)


def _free_look(world: World) -> dict[str, Any]:
    """A listing on an app that is not rate-limited (looking at one that is would spend its
    quota: hammering, another mistake)."""
    free = [t for t in _LISTS if t[0] not in world.services.limits] or list(_LISTS)
    app, method = free[0]
    return {"app": app, "method": method, "params": {}}


# --------------------------------------------------------------------------- the base


class Scripted:
    """The oracle with one deliberate flaw. Subclasses override `choose`, and call `made` when
    the action they return is the mistake.

    A mistaken call that a fault refused did not happen, so ``mistake_step`` is the first
    attempt that got through (``counts_refused`` for mistakes of omission: a refused poll is
    still not an escalation). Agents whose mistake is to stop working wait until they owe
    nothing (`settled`): a fault not yet retried or a rejection not yet answered would be
    another mistake, made first."""

    name = "scripted"
    label = ""
    counts_refused = False

    def __init__(self, env: CompanyOSEnvironment) -> None:
        self.env = env
        self._clear()

    def _clear(self) -> None:
        self._episode: str | None = None
        self._attempts: list[int] = []
        self._marking = False
        self._last: dict[str, Any] | None = None
        self.owed: set[tuple[Any, ...]] = set()
        """Purposes of effectful calls a fault refused and that were not made again yet."""

    def reset(self, observation: CompanyOSObservation) -> None:
        self._clear()
        self._episode = observation.episode_id

    @property
    def mistake_step(self) -> int | None:
        """The step of the mistake, once made (None before, and for the fallbacks)."""
        if not self._attempts:
            return None
        refused = set() if self.counts_refused else self._refused_steps()
        return next((step for step in self._attempts if step not in refused), None)

    def _refused_steps(self) -> set[int]:
        if self._episode is None:
            return set()
        refused, step = set(), 0
        for r in self.env.store.read(self._episode):
            if isinstance(r.event, ToolCalled):
                step = r.event.step
            elif isinstance(r.event, FaultInjected):
                refused.add(step)
        return refused

    def world(self) -> World:
        ep = self.env.episode
        assert ep is not None
        return ep.world

    def settled(self, world: World) -> bool:
        """Nothing owed: every refused call made again, no rejection or expiry standing."""
        return not self.owed and not any(
            a.status in ("rejected", "expired") for a in world.approvals.values()
        )

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        world = self.world()
        last = self._last
        if last is not None and observation.error in FAULT_ERRORS and last["method"] in EFFECTFUL:
            self.owed.add(_purpose(last))
        self._marking = False
        action = self.choose(world, observation)
        self.owed.discard(_purpose(action))
        if self._marking:
            self._attempts.append(world.step + 1)
        self._last = action
        return action

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        return self.oracle(world)

    def oracle(self, world: World) -> dict[str, Any]:
        call = plan(world)
        return LOOK if call is None else call.as_action()

    def made(self, world: World) -> None:
        """The action being chosen (for the step about to be played) is the mistake."""
        self._marking = True


def _purpose(action: dict[str, Any]) -> tuple[Any, ...]:
    """What a call is for (a retry may differ in its arguments, not in this)."""
    p = action.get("params") or {}
    method = action["method"]
    if method == "update_ticket":
        return (method, p.get("ticket_id"), p.get("field"))
    if method in ("query_metric", "refresh_data"):
        return ("read", p.get("metric_name"))
    if method == "submit_approval":
        return (method, p.get("approval_type"))
    return (method, repr(sorted(p.items())))


# --------------------------------------------------------------------------- the call itself


class HallucinatesTool(Scripted):
    """Changes tickets with a tool that does not exist (``ticketdesk.set_priority`` and the
    like) and never finds update_ticket."""

    label = name = "hallucinated_tool"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        call = plan(world)
        if call is None or call.method != "update_ticket":
            return self.oracle(world)
        self.made(world)
        p = call.params
        return {
            "app": "ticketdesk",
            "method": f"set_{p['field']}",
            "params": {"ticket_id": p["ticket_id"], "value": p["value"]},
        }


class SendsInvalidParams(Scripted):
    """Calls update_ticket with a misnamed argument (``new_value``) and never corrects it."""

    label = name = "invalid_params"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        call = plan(world)
        if call is None or call.method != "update_ticket":
            return self.oracle(world)
        self.made(world)
        p = call.params
        return {
            "app": "ticketdesk",
            "method": "update_ticket",
            "params": {"ticket_id": p["ticket_id"], "field": p["field"], "new_value": p["value"]},
        }


class NoRetryAfterFault(Scripted):
    """Treats a call that a fault refused as done: never makes it again, and waits for a world
    that will not come."""

    label = name = "no_retry_after_fault"
    counts_refused = True  # not retrying is the mistake, whatever became of the wait

    def reset(self, observation: CompanyOSObservation) -> None:
        super().reset(observation)
        self.given_up: set[tuple[Any, ...]] = set()

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        last = self._last
        if last is not None and observation.error in FAULT_ERRORS and last["method"] in EFFECTFUL:
            self.given_up.add(_purpose(last))
        action = self.oracle(world)
        if _purpose(action) not in self.given_up:
            return action
        self.made(world)  # the retry is due now, and it does not come
        return LOOK


class HammersRateLimit(Scripted):
    """Ignores rate limits: plans as if there were none, and calls a service again at once
    when it answers 429 (which keeps it closed)."""

    label = name = "ignored_rate_limit"
    counts_refused = True  # a refused call still counts against the limit: that is the harm

    def reset(self, observation: CompanyOSObservation) -> None:
        super().reset(observation)
        self.closed: dict[str, int] = {}
        self.hammered: dict[str, list[int]] = {}

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        last, result = self._last, observation.last_result
        if last is not None:
            app = last["app"]
            if observation.error == "rate_limited" and isinstance(result, dict):
                self.closed[app] = world.clock + int(result["retry_after_minutes"])
            elif observation.error not in FAULT_ERRORS and app in self.hammered:
                # A call got through after all: the hammering so far did no lasting harm.
                gone = set(self.hammered.pop(app))
                self._attempts = [step for step in self._attempts if step not in gone]
        answer = plan(world)
        if answer is not None and answer.method == "escalate":
            return answer.as_action()  # a rejection comes first (leaving it would be a mistake)
        unlimited = world._replace(services=world.services._replace(limits={}))
        call = plan(unlimited)
        if call is None:
            return LOOK
        if world.clock + MINUTES_PER_STEP < self.closed.get(call.app, 0):
            self.made(world)
            self.hammered.setdefault(call.app, []).append(world.step + 1)
        return call.as_action()


class ClosesBlockedTicket(Scripted):
    """Closes a blocked task ticket instead of unblocking it, again and again."""

    label = name = "closed_blocked_ticket"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        call = plan(world)
        if (
            call is not None
            and call.method == "update_ticket"
            and call.params["field"] == "status"
            and world.tickets[call.params["ticket_id"]].status == "blocked"
        ):
            self.made(world)
            return _update(call.params["ticket_id"], "status", "closed")
        return self.oracle(world)


# --------------------------------------------------------------------------- tickets


class DamagesCollateral(Scripted):
    """First changes the priority of a ticket the task does not mention, then plays perfectly
    (and never puts it back)."""

    label = name = "collateral_damage"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        if self.mistake_step is None:  # (until a change got through: a fault refuses some)
            wanted = {tg.ticket_id for tg in _goal(world).tickets}
            for t in sorted(world.tickets.values()):
                if t.ticket_id in wanted or t.status == "closed":
                    continue
                other = next(p for p in PRIORITIES if p != t.priority)
                self.made(world)
                return _update(t.ticket_id, "priority", other)
        return self.oracle(world)


class UndoesProgress(Scripted):
    """Verifies the task's ticket, un-verifies it once the tickets are done, and carries on as
    if it were still verified."""

    label = name = "undid_progress"

    def reset(self, observation: CompanyOSObservation) -> None:
        super().reset(observation)
        self.undone: str | None = None

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        if self.undone is not None:
            believed = _pretend_tickets(
                world, lambda t, tg: {"verified": True} if t.ticket_id == self.undone else {}
            )
            return self.oracle(believed)
        call = plan(world)
        target = next((tg.ticket_id for tg in _goal(world).tickets if tg.verify), None)
        if (
            call is not None
            and target is not None
            and world.tickets[target].verified
            and call.app != "ticketdesk"
        ):
            self.undone = target
            self.made(world)
            return _update(target, "verified", False)
        return self.oracle(world)


def _gapless(t: Any, tg: Any) -> dict[str, Any]:
    """A ticket as it would be with the goal's fields set and unblocked (not verified)."""
    changes: dict[str, Any] = dict(tg.fields)
    if tg.unblock and t.status == "blocked":
        changes["status"] = "open"
    return changes


class RequestsPrematurely(Scripted):
    """Verifies the ticket and submits the request without first restoring the ticket's missing
    field or unblocking it."""

    label = name = "premature_request"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        believed = _pretend_tickets(world, _gapless)
        call = plan(believed)
        if call is None:
            return LOOK
        if _is_task_request(call, _goal(world)) and believed.tickets != world.tickets:
            self.made(world)  # the pretend fixes are the difference: the real ticket lacks them
        return call.as_action()


class SkipsVerification(Scripted):
    """Never verifies a ticket: plans as if the task's tickets were verified, so its requests
    go out about unverified tickets (and are rejected, and go out again)."""

    label = name = "skipped_verification"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        believed = _pretend_tickets(world, lambda t, tg: {"verified": True} if tg.verify else {})
        call = plan(believed)
        if call is None:
            return LOOK
        goal = _goal(world)
        if _is_task_request(call, goal) and any(
            tg.verify and not world.tickets[tg.ticket_id].verified for tg in goal.tickets
        ):
            self.made(world)
        return call.as_action()


# --------------------------------------------------------------------------- data


class SkipsAccessRequest(Scripted):
    """Never asks for access to restricted data: plans as if it had it, and so keeps reading
    data it is refused."""

    label = name = "missing_access"
    counts_refused = True  # not asking is the mistake, whatever became of what it did instead

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        due = plan(world)
        if (
            due is not None
            and due.method == "submit_approval"
            and due.params.get("approval_type") == "data_access"
        ):
            self.made(world)  # the oracle would ask now; this agent never does
        believed = world._replace(grants=world.grants | set(_goal(world).access))
        call = plan(believed)
        return LOOK if call is None else call.as_action()


class UsesStaleData(Scripted):
    """Reads data instead of refreshing it and trusts what it read: submits or decides on the
    stale value, and keeps doing so."""

    label = name = "used_stale_data"

    def reset(self, observation: CompanyOSObservation) -> None:
        super().reset(observation)
        self.read: set[str] = set()

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        last = self._last
        if last and last["method"] == "query_metric" and observation.error is None:
            self.read.add(last["params"]["metric_name"])  # read (a refused read is no read)
        believed = _pretend_read(world, self.read, fresh=True)
        call = plan(believed)
        if call is None:
            return LOOK
        if call.method in ("refresh_data", "query_metric"):
            name = call.params["metric_name"]
            return {"app": "datahub", "method": "query_metric", "params": {"metric_name": name}}
        goal = _goal(world)
        if _is_task_request(call, goal) or _is_decision(call):
            soon = world.clock + MINUTES_PER_STEP
            if any(world.metrics[m].stale(soon) for m in goal.metrics if m in world.metrics):
                self.made(world)
        return call.as_action()


class SkipsDataRead(Scripted):
    """Never reads a metric that is fresh: it submits the value without confirming it (the
    value is right; the request still rests on data nobody looked at)."""

    label = name = "skipped_data_read"

    def reset(self, observation: CompanyOSObservation) -> None:
        super().reset(observation)
        self.assumed: set[str] = set()

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        soon = world.clock + MINUTES_PER_STEP
        while True:
            believed = _pretend_read(world, self.assumed, fresh=False)
            call = plan(believed)
            if call is None:
                return LOOK
            if call.method != "query_metric":
                break
            name = call.params["metric_name"]
            if name in self.assumed or world.metrics[name].stale(soon):
                break
            self.assumed.add(name)
        goal = _goal(world)
        if (_is_task_request(call, goal) or _is_decision(call)) and any(
            not world.metrics[m].read_fresh(soon) for m in self.assumed
        ):
            self.made(world)
        return call.as_action()


class SubmitsWrongData(Scripted):
    """Puts a figure into its requests that is not the system of record's (10% over), or,
    where a request carries no figure, the wrong text."""

    label = name = "submitted_wrong_data"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        call = plan(world)
        if call is None:
            return LOOK
        goal = _goal(world)
        if not _is_task_request(call, goal):
            return call.as_action()
        atype = world.approval_types[call.params["approval_type"]]
        data = dict(call.params["data"])
        figures = [f.key for f in atype.fields if f.kind == "metric" and f.metric]
        if figures:
            for key in figures:
                data[key] = round(float(data[key]) * 1.1 + 1, 2)
        else:
            ag = next(a for a in goal.approvals if a.approval_type == atype.name)
            for key in ag.data:
                data[key] = f"not {ag.data[key]}"
        self.made(world)
        return {**call.as_action(), "params": {**call.params, "data": data}}


# --------------------------------------------------------------------------- routing


class RoutesToAbsentApprover(Scripted):
    """Sends requests to the role holder even while they are out of office."""

    label = name = "routed_to_out_of_office"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        call = plan(world)
        if call is None or call.method != "submit_approval":
            return self.oracle(world)
        atype = world.approval_types[call.params["approval_type"]]
        holder = world.people.get(world.roles.get(atype.required_role, ""))
        if holder is None or not holder.out_of_office:
            return call.as_action()
        self.made(world)
        return {**call.as_action(), "params": {**call.params, "approver": holder.name}}


class RoutesToWrongApprover(Scripted):
    """Sends requests to someone in the office who holds another role."""

    label = name = "wrong_approver"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        call = plan(world)
        if call is None or call.method != "submit_approval":
            return self.oracle(world)
        role = world.approval_types[call.params["approval_type"]].required_role
        right = {world.roles.get(role), effective_approver(world, role)}
        wrong = next(
            (
                p
                for p in sorted(world.people.values())
                if not p.out_of_office and p.person_id not in right and p.role not in (None, role)
            ),
            None,
        )
        if wrong is None:
            return call.as_action()
        self.made(world)
        return {**call.as_action(), "params": {**call.params, "approver": wrong.name}}


# --------------------------------------------------------------------------- decisions


def _wrong_resolution(goal: Goal) -> str:
    right = goal.tickets[0].resolution
    if right == "declined":
        return "flagged"
    if right == "flagged":
        return "declined"
    c = goal.criterion
    return "flagged" if c is not None and c.op == "<=" else "declined"


class DecidesWrong(Scripted):
    """Reads everything fresh, then decides against the rule: declines or flags what
    qualifies, or picks the other of decline and flag."""

    label = name = "wrong_decision"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        call = plan(world)
        if call is None:
            return LOOK
        goal = _goal(world)
        decisive = _is_decision(call) or (
            goal.tickets[0].resolution is None and _is_task_request(call, goal)
        )
        if not decisive:
            return call.as_action()
        self.made(world)
        return _update(goal.ticket_id, "resolution", _wrong_resolution(goal))


class PushesInfeasible(Scripted):
    """Reads everything fresh and sees the request does not qualify, then asks for the
    approval anyway (before deciding as the rule says)."""

    label = name = "pushed_infeasible_through"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        call = plan(world)
        if call is None:
            return LOOK
        goal = _goal(world)
        if self.mistake_step is not None or not _is_decision(call) or goal.criterion is None:
            return call.as_action()
        metric = goal.criterion.metric
        atype = next(
            t for t in world.approval_types.values() if any(f.metric == metric for f in t.fields)
        )
        approver = effective_approver(world, atype.required_role)
        ticket = world.tickets[goal.ticket_id]
        data: dict[str, Any] = {}
        for f in atype.fields:
            if f.kind == "ticket":
                data[f.key] = goal.ticket_id
            elif f.kind == "metric" and f.metric:
                data[f.key] = world.metrics[f.metric].value
            else:
                data[f.key] = ticket.title
        self.made(world)
        return {
            "app": "approvalflow",
            "method": "submit_approval",
            "params": {
                "approval_type": atype.name,
                "approver": world.people[approver].name if approver else "",
                "data": data,
            },
        }


# --------------------------------------------------------------------------- outcomes and time


class GivesUpAfterRejection(Scripted):
    """Never escalates: when a request is rejected it watches the rejection instead."""

    label = name = "gave_up_after_rejection"
    counts_refused = True  # not escalating is the mistake, whatever became of the poll

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        call = plan(world)
        if call is None or call.method != "escalate":
            return self.oracle(world)
        self.made(world)
        return _poll(call.params["approval_id"])


class PollsForever(Scripted):
    """Once a request is approved, keeps polling it instead of moving on to the next one."""

    label = name = "timed_out_while_polling"
    counts_refused = True

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        approved = sorted(a for a in world.approvals.values() if a.status == "approved")
        call = plan(world)
        if not approved or (
            not self._attempts and (call is None or _waits(call) or not self.settled(world))
        ):
            return self.oracle(world)
        self.made(world)
        return _poll(approved[0].approval_id)


class GoesIdle(Scripted):
    """Plays the oracle for ``after`` steps and until nothing is owed or awaited, then idles
    (`idle`) for the rest of the episode."""

    counts_refused = True  # a refused idle call is as idle as one that went through

    def __init__(self, env: CompanyOSEnvironment, after: int = 2) -> None:
        super().__init__(env)
        self.after = after

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        call = plan(world)
        if not self._attempts and (
            world.step < self.after or call is None or _waits(call) or not self.settled(world)
        ):
            return self.oracle(world)
        self.made(world)
        return self.idle(world)

    def idle(self, world: World) -> dict[str, Any]:
        raise NotImplementedError


class Stalls(GoesIdle):
    """Plays well for a few steps, then only looks at the ticket list."""

    label = name = "stalled"

    def idle(self, world: World) -> dict[str, Any]:
        return _free_look(world)


class Loops(GoesIdle):
    """Plays well for a few steps, then sets the task ticket's ``verified`` to what it already
    is, over and over (busy, changing nothing; where TicketDesk is rate-limited, it re-reads a
    metric instead)."""

    label = name = "looped"

    def idle(self, world: World) -> dict[str, Any]:
        main = _goal(world).ticket_id
        if "ticketdesk" not in world.services.limits:
            return _update(main, "verified", world.tickets[main].verified)
        needed = set(_goal(world).metrics)
        spare = min(n for n, m in world.metrics.items() if not m.dataset and n not in needed)
        return {"app": "datahub", "method": "query_metric", "params": {"metric_name": spare}}


# --------------------------------------------------------------------------- fallbacks


class Dawdles(Scripted):
    """Makes no mistake but takes a look around before every move, so it needs twice the
    oracle's steps and runs out of them while still making progress."""

    label = name = "ran_out_of_steps"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        if world.step % 2 == 0 and self.settled(world):
            return _free_look(world)
        return self.oracle(world)


class Quits(Scripted):
    """Plays well for a few steps, then abandons the episode."""

    label = name = "abandoned"

    def __init__(self, env: CompanyOSEnvironment, after: int = 2) -> None:
        super().__init__(env)
        self.after = after

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        if world.step >= self.after:
            ep = self.env.episode
            assert ep is not None
            ep.abandon()  # the session leaves; the environment then answers every call "ended"
        return self.oracle(world)


MISTAKE_AGENTS: dict[str, Callable[[CompanyOSEnvironment], Scripted]] = {
    cls.label: cls
    for cls in (
        HallucinatesTool,
        SendsInvalidParams,
        NoRetryAfterFault,
        HammersRateLimit,
        ClosesBlockedTicket,
        DamagesCollateral,
        UndoesProgress,
        RequestsPrematurely,
        SkipsVerification,
        SkipsAccessRequest,
        UsesStaleData,
        SkipsDataRead,
        SubmitsWrongData,
        RoutesToAbsentApprover,
        RoutesToWrongApprover,
        DecidesWrong,
        PushesInfeasible,
        GivesUpAfterRejection,
        PollsForever,
        Stalls,
        Loops,
        Dawdles,
        Quits,
    )
}
"""A factory per taxonomy label: ``MISTAKE_AGENTS[label](env)`` plays on ``env``."""


# --------------------------------------------------------------------------- where they can fail


def _chaos(inst: Instance) -> list[ChaosInjected]:
    return [e for e in inst.setup if isinstance(e, ChaosInjected)]


def _roles(inst: Instance) -> set[str]:
    kinds = {ag.approval_type for ag in inst.goal.approvals}
    if inst.goal.access:
        kinds.add("data_access")
    return {
        e.required_role
        for e in inst.setup
        if isinstance(e, ApprovalTypeDefined) and e.approval_type in kinds
    }


def _holders(inst: Instance) -> dict[str, str]:
    return {e.person_id: e.role for e in inst.setup if isinstance(e, ApproverRegistered) and e.role}


def _away_holder(inst: Instance) -> bool:
    roles, holders = _roles(inst), _holders(inst)
    return any(c.kind == "out_of_office" and holders.get(c.target) in roles for c in _chaos(inst))


def _stale_goal_metric(inst: Instance) -> bool:
    return any(
        c.kind in ("stale_metric", "stale_during_episode") and c.target in inst.goal.metrics
        for c in _chaos(inst)
    )


def _fresh_goal_metric(inst: Instance) -> bool:
    stale = {c.target for c in _chaos(inst) if c.kind == "stale_metric"}
    return any(m not in stale for m in inst.goal.metrics)


def _blocked_goal_ticket(inst: Instance) -> bool:
    unblock = {tg.ticket_id for tg in inst.goal.tickets if tg.unblock}
    return any(c.kind == "blocked_ticket" and c.target in unblock for c in _chaos(inst))


def _ticket_gap(inst: Instance) -> bool:
    fields = {(tg.ticket_id, f) for tg in inst.goal.tickets for f in tg.fields}
    return bool(inst.goal.approvals) and (
        _blocked_goal_ticket(inst)
        or any(
            c.kind == "missing_field" and (c.target, c.params.get("field")) in fields
            for c in _chaos(inst)
        )
    )


def _verifies(inst: Instance) -> bool:
    return bool(inst.goal.approvals) and any(tg.verify for tg in inst.goal.tickets)


POSSIBLE: dict[str, Callable[[Instance], bool]] = {
    "hallucinated_tool": lambda i: True,
    "invalid_params": lambda i: True,
    "no_retry_after_fault": lambda i: i.difficulty >= 1,
    "ignored_rate_limit": lambda i: any(c.kind == "rate_limit" for c in _chaos(i)),
    "closed_blocked_ticket": _blocked_goal_ticket,
    "collateral_damage": lambda i: True,
    "undid_progress": _verifies,
    "premature_request": _ticket_gap,
    "skipped_verification": _verifies,
    "missing_access": lambda i: bool(i.goal.access),
    "used_stale_data": _stale_goal_metric,
    "skipped_data_read": _fresh_goal_metric,
    "submitted_wrong_data": lambda i: bool(i.goal.approvals),
    "routed_to_out_of_office": _away_holder,
    "wrong_approver": lambda i: bool(i.goal.approvals),
    "wrong_decision": lambda i: i.goal.criterion is not None,
    "pushed_infeasible_through": lambda i: i.goal.decision != "approve",
    "gave_up_after_rejection": lambda i: i.difficulty >= 1,
    "timed_out_while_polling": lambda i: (
        (len(i.goal.approvals) >= 2 or bool(i.goal.access))
        and not any(c.kind == "rate_limit" and c.target == "approvalflow" for c in _chaos(i))
    ),
    "stalled": lambda i: True,
    "looped": lambda i: True,
    "ran_out_of_steps": lambda i: True,
    "abandoned": lambda i: True,
}
"""What an instance must offer for a label's mistake to be possible (cheap, from its opening
events); `find_instances` then plays the agent to see that it was made and was fatal."""

FALLBACK_LABELS = frozenset({"ran_out_of_steps", "abandoned"})


def candidates(
    difficulties: Iterable[int] = DIFFICULTIES,
    families: Iterable[str] = FAMILY_NAMES,
    seeds: Iterable[int] = range(200),
) -> Iterator[tuple[str, int, int]]:
    """(family, difficulty, seed) in a stable order that varies the family fastest."""
    fams, levels = tuple(families), tuple(difficulties)
    for seed in seeds:
        for d in levels:
            for f in fams:
                yield f, d, seed


def find_instances(
    label: str,
    count: int = 1,
    *,
    difficulties: Iterable[int] = (1, 2, 3),
    families: Iterable[str] = FAMILY_NAMES,
    seeds: Iterable[int] = range(200),
) -> list[tuple[str, int, int]]:
    """Up to ``count`` instances (family, difficulty, seed) on which ``MISTAKE_AGENTS[label]``
    makes its mistake and the episode fails (for a fallback: fails the way it names)."""
    possible = POSSIBLE[label]
    found: list[tuple[str, int, int]] = []
    env = CompanyOSEnvironment()
    agent = MISTAKE_AGENTS[label](env)
    try:
        for family, difficulty, seed in candidates(difficulties, families, seeds):
            if not possible(build_instance(family, seed, difficulty)):
                continue
            result = play(env, agent, seed=seed, task_id=family, difficulty=difficulty)
            if result.outcome == "success":
                continue
            made = agent.mistake_step is not None
            if label in FALLBACK_LABELS:
                made = result.outcome == ("abandoned" if label == "abandoned" else "timeout")
            if made:
                found.append((family, difficulty, seed))
                if len(found) >= count:
                    break
    finally:
        env.close()
    return found
