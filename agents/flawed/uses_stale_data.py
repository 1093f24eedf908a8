"""Reads figures with ``query_metric`` and uses what it is served, stale or not (it ignores
the warning), instead of refreshing them from the source."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Call, Flawed, action


class UsesStaleData(Flawed):
    name = label = "used_stale_data"

    def setup(self) -> None:
        self.stale: set[str] = set()
        self.last: Call | None = None

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        last = self.last
        if seen is not None and last is not None and last[1] == "query_metric":
            result = seen.result if isinstance(seen.result, dict) else {}
            if seen.error is None and "value" in result:
                name = str(last[2]["metric_name"])
                solver.values[name] = float(result["value"])
                if result.get("is_stale"):
                    self.stale.add(name)
                solver.last = None  # the solver did not make this call: it reads nothing
                seen = None
        call = self.honest(seen)
        _, method, params = call
        if method == "refresh_data":
            call = ("datahub", "query_metric", {"metric_name": params["metric_name"]})
        elif self._rests_on_stale(call):
            self.mark()
        self.last = call
        return action(call)

    def _rests_on_stale(self, call: Call) -> bool:
        """A request, or a decision, made while a figure it read was stale."""
        _, method, params = call
        deciding = method == "update_ticket" and params.get("field") == "resolution"
        asking = method == "submit_approval" and params.get("approval_type") != "data_access"
        return bool(self.stale) and (deciding or asking)
