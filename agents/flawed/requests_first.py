"""Asks for approval before the ticket work: it reads the task's tickets and verifies them
("checked"), sends the request, and only then makes the changes the tickets need (a missing
field, a blocker, a resolution)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen, TicketNeed

from .base import Flawed, action


def _verify_only(need: TicketNeed) -> TicketNeed:
    return TicketNeed(need.ticket_id, verify=need.verify, conditional=need.conditional)


class RequestsFirst(Flawed):
    name = label = "premature_request"

    def setup(self) -> None:
        assert self.solver is not None
        self.fill = self.solver.brief.fill
        self.needs = list(self.solver.needs)
        """What the tickets need (the solver is shown only the verifications until it asks)."""
        self.asked = False

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        if not self.asked:
            solver.needs = [_verify_only(n) for n in self.needs]
            solver.brief = replace(solver.brief, fill={})
        call = self.honest(seen)
        if not self.asked:
            if [n.ticket_id for n in solver.needs] != [n.ticket_id for n in self.needs]:
                self.needs = list(solver.needs)  # a ticket found by its title
            solver.needs = list(self.needs)
            solver.brief = replace(solver.brief, fill=self.fill)
        _, method, params = call
        if method == "submit_approval" and params.get("approval_type") != "data_access":
            if not self.asked and self._gaps():
                self.mark()
            self.asked = True
        return action(call)

    def _gaps(self) -> bool:
        """A ticket it has read still lacks a change the task asks for."""
        solver = self.solver
        assert solver is not None
        for need in solver.needs:
            view = solver.tickets.get(need.ticket_id)
            if view is None:
                continue
            fill = self.fill if need.ticket_id == solver.main else {}
            if view.get("status") == "blocked":
                return True
            if any(not view.get(k) or view.get(k) == "unknown" for k in fill):
                return True
            if need.priority and view.get("priority") != need.priority:
                return True
            if need.assignee and view.get("assignee") != need.assignee:
                return True
            if need.resolve and view.get("status") != "resolved":
                return True
        return False
