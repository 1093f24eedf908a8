"""Does not notice a request was decided: once a request it polls comes back approved, it keeps
checking its status (as if waiting for a confirmation) instead of moving on."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action, look


class KeepsPolling(Flawed):
    name = label = "timed_out_while_polling"

    def setup(self) -> None:
        self.stuck: str | None = None

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        assert self.solver is not None
        last = self.solver.last
        if self.stuck is None and seen is not None and last is not None:
            result = seen.result if isinstance(seen.result, dict) else {}
            if last[1] == "check_status" and result.get("status") == "approved":
                self.stuck = str(last[2]["approval_id"])
        if self.stuck is None:
            return action(self.honest(seen))
        if seen is not None:
            self.solver.observe(seen)  # a limit or an outage it is told of, it respects
        return action(
            look(self.solver, ("approvalflow", "check_status", {"approval_id": self.stuck}))
        )
