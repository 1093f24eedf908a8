"""Never escalates: when a request comes back rejected with a reason that asks for an
escalation, it keeps checking the request's status, waiting for the rejection to go away."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class NeverEscalates(Flawed):
    name = label = "gave_up_after_rejection"
    counts_refused = True  # a poll a fault refused is still no escalation

    def setup(self) -> None:
        self.watched: set[str] = set()

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        app, method, params = self.honest(seen)
        if method != "escalate":
            return action((app, method, params))
        aid = str(params["approval_id"])
        if aid not in self.watched:
            self.watched.add(aid)
            self.mark()
        return action((app, "check_status", {"approval_id": aid}))
