"""Sends ticket changes with a misnamed argument (``new_value``) and keeps trying the same
thing; it finds the right argument only when few steps are left, too late to finish."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class FixesTooLate(Flawed):
    name = label = "fixed_too_late"
    left = 4
    """Steps left when it finally gets the argument right."""

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        app, method, params = self.honest(seen)
        if method != "update_ticket" or self.remaining <= self.left:
            return action((app, method, params))
        self.mark()
        wrong = {k: v for k, v in params.items() if k != "value"}
        return action((app, method, {**wrong, "new_value": params["value"]}))
