"""Writes 'declined' for any no: when a policy's answer is no, it sets the ticket's resolution
to 'declined', whatever the policy says to write (a flag for review, say)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action

DEFAULT = "declined"


class DeclinesByDefault(Flawed):
    name = label = "wrong_decision"

    def setup(self) -> None:
        solver = self.solver
        assert solver is not None
        rule = solver.brief.rule
        self.meant = rule.otherwise if rule is not None else DEFAULT
        if rule is not None:
            solver.brief = replace(solver.brief, rule=replace(rule, otherwise=DEFAULT))

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        call = self.honest(seen)
        _, method, params = call
        deciding = method == "update_ticket" and params.get("field") == "resolution"
        if deciding and params.get("value") != self.meant:
            self.mark()
        return action(call)
