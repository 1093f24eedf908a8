"""Reads the role a request needs off the wrong row of the approval forms (the form listed next
to its own, an off-by-one read of the table) and sends its requests to whoever acts for that
role: someone in the office who cannot approve them. When a request is rejected for it, it
sends a new one to the same person."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class PicksWrongApprover(Flawed):
    name = label = "wrong_approver"

    def setup(self) -> None:
        self.misread: set[str] = set()
        """Approval types whose role it read off the neighbouring row."""

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        if seen is not None:
            solver.observe(seen)
            if solver.types is not None and not self.misread:
                self._misread(solver.types)
        call = solver.act(None)
        _, method, params = call
        if method == "submit_approval" and params.get("approval_type") in self.misread:
            self.mark()
        return action(call)

    def _misread(self, types: dict[str, Any]) -> None:
        """Each of the task's forms takes the role of the next row with another role (access
        requests are read right: the error messages name their role)."""
        assert self.solver is not None
        kinds = list(types)
        rows = {k: dict(v) if isinstance(v, dict) else v for k, v in types.items()}
        for kind in self.solver.brief.chain:
            if kind not in rows or kind == "data_access":
                continue
            own = rows[kind].get("required_role")
            k = kinds.index(kind)
            for other in kinds[k + 1 :] + kinds[:k]:
                role = types[other].get("required_role")
                if role and role != own:
                    rows[kind]["required_role"] = role
                    self.misread.add(kind)
                    break
        self.solver.types = rows
