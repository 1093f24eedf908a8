"""Lets the approver decide: in a task with a policy, when the figures say the policy's answer
is no, it still sends the approval request (and then records the decision the policy asks
for)."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Call, Flawed, action


class PushesThrough(Flawed):
    name = label = "pushed_infeasible_through"

    def setup(self) -> None:
        self.pushed = False

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        call = self.honest(seen)
        _, method, params = call
        deciding = method == "update_ticket" and params.get("field") == "resolution"
        if self.pushed or not deciding or solver.decision is not False or solver.types is None:
            return action(call)
        kind = next((k for k in solver.brief.chain if k in solver.types), None)
        if kind is None:
            return action(call)
        ask: Call
        if solver._approver(kind) is None:
            ask = solver._lookup(kind)
        else:
            ask = (
                "approvalflow",
                "submit_approval",
                {
                    "approval_type": kind,
                    "approver": solver._approver(kind),
                    "data": solver._data(kind, None),
                },
            )
            self.pushed = True
            self.mark()
        solver.last = ask
        return action(ask)
