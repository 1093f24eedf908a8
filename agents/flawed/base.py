"""The base of the flawed agents: an observation-only agent with one realistic flaw.

Each plays like a careful agent that sees only what any client sees (the honest solver,
`domain.honest`, reading the task text and each observation) and departs from it at the one
point its flaw is about, the way an LLM agent with that habit would. It records the steps at
which it made its mistake (``made``), so tests can check the analysis finds each one at its
step, and names the label the analysis should give its failures (``label``)."""

from __future__ import annotations

from typing import Any

from companyos.agents.honest import seen_in
from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import HonestSolver, Seen
from companyos.domain.honest.solver import WAITS

Call = tuple[str, str, dict[str, Any]]
FAULTS = frozenset({"service_unavailable", "rate_limited", "service_down"})


def action(call: Call) -> dict[str, Any]:
    app, method, params = call
    return {"app": app, "method": method, "params": params}


class Flawed:
    """An observation-only agent; subclasses override `choose` and call `mark` when the call
    they return is their mistake."""

    name = "flawed"
    label = ""
    """The label the analysis should give a failure this flaw caused."""
    flaw = ""
    """Which flaw, when several agents' flaws share a label (a mix-up of tickets, of metrics)."""
    counts_refused = False
    """Whether a mistaken call that a fault refused still counts (it did not happen)."""
    solver_class: type[HonestSolver] = HonestSolver
    """The careful agent it departs from (another habit of work: `tests/flawed_styles.py`)."""

    def __init__(self) -> None:
        self.solver: HonestSolver | None = None
        self.made: list[int] = []
        self.step = 0
        self.remaining = 0

    def reset(self, observation: CompanyOSObservation) -> None:
        if observation.task_id is None:
            raise ValueError("a flawed agent needs the observation of a reset (task and family)")
        self.solver = self.solver_class(observation.task, observation.task_id)
        self.made = []
        self.started = False
        self.action: dict[str, Any] | None = None
        """The call it made last."""
        self.undone: dict[str, Any] | None = None
        """A mistaken call a fault refused: making it again is making the mistake."""
        self.setup()

    def setup(self) -> None:
        """Per-episode state of the flaw."""

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        assert self.solver is not None, "reset() first"
        seen = seen_in(observation) if self.started else None
        self.started = True
        refused = observation.error in FAULTS
        if refused and not self.counts_refused and self.made and self.made[-1] == observation.step:
            self.made.pop()  # the service refused it: the mistake was not made
            self.undone = self.action
        self.step = observation.step
        self.remaining = observation.steps_remaining
        call = self.choose(seen, observation)
        if call == self.undone:
            self.undone = None
            if not self.made or self.made[-1] != self.step + 1:
                self.mark()  # the refused mistake, made again (a retry)
        self.action = call
        return call

    def honest(self, seen: Seen | None) -> Call:
        """What the careful agent would call next (after seeing ``seen``)."""
        assert self.solver is not None
        return self.solver.act(seen)

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        return action(self.honest(seen))

    def mark(self) -> None:
        """The call being returned (the next step) is the mistake."""
        self.made.append(self.step + 1)


def look(solver: HonestSolver, call: Call) -> Call:
    """``call`` if its app takes it now, else a look at an app that does (an idle agent that
    respects the limits and outages it was told of), as the solver's own call."""
    if not solver._takes(call[0]):
        call = next((w for w in WAITS if solver._takes(w[0])), call)
    solver.last = call
    solver.calls.setdefault(call[0], []).append(solver.now + 5)
    return call
