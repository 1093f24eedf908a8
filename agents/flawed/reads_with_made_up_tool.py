"""Reads figures with a tool that does not exist (``datahub.get_metric_value``); after a few
tries it gives up on the figure and writes 0 for it, and goes on."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action

TRIES = 3
"""Calls of the made-up tool before it settles for 0."""


class ReadsWithMadeUpTool(Flawed):
    name = label = "hallucinated_tool"
    flaw = "read"

    def setup(self) -> None:
        self.tries = 0

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        call = self.honest(seen)
        while call[1] == "refresh_data" and self.tries >= TRIES:
            solver.values[str(call[2]["metric_name"])] = 0.0  # what it settles for
            solver.calls[call[0]].pop()  # not made
            solver.last = None
            call = solver.act(None)
        if call[1] != "refresh_data":
            return action(call)
        self.tries += 1
        self.mark()
        return {"app": "datahub", "method": "get_metric_value", "params": dict(call[2])}
