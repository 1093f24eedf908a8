"""The composite evolve: apply one event to the world. Pure; unknown types leave it alone."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from companyos.events.types import (
    AppRulesSet,
    ChaosInjected,
    EpisodeEnded,
    EpisodeStarted,
    Event,
    FaultInjected,
    TaskAssigned,
    ToolCalled,
)

from . import approvalflow, datahub, ticketdesk
from .model import AppRules, ChaosLedger, EpisodeInfo, Task, World

Evolve = Callable[[World, Any], World]

FAULT_KINDS = {
    "unavailable": "transient_fault",
    "outage": "partial_outage",
    "rate_limited": "rate_limit",
}
"""The chaos kind each kind of refused call belongs to."""


def _started(world: World, e: EpisodeStarted) -> World:
    fork = (e.forked_from.episode_id, e.forked_from.at_step) if e.forked_from else None
    info = EpisodeInfo(
        e.seed,
        e.scenario,
        e.difficulty,
        e.max_steps,
        e.reward_profile,
        e.fault_budget,
        fork,
        e.show_progress,
    )
    untimed = generator_version(e.generator) >= 4
    rules = world.rules
    if rules.untimed_faults != untimed:
        rules = rules._replace(untimed_faults=untimed)
    return world._replace(info=info, rules=rules)


def generator_version(generator: str) -> int:
    """The number of a generator label such as ``companyos/4`` (0 if it has none)."""
    _, _, number = generator.rpartition("/")
    return int(number) if number.isdigit() else 0


def _task(world: World, e: TaskAssigned) -> World:
    return world._replace(task=Task(e.text, e.goal, e.family, e.instance_id))


def _called(world: World, e: ToolCalled) -> World:
    changes: dict[str, Any] = {"step": e.step}
    if world.baseline is None:
        changes["baseline"] = world.tickets  # the task begins with the first call
    limits = world.services.limits
    if e.app in limits:  # a rate-limited service counts every call, refused ones too
        clock = world._replace(step=e.step).clock
        _, window = limits[e.app]
        kept = tuple(t for t in world.services.calls.get(e.app, ()) if t > clock - window)
        calls = {**world.services.calls, e.app: (*kept, clock)}
        changes["services"] = world.services._replace(calls=calls)
    return world._replace(**changes)


def _rules(world: World, e: AppRulesSet) -> World:
    rules = AppRules(
        e.first_approval_number,
        e.approval_number_digits,
        e.decide_on,
        e.away_approver,
        e.closed_read_only,
        e.link_needs_approval,
        world.rules.untimed_faults,  # the simulation's rule, not an app's convention
    )
    return world._replace(rules=rules)


def _ended(world: World, e: EpisodeEnded) -> World:
    return world._replace(outcome=e.outcome)


def _fault(world: World, e: FaultInjected) -> World:
    c = world.chaos
    kind = FAULT_KINDS.get(e.kind, e.kind)
    faults = c.faults + (e.kind == "unavailable")
    if kind in c.kinds and faults == c.faults:
        return world
    world = world._replace(chaos=ChaosLedger(c.kinds | {kind}, faults))
    calls = world.services.calls.get(e.app)
    if e.kind == "unavailable" and world.rules.untimed_faults and calls:
        # The call never reached the service: it does not count against its rate limit.
        s = world.services
        world = world._replace(services=s._replace(calls={**s.calls, e.app: calls[:-1]}))
    return world


def _services(world: World, e: ChaosInjected) -> World:
    s = world.services
    if e.kind == "rate_limit":
        s = s._replace(
            limits={**s.limits, e.target: (int(e.params["calls"]), int(e.params["window_minutes"]))}
        )
    elif e.kind == "partial_outage":
        s = s._replace(
            outages={
                **s.outages,
                e.target: (int(e.params["from_minute"]), int(e.params["until_minute"])),
            }
        )
    elif e.kind == "approval_sla":
        s = s._replace(sla=int(e.params["minutes"]))
    return world._replace(services=s)


def _duplicate(world: World, e: ChaosInjected) -> World:
    original = world.tickets[e.params["of"]]
    copy = original._replace(ticket_id=e.target)
    return world._replace(tickets={**world.tickets, e.target: copy})


_CHAOS: dict[str, Evolve] = {
    **ticketdesk.CHAOS,
    **datahub.CHAOS,
    **approvalflow.CHAOS,
    "rate_limit": _services,
    "partial_outage": _services,
    "approval_sla": _services,
    "duplicate_ticket": _duplicate,
}


def _chaos(world: World, e: ChaosInjected) -> World:
    apply = _CHAOS.get(e.kind)
    if apply is not None:
        world = apply(world, e)
    if e.kind not in world.chaos.kinds:
        world = world._replace(chaos=world.chaos._replace(kinds=world.chaos.kinds | {e.kind}))
    return world


EVOLVERS: dict[str, Evolve] = {
    "EpisodeStarted": _started,
    "TaskAssigned": _task,
    "AppRulesSet": _rules,
    "ToolCalled": _called,
    "EpisodeEnded": _ended,
    "FaultInjected": _fault,
    "ChaosInjected": _chaos,
    **ticketdesk.EVOLVERS,
    **datahub.EVOLVERS,
    **approvalflow.EVOLVERS,
}


def evolve(world: World, event: Event) -> World:
    fn = EVOLVERS.get(event.type)
    return world if fn is None else fn(world, event)


def fold(events: Iterable[Event], world: World | None = None) -> World:
    w = World() if world is None else world
    for e in events:
        fn = EVOLVERS.get(e.type)
        if fn is not None:
            w = fn(w, e)
    return w
