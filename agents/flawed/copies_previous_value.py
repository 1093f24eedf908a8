"""Copies the wrong field of a refresh into its requests: the ``previous_value`` (what the
cache held before) instead of ``value``. Its own reasoning (which approvals the policy needs,
a decision) uses the right figure; only what it writes into a request is wrong."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class CopiesPreviousValue(Flawed):
    name = label = "submitted_wrong_data"

    def setup(self) -> None:
        self.previous: dict[float, float] = {}
        """A figure as refreshed -> the previous value shown beside it."""

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        assert self.solver is not None
        last = self.solver.last
        if seen is not None and last is not None and last[1] == "refresh_data":
            result = seen.result if isinstance(seen.result, dict) else {}
            old, new = result.get("previous_value"), result.get("value")
            changed = isinstance(old, int | float) and isinstance(new, int | float) and old != new
            if seen.error is None and changed:
                self.previous[float(new)] = float(old)
        app, method, params = self.honest(seen)
        if method != "submit_approval" or params.get("approval_type") == "data_access":
            return action((app, method, params))
        data = dict(params.get("data", {}))
        copied = False
        for key, value in data.items():
            if isinstance(value, int | float) and float(value) in self.previous:
                data[key] = self.previous[float(value)]
                copied = True
        if copied:
            self.mark()
        return action((app, method, {**params, "data": data}))
