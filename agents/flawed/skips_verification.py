"""Never verifies tickets: submits its requests about the task's ticket unverified."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class SkipsVerification(Flawed):
    name = label = "skipped_verification"

    def setup(self) -> None:
        assert self.solver is not None
        solver = self.solver
        self.asked = any(n.verify for n in solver.needs) or (
            solver.main is None and solver.brief.verify_found
        )
        self.solver.needs = [replace(n, verify=False) for n in self.solver.needs]

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        call = self.honest(seen)
        solver.needs = [replace(n, verify=False) for n in solver.needs]  # a ticket found later
        _, method, params = call
        if method == "submit_approval" and params.get("approval_type") != "data_access":
            view = solver.tickets.get(str(solver.main))
            if self.asked and view is not None and view.get("verified") is not True:
                self.mark()
        return action(call)
