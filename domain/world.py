"""The composite evolve: apply one event to the world. Pure; unknown types leave it alone."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from companyos.events.types import (
    ChaosInjected,
    EpisodeEnded,
    EpisodeStarted,
    Event,
    FaultInjected,
    TaskAssigned,
    ToolCalled,
)

from . import approvalflow, datahub, ticketdesk
from .model import ChaosLedger, EpisodeInfo, Task, World

Evolve = Callable[[World, Any], World]


def _started(world: World, e: EpisodeStarted) -> World:
    fork = (e.forked_from.episode_id, e.forked_from.at_step) if e.forked_from else None
    info = EpisodeInfo(
        e.seed, e.scenario, e.difficulty, e.max_steps, e.reward_profile, e.fault_budget, fork
    )
    return world._replace(info=info)


def _task(world: World, e: TaskAssigned) -> World:
    return world._replace(task=Task(e.text, e.goal))


def _called(world: World, e: ToolCalled) -> World:
    return world._replace(step=e.step)


def _ended(world: World, e: EpisodeEnded) -> World:
    return world._replace(outcome=e.outcome)


def _fault(world: World, e: FaultInjected) -> World:
    c = world.chaos
    return world._replace(chaos=ChaosLedger(c.kinds | {"transient_fault"}, c.faults + 1))


_CHAOS: dict[str, Evolve] = {**ticketdesk.CHAOS, **datahub.CHAOS, **approvalflow.CHAOS}


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
