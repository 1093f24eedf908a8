"""The random baseline, like the original's: a uniformly random tool with plausible params.

Plausible values come from the company's own vocabulary (its ticket ids, metric names, roles,
approval types and people) plus ids the agent has seen in results. All draws come from the
agent's own `random.Random`, never the global one.
"""

from __future__ import annotations

import random
import re
from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain import TOOLS
from companyos.domain.model import PRIORITIES, ROLE_TITLES, STATUSES, TICKET_FIELDS
from companyos.domain.scenarios import APPROVAL_TYPES, METRICS, PEOPLE, TEMPLATES, TICKETS

TICKET_IDS = tuple(t.ticket_id for t in TICKETS)
METRIC_NAMES = tuple(m.event.name for m in METRICS)
TYPES = tuple(a.approval_type for a in APPROVAL_TYPES)
NAMES = tuple(p.name for p in PEOPLE)
TEXTS = tuple(v for t in TEMPLATES for v in t.goal.approval_data.values())
_APPROVAL_ID = re.compile(r"APR-\d+")


class RandomAgent:
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.approval_ids: list[str] = []

    def reset(self, observation: CompanyOSObservation) -> None:
        self.approval_ids = []

    def _value(self, field: str) -> Any:
        r = self.rng
        if field == "priority":
            return r.choice(PRIORITIES)
        if field == "status":
            return r.choice(STATUSES)
        if field == "verified":
            return r.choice((True, False))
        if field == "assignee":
            return r.choice(NAMES)
        return r.choice(self.approval_ids or ["APR-1001"])

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        self.approval_ids += [
            a
            for a in _APPROVAL_ID.findall(str(observation.last_result))
            if a not in self.approval_ids
        ]
        r = self.rng
        app, method = r.choice(list(TOOLS))
        params: dict[str, Any] = {}
        for name in TOOLS[(app, method)].params.model_fields:
            if name == "ticket_id":
                params[name] = r.choice(TICKET_IDS)
            elif name == "query":
                params[name] = r.choice(("vendor", "auth", "licence", "handbook", "expense"))
            elif name == "field":
                params[name] = r.choice(TICKET_FIELDS)
            elif name == "value":
                params[name] = self._value(params["field"])
            elif name == "metric_name":
                params[name] = r.choice(METRIC_NAMES)
            elif name == "role":
                params[name] = r.choice(tuple(ROLE_TITLES.values()))
            elif name == "approval_type":
                params[name] = r.choice(TYPES)
            elif name == "approver":
                params[name] = r.choice(NAMES)
            elif name == "data":
                params[name] = {
                    "ticket_id": r.choice(TICKET_IDS),
                    r.choice(("vendor", "employee", "service", "license", "section")): r.choice(
                        TEXTS
                    ),
                    r.choice(("compliance_score", "amount", "error_rate", "expiry_days")): round(
                        r.uniform(0, 2000), 1
                    ),
                }
            elif name == "approval_id":
                params[name] = r.choice(self.approval_ids or ["APR-1001"])
            elif name == "reason":
                params[name] = "Please reconsider."
        return {"app": app, "method": method, "params": params}
