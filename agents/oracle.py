"""The oracle as an agent: it reads the true world (privileged) and plans the next call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain import World, plan

LOOK = {"app": "approvalflow", "method": "list_approvals", "params": {}}
"""A call that changes nothing: what a planner does when it has nothing left to do."""


class OracleAgent:
    """``world_of`` gives the current world of an episode id: in-process, the environment's
    live episode; remotely, the fold of the episode's events."""

    name = "oracle"

    def __init__(self, world_of: Callable[[str], World]) -> None:
        self.world_of = world_of

    def reset(self, observation: CompanyOSObservation) -> None:
        pass

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        assert observation.episode_id is not None
        call = plan(self.world_of(observation.episode_id))
        return LOOK if call is None else call.as_action()


def live_world(env: Any) -> Callable[[str], World]:
    """``world_of`` for a privileged agent in-process: the live world of ``env``'s episode."""

    def world_of(episode_id: str) -> World:
        ep = env.episode
        assert ep is not None and ep.id == episode_id
        return ep.world  # type: ignore[no-any-return]

    return world_of


def in_process_oracle(env: Any) -> OracleAgent:
    return OracleAgent(live_world(env))
