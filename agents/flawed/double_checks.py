"""Never commits: once the work is ready for its request, it re-reads the task's ticket to make
sure, and again, and never sends the request."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action, look


class DoubleChecks(Flawed):
    name = label = "stalled"

    def setup(self) -> None:
        self.doubting = False

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        if not self.doubting:
            call = self.honest(seen)
            _, method, params = call
            asks = method == "submit_approval" and params.get("approval_type") != "data_access"
            if not asks or solver.main is None:
                return action(call)
            self.doubting = True
            solver.calls[call[0]].pop()  # not made
        elif seen is not None:
            solver.observe(seen)  # a limit or an outage it is told of, it respects
        return action(look(solver, ("ticketdesk", "get_ticket", {"ticket_id": solver.main})))
