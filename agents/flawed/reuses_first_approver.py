"""Sends every request to the person its first request went to (the approver it already
knows), instead of looking up who acts for each request's role."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class ReusesFirstApprover(Flawed):
    name = label = "wrong_approver"
    flaw = "reuses"

    def setup(self) -> None:
        self.first: str | None = None

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        app, method, params = self.honest(seen)
        if method != "submit_approval":
            return action((app, method, params))
        if self.first is None:
            self.first = str(params["approver"])
        elif params["approver"] != self.first:
            self.mark()
            params = {**params, "approver": self.first}
            solver.last = (app, method, params)
        return action((app, method, params))
