"""Leaves the last field of a form out: its requests carry every data key the form asks for
but the last one, and when a request is refused for it, it sends the same request again."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class DropsLastField(Flawed):
    name = label = "invalid_params"

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        app, method, params = self.honest(seen)
        kind = params.get("approval_type")
        if method != "submit_approval" or kind == "data_access" or solver.types is None:
            return action((app, method, params))
        required = list(solver.types.get(kind, {}).get("required_data", []))
        data = dict(params.get("data", {}))
        if not required or required[-1] not in data:
            return action((app, method, params))
        del data[required[-1]]
        self.mark()
        return action((app, method, {**params, "data": data}))
