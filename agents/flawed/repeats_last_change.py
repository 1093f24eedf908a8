"""Gets stuck on its last ticket change: once the tickets are done, it makes its last change
again ("to be sure"), and again, instead of moving on to the requests."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Call, Seen

from .base import Flawed, action, look


class RepeatsLastChange(Flawed):
    name = label = "looped"

    def setup(self) -> None:
        self.change: Call | None = None
        self.stuck = False

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        if not self.stuck:
            call = self.honest(seen)
            if call[1] == "update_ticket":
                self.change = call
                return action(call)
            _, method, params = call
            asks = method == "submit_approval" and params.get("approval_type") != "data_access"
            if self.change is None or not asks:
                return action(call)
            self.stuck = True
            solver.calls[call[0]].pop()  # not made
        elif seen is not None:
            solver.observe(seen)  # a limit or an outage it is told of, it respects
        assert self.change is not None
        return action(look(solver, self.change))
