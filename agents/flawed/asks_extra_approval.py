"""Over-cautious: where the policy asks for a first sign-off only above a threshold, it reads
the figures and asks for that sign-off anyway, below the threshold too."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action, look


class AsksExtraApproval(Flawed):
    name = label = "collateral_damage"
    flaw = "extra_approval"

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        brief = solver.brief
        call = self.honest(seen)
        if not brief.above or solver.types is None or call[1] == "refresh_data":
            return action(call)
        subject, threshold = solver._value(brief.subject), solver._value(brief.above)
        if subject is None or threshold is None or subject > threshold:
            return action(call)
        first = brief.chain[0]
        if first in solver.slot:
            return action(call)
        # The sign-off the policy does not need here: asked first, as for a large order.
        solver.calls[call[0]].pop()  # not made
        approver = solver._approver(first)
        if approver is None:
            return action(look(solver, solver._lookup(first)))
        params = {"approval_type": first, "approver": approver, "data": solver._data(first, None)}
        ask = ("approvalflow", "submit_approval", params)
        sent = look(solver, ask)  # a limit or an outage it was told of, it respects
        if sent == ask:
            self.mark()
        return action(sent)
