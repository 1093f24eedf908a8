"""Takes a rejection for the end: when a request comes back rejected with a reason that asks
for an escalation, it says it cannot finish and stops calling tools."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action

PROSE = "The approval request was rejected, so I cannot complete this task."


class StopsAfterRejection(Flawed):
    name = label = "gave_up_after_rejection"
    flaw = "stops"

    def setup(self) -> None:
        self.stopped = False

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        if not self.stopped:
            call = self.honest(seen)
            if call[1] != "escalate":
                return action(call)
            self.stopped = True
            self.mark()
        return {"app": "llm", "method": "no_tool_call", "params": {"content": PROSE}}
