"""Rounds the figures it writes into requests to the nearest ten ("about 1,840"), as if the
approver only needed the order of magnitude."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class RoundsFigures(Flawed):
    name = label = "submitted_wrong_data"
    flaw = "rounds"

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        app, method, params = self.honest(seen)
        if method != "submit_approval" or params.get("approval_type") == "data_access":
            return action((app, method, params))
        data = dict(params.get("data", {}))
        rounded = {
            k: float(round(v, -1))
            for k, v in data.items()
            if isinstance(v, float) and round(v, -1) != v
        }
        if rounded:
            self.mark()
            params = {**params, "data": {**data, **rounded}}
            solver.last = (app, method, params)
        return action((app, method, params))
