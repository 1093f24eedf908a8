"""Mixes up tickets: lists them first, then makes the task's ticket changes on the ticket whose
id is nearest to the task's (a look-alike), over and over."""

from __future__ import annotations

import re
from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action

TICKET = re.compile(r"TKT-(\d+)")


class MixesUpTickets(Flawed):
    name = label = "wrong_object"

    def setup(self) -> None:
        self.listed: list[str] | None = None
        self.pending: Seen | None = None

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        if self.listed is None:
            if seen is not None and isinstance(seen.result, dict) and "tickets" in seen.result:
                self.listed = [str(t["ticket_id"]) for t in seen.result["tickets"]]
                seen = self.pending  # what the careful agent saw before the listing
            else:
                self.pending = seen
                return {"app": "ticketdesk", "method": "list_tickets", "params": {}}
        app, method, params = self.honest(seen)
        target = str(params.get("ticket_id", ""))
        if method == "update_ticket":
            other = self._look_alike(target, observation.task)
            if other is not None:
                self.mark()
                return action((app, method, {**params, "ticket_id": other}))
        return action((app, method, params))

    def _look_alike(self, target: str, task: str) -> str | None:
        named = set(TICKET.findall(task))
        m = TICKET.fullmatch(target)
        if m is None or not self.listed:
            return None
        n = int(m.group(1))
        others = [t for t in self.listed if (x := TICKET.fullmatch(t)) and x.group(1) not in named]
        others = [t for t in others if t != target]
        return min(others, key=lambda t: abs(int(t[4:]) - n)) if others else None
