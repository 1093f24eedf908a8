"""Takes a ticket change that a transient fault refused for done: moves on in its own order
(the next ticket change, the requests) and never makes it again."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import FAULTS, Call, Flawed, action


def _depends(call: Call) -> bool:
    """A request that stands on the tickets (an access request does not)."""
    return call[1] == "submit_approval" and call[2].get("approval_type") != "data_access"


class MissesRetry(Flawed):
    name = label = "no_retry_after_fault"
    counts_refused = True  # the refusals that matter are handled below

    def setup(self) -> None:
        self.last: Call | None = None
        self.owed = False
        self.refused: tuple[Any, Any] | None = None
        self.tentative: tuple[int, str] | None = None

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        if seen is not None and self.tentative is not None:
            step, app = self.tentative
            self.tentative = None
            if seen.error in FAULTS and self.last is not None and self.last[0] == app:
                self.made.remove(step)  # that call was refused too: not yet moved on
                self.owed = True
        if seen is not None and seen.error == "service_unavailable" and self.last is not None:
            app, method, params = self.last
            view = solver.tickets.get(str(params.get("ticket_id")))
            if method == "update_ticket" and not self.made and view is not None:
                # Believe it done: the view of the ticket now shows the change.
                view[str(params.get("field"))] = params.get("value")
                solver.observe(seen)
                solver.retry = False
                solver.last = None
                self.owed = True
                self.refused = (params.get("ticket_id"), params.get("field"))
                seen = None
        call = self.honest(seen)
        again = call[1] == "update_ticket" and self.refused == (
            call[2].get("ticket_id"),
            call[2].get("field"),
        )
        if again:
            self.owed = False  # it retried after all (it had not believed the change done)
        elif self.owed and (call[0] == "ticketdesk" or _depends(call)):
            self.owed = False
            self.mark()
            if call[0] == "ticketdesk":  # a ticket call refused in turn is not moving on
                self.tentative = (self.step + 1, call[0])
        self.last = call
        return action(call)
