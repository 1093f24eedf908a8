"""The naive baseline: does what the task text says, in the obvious way, and ignores chaos.

It reads the world (privileged, like the oracle) to know the ids the text names, but it never
refreshes data, routes requests to the role holder even when they are away, does not escalate a
rejection or ask for access, does not notice that a call failed (it never makes the same call
twice, but for polling), and decides a decision task on whatever value DataHub served.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain import Call, World, plan

from .oracle import LOOK, live_world


class NaiveAgent:
    name = "naive"

    def __init__(self, world_of: Callable[[str], World]) -> None:
        self.world_of = world_of

    def reset(self, observation: CompanyOSObservation) -> None:
        self.done: set[Call] = set()

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        assert observation.episode_id is not None
        call = plan(self.world_of(observation.episode_id), aware=False, done=frozenset(self.done))
        if call is None:
            return LOOK
        self.done.add(call)
        return call.as_action()


def in_process_naive(env: Any) -> NaiveAgent:
    return NaiveAgent(live_world(env))
