"""Takes a request that a transient fault refused for sent: it waits for the approver (looking
at the list of requests) instead of sending it again."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Call, Seen

from .base import Flawed, action, look

WAIT: Call = ("approvalflow", "list_approvals", {})


class BelievesSubmitted(Flawed):
    name = label = "no_retry_after_fault"
    flaw = "believes_submitted"
    counts_refused = True  # the refusal is the point; waiting is the mistake

    def setup(self) -> None:
        self.waiting = False
        self.sent = False

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        if self.waiting:
            if seen is not None:
                solver.observe(seen)  # a limit or an outage it is told of, it respects
            return action(look(solver, WAIT))
        if seen is not None and seen.error == "service_unavailable" and self.sent:
            self.waiting = True
            solver.observe(seen)
            self.mark()  # moves on to waiting instead of sending it again
            return action(look(solver, WAIT))
        call = self.honest(seen)
        self.sent = call[1] == "submit_approval"
        return action(call)
