"""Gives up after a few steps and answers in prose, with no tool call, to the end."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action

PROSE = (
    "I was not able to finish this task with the tools available. I recommend that someone "
    "from the team reviews the ticket and completes the remaining steps manually."
)


class GivesUp(Flawed):
    name = label = "no_tool_call"
    after = 4

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        if self.step < self.after:
            return action(self.honest(seen))
        self.mark()
        return {"app": "llm", "method": "no_tool_call", "params": {"content": PROSE}}
