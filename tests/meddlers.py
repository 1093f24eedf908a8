"""The honest solver with a meddler beside it: before some of the solver's calls, the meddler
slips in calls of its own (a hedge, a request about another ticket, a favour for a colleague).

The solver is not told: it sees only the results of its own calls, as if the meddler's never
happened (but the clock it reads is the current one), so the two together are the solver's
correct work plus exactly the meddling. That is what grading must catch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from companyos.agents.honest import HonestAgent
from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import HonestSolver, Seen

Action = dict[str, Any]
RETRY = frozenset({"service_unavailable", "rate_limited", "service_down"})
Meddle = Callable[[Action, CompanyOSObservation], list[Action]]
"""Given the solver's next call and the latest observation, the calls to slip in first."""


class Meddled:
    name = "meddled"

    def __init__(self, meddle: Meddle, rewrite: Callable[[Action], Action] | None = None) -> None:
        self.meddle = meddle
        self.rewrite = rewrite
        """Changes the solver's own call before it is made (it is not told)."""
        self.solver: HonestSolver | None = None
        self.queue: list[tuple[Action, bool]] = []
        self.own: CompanyOSObservation | None = None
        self.own_turn = False
        self.slipped: list[Action] = []

    def reset(self, observation: CompanyOSObservation) -> None:
        assert observation.task_id is not None
        self.solver = HonestSolver(observation.task, observation.task_id)
        self.queue, self.own, self.own_turn, self.slipped = [], None, False, []

    def act(self, observation: CompanyOSObservation) -> Action:
        """The next call: a slipped-in one, or the solver's (planned on its own results)."""
        assert self.solver is not None
        if self.own_turn:  # this observation answers the solver's own last call
            self.own = observation
        elif self.slipped and observation.error in RETRY:
            # The meddler retries its own call that a service refused (it means it).
            self.queue.insert(0, (self.slipped.pop(), False))
        if not self.queue:
            seen = None
            if self.own is not None:
                o = self.own
                seen = Seen(observation.clock_minutes, o.last_result, o.message, o.error)
            app, method, params = self.solver.act(seen)
            call = {"app": app, "method": method, "params": params}
            if self.rewrite is not None:
                call = self.rewrite(call)
            self.queue = [(c, False) for c in self.meddle(call, observation)] + [(call, True)]
        call, self.own_turn = self.queue.pop(0)
        if not self.own_turn:
            self.slipped.append(call)
        return call


def play_meddled(env: Any, agent: Meddled, **reset: Any) -> CompanyOSObservation:
    obs = env.reset(**reset)
    agent.reset(obs)
    while not obs.done:
        obs = env.step(agent.act(obs))
    return obs


class ValueBlind(HonestAgent):
    """The honest solver, except that it never compares a figure: it goes ahead, or declines,
    or asks the CFO, by a rule fixed in advance (it still copies figures into requests)."""

    def __init__(self, go_ahead: bool) -> None:
        super().__init__()
        self.go_ahead = go_ahead
        self.name = f"blind-{'go' if go_ahead else 'stop'}"

    def reset(self, observation: Any) -> None:
        super().reset(observation)
        assert self.solver is not None
        self.solver._rule_holds = lambda: self.go_ahead  # type: ignore[method-assign]
        if self.solver.brief.above:
            go = self.go_ahead
            self.solver._steps = (  # type: ignore[method-assign]
                lambda s=self.solver: s.brief.chain if go else s.brief.chain[1:]
            )


def hedge(call: Action, observation: CompanyOSObservation) -> list[Action]:
    """Every request sent twice: a hedge against a chance rejection."""
    return [call] if call["method"] == "submit_approval" else []
