"""Changes tickets with a tool that does not exist (``ticketdesk.set_priority`` and the like),
and never finds ``update_ticket``."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen

from .base import Flawed, action


class HallucinatesTool(Flawed):
    name = label = "hallucinated_tool"

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        app, method, params = self.honest(seen)
        if method != "update_ticket":
            return action((app, method, params))
        self.mark()
        return {
            "app": "ticketdesk",
            "method": f"set_{params['field']}",
            "params": {"ticket_id": params["ticket_id"], "value": params["value"]},
        }
