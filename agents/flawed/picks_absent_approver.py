"""Sends requests to the role's holder as the directory names them, even when the answer says
they are out of office and someone else acts for them."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class PicksAbsentApprover(Flawed):
    name = label = "routed_to_out_of_office"

    def setup(self) -> None:
        self.away: set[str] = set()

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        before = dict(solver.approvers)
        call = self.honest(seen)
        if seen is not None and isinstance(seen.result, dict):
            holder = seen.result.get("on_behalf_of")
            for role, name in solver.approvers.items():
                if before.get(role) != name and holder:
                    solver.approvers[role] = str(holder)  # the name it remembers
                    self.away.add(str(holder))
                    call = self.honest(None)  # plan again with the holder in mind
        _, method, params = call
        if method == "submit_approval" and params.get("approver") in self.away:
            self.mark()
        return action(call)
