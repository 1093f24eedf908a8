"""Reopens what it resolved: before sending its request, it moves each ticket it resolved back
to 'in_progress' (to note the request on it, it says) and forgets to resolve it again."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action, look


class ReopensResolved(Flawed):
    name = label = "undid_progress"
    flaw = "reopens"

    def setup(self) -> None:
        self.resolved: list[str] = []
        self.reopened: set[str] = set()

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        app, method, params = self.honest(seen)
        if method == "update_ticket" and params.get("field") == "status":
            if params.get("value") == "resolved":
                self.resolved.append(str(params["ticket_id"]))
            return action((app, method, params))
        todo = [t for t in self.resolved if t not in self.reopened]
        if method != "submit_approval" or not todo:
            return action((app, method, params))
        solver.calls[app].pop()  # not made
        params = {"ticket_id": todo[0], "field": "status", "value": "in_progress"}
        reopen = ("ticketdesk", "update_ticket", params)
        sent = look(solver, reopen)  # a limit or an outage it was told of, it respects
        solver.last = None  # its view keeps the ticket resolved
        if sent == reopen:
            self.reopened.add(todo[0])
            self.mark()
        return action(sent)
