"""Cannot leave its work alone: once the tickets are done, it un-verifies the task's ticket and
verifies it again, over and over, instead of moving on to the requests."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action, look


class TogglesVerification(Flawed):
    name = label = "looped"
    flaw = "toggles"

    def setup(self) -> None:
        self.stuck = False
        self.verified = True

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        if not self.stuck:
            call = self.honest(seen)
            _, method, params = call
            asks = method == "submit_approval" and params.get("approval_type") != "data_access"
            view = solver.tickets.get(str(solver.main), {})
            if not asks or view.get("verified") is not True:
                return action(call)
            self.stuck = True
            solver.calls[call[0]].pop()  # not made
        elif seen is not None:
            last = solver.last
            solver.observe(seen)  # a limit or an outage it is told of, it respects
            if seen.error is None and last is not None and last[1] == "update_ticket":
                self.verified = not self.verified  # the flip went through
        params = {"ticket_id": solver.main, "field": "verified", "value": not self.verified}
        return action(look(solver, ("ticketdesk", "update_ticket", params)))
