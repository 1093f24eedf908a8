"""Never asks for access: it ignores that a metric is in a restricted dataset, reads it anyway,
and when the read is refused (the refusal says how to ask for access) reads it again."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class SkipsAccessRequest(Flawed):
    name = label = "missing_access"

    def setup(self) -> None:
        self.restricted: set[str] = set()

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        if seen is not None:
            solver.observe(seen)
        for entry in solver.catalog or ():
            if entry.pop("dataset", None):  # it reads past the restriction
                self.restricted.add(str(entry.get("metric")))
        call = solver.act(None)
        _, method, params = call
        if method in ("refresh_data", "query_metric") and params["metric_name"] in self.restricted:
            self.mark()
        return action(call)
