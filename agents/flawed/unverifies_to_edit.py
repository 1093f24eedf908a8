"""Believes a verified ticket is locked: it verifies a task ticket as soon as it has read it,
un-verifies it to make the changes the task asks for, and forgets to verify it again."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


def _update(ticket_id: str, field: str, value: Any) -> tuple[str, str, dict[str, Any]]:
    return ("ticketdesk", "update_ticket", {"ticket_id": ticket_id, "field": field, "value": value})


class UnverifiesToEdit(Flawed):
    name = label = "undid_progress"

    def setup(self) -> None:
        self.verified: set[str] = set()
        self.unlocked: set[str] = set()

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        call = self.honest(seen)
        _, method, params = call
        tid = str(params.get("ticket_id"))
        need = next((n for n in solver.needs if n.ticket_id == tid), None)
        if method != "update_ticket" or need is None or params.get("field") == "verified":
            return action(call)
        view = solver.tickets.get(tid, {})
        if need.verify and tid not in self.verified and view.get("verified") is not True:
            self.verified.add(tid)
            call = _update(tid, "verified", True)  # "checked" first
        elif view.get("verified") is True and tid not in self.unlocked:
            self.unlocked.add(tid)
            # Forgets the verification from here on: the edits are what it remembers.
            solver.needs = [
                replace(n, verify=False) if n.ticket_id == tid else n for n in solver.needs
            ]
            self.mark()
            call = _update(tid, "verified", False)
        solver.last = call
        return action(call)
