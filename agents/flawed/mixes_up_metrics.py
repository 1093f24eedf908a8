"""Reads the figure a request needs from the wrong row of the metric catalogue (the entry next
to the right one) and puts that number in its requests."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Call, Flawed, action


class MixesUpMetrics(Flawed):
    name = label = "wrong_object"
    flaw = "metric"

    def setup(self) -> None:
        self.swapped: dict[str, str] = {}
        """Metric it meant -> the metric it read instead."""
        self.last: Call | None = None

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        last = self.last
        if seen is not None and last is not None and last[1] == "refresh_data":
            meant = next((m for m, n in self.swapped.items() if n == last[2]["metric_name"]), None)
            result = seen.result if isinstance(seen.result, dict) else {}
            if meant is not None and seen.error is None and "value" in result:
                solver.values[meant] = float(result["value"])  # filed under the one it meant
                solver.last = None
                seen = None
        call = self.honest(seen)
        _, method, params = call
        if method in ("refresh_data", "query_metric") and solver.brief.rule is None:
            meant = str(params["metric_name"])
            other = self._neighbour(meant)
            if other is not None:  # whichever way it reads, it reads the wrong row
                self.swapped[meant] = other
                call = ("datahub", method, {"metric_name": other})
        elif method == "submit_approval" and self._carries_swapped(params):
            self.mark()
        self.last = call
        return action(call)

    def _neighbour(self, name: str) -> str | None:
        """The catalogue entry listed next to ``name`` (an open one: no access needed)."""
        names = [
            str(m.get("metric"))
            for m in self.solver.catalog or ()  # type: ignore[union-attr]
            if not m.get("dataset")
        ]
        if name not in names or len(names) < 2:
            return None
        k = names.index(name)
        return names[k + 1] if k + 1 < len(names) else names[k - 1]

    def _carries_swapped(self, params: dict[str, Any]) -> bool:
        solver = self.solver
        assert solver is not None
        data = params.get("data")
        if not isinstance(data, dict) or params.get("approval_type") == "data_access":
            return False
        figures = {solver.values[m] for m in self.swapped if m in solver.values}
        return any(isinstance(v, int | float) and float(v) in figures for v in data.values())
