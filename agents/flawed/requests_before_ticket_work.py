"""Sends its request as soon as it has the approver and the figures, before reading or
changing the task's tickets, and does the ticket work afterwards."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class RequestsBeforeTicketWork(Flawed):
    name = label = "premature_request"
    flaw = "before_tickets"

    def setup(self) -> None:
        assert self.solver is not None
        self.needs = list(self.solver.needs)
        self.asked = False

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        if not self.asked:
            solver.needs = []
        call = self.honest(seen)
        if not self.asked:
            if solver.needs:
                self.needs = list(solver.needs)  # a ticket found by its title
            solver.needs = list(self.needs)
        _, method, params = call
        if method == "submit_approval" and params.get("approval_type") != "data_access":
            if not self.asked:
                self.mark()
            self.asked = True
        return action(call)
