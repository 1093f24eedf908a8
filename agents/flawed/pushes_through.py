"""Lets the approver decide: in a task with a policy, when the figures say the policy's answer
is no, it still sends the approval request (and then records the decision the policy asks
for)."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action, look


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
        solver.calls[call[0]].pop()  # the decision waits until the request is out
        approver = solver._approver(kind)
        if approver is None:
            return action(look(solver, solver._lookup(kind)))
        data = solver._data(kind, None)
        params = {"approval_type": kind, "approver": approver, "data": data}
        ask = ("approvalflow", "submit_approval", params)
        sent = look(solver, ask)  # a limit or an outage it was told of, it respects
        if sent == ask:
            self.pushed = True
            self.mark()
        return action(sent)
