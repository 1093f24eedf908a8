"""The honest solver as an agent: it plays from observations only (the task text, each call's
result, message and error code, and the clock), through the same `reset`/`step` any client
uses, in-process or against a server. It never reads the world, the goal or the grader: that it
solves every instance is the proof that every instance can be solved from what an agent sees
(`domain.honest`)."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import HonestSolver, Seen


class HonestAgent:
    name = "honest"

    def __init__(self) -> None:
        self.solver: HonestSolver | None = None
        self._started = False

    def reset(self, observation: CompanyOSObservation) -> None:
        if observation.task_id is None:
            raise ValueError("the honest agent needs the observation of a reset (task and family)")
        self.solver = HonestSolver(observation.task, observation.task_id)
        self._started = False

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        assert self.solver is not None, "reset() first"
        seen = seen_in(observation) if self._started else None
        self._started = True
        app, method, params = self.solver.act(seen)
        return {"app": app, "method": method, "params": params}


def seen_in(observation: CompanyOSObservation) -> Seen:
    """What the last call showed, as the honest solver reads it."""
    return Seen(
        observation.clock_minutes,
        observation.last_result,
        observation.message,
        observation.error,
    )
