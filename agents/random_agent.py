"""The random baseline, like the original's: a uniformly random tool with plausible params.

Worlds are drawn from a seed, so plausible values are what the agent has seen: ticket ids in the
task text and in results, metric names and people from results, approval ids it was given; the
company's fixed vocabulary (approval types, roles, ticket fields) fills the rest. All draws come
from the agent's own `random.Random`, never the global one.
"""

from __future__ import annotations

import random
import re
from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain import TOOLS
from companyos.domain.company import APPROVAL_TYPES
from companyos.domain.model import PRIORITIES, RESOLUTIONS, ROLE_TITLES, STATUSES, TICKET_FIELDS

TYPES = tuple(APPROVAL_TYPES)
DATA_KEYS = tuple(sorted({k for spec in APPROVAL_TYPES.values() for k, _, _ in spec.fields}))
_TICKET = re.compile(r"TKT-\d+")
_APPROVAL = re.compile(r"APR-\d+")


class Vocabulary:
    """What an agent has seen of this episode's world."""

    def __init__(self) -> None:
        self.tickets: list[str] = []
        self.metrics: list[str] = []
        self.people: list[str] = []
        self.approvals: list[str] = []
        self.texts: list[str] = []

    def learn(self, observation: CompanyOSObservation) -> None:
        found = f"{observation.task} {observation.last_result}"
        _add(self.tickets, _TICKET.findall(found))
        _add(self.approvals, _APPROVAL.findall(found))
        result = observation.last_result
        if isinstance(result, dict):
            for row in result.get("metrics", []) or []:
                if isinstance(row, dict) and "metric" in row:
                    _add(self.metrics, [row["metric"]])
            if isinstance(result.get("metric"), str):
                _add(self.metrics, [result["metric"]])
            for key in ("approver", "assignee", "on_behalf_of"):
                if isinstance(result.get(key), str):
                    _add(self.people, [result[key]])
            for t in result.get("tickets", []) or []:
                if isinstance(t, dict) and isinstance(t.get("title"), str):
                    _add(self.texts, [t["title"]])


def _add(into: list[str], values: list[str]) -> None:
    into.extend(v for v in values if v not in into)


class RandomAgent:
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.seen = Vocabulary()

    def reset(self, observation: CompanyOSObservation) -> None:
        self.seen = Vocabulary()
        self.seen.learn(observation)

    def _pick(self, options: list[str], fallback: str) -> str:
        return self.rng.choice(options) if options else fallback

    def _value(self, field: str) -> Any:
        r = self.rng
        if field == "priority":
            return r.choice(PRIORITIES)
        if field == "status":
            return r.choice(STATUSES)
        if field == "verified":
            return r.choice((True, False))
        if field == "resolution":
            return r.choice((*RESOLUTIONS, None))
        if field == "assignee":
            return self._pick(self.seen.people, "Sam Okafor")
        return self._pick(self.seen.approvals, "APR-1001")

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        self.seen.learn(observation)
        r, seen = self.rng, self.seen
        app, method = r.choice(list(TOOLS))
        params: dict[str, Any] = {}
        for name in TOOLS[(app, method)].params.model_fields:
            if name == "ticket_id":
                params[name] = self._pick(seen.tickets, "TKT-1000")
            elif name == "query":
                params[name] = r.choice(("vendor", "expense", "service", "contract", "renew"))
            elif name == "field":
                params[name] = r.choice(TICKET_FIELDS)
            elif name == "value":
                params[name] = self._value(params["field"])
            elif name == "metric_name":
                params[name] = self._pick(seen.metrics, "compliance")
            elif name == "role":
                params[name] = r.choice(tuple(ROLE_TITLES.values()))
            elif name == "approval_type":
                params[name] = r.choice(TYPES)
            elif name == "approver":
                params[name] = self._pick(seen.people, "CFO")
            elif name == "data":
                keys = r.sample(DATA_KEYS, 3)
                params[name] = {
                    k: self._pick(seen.tickets, "TKT-1000")
                    if k == "ticket_id"
                    else round(r.uniform(0, 2000), 1)
                    if r.random() < 0.5
                    else self._pick(seen.texts, "n/a")
                    for k in keys
                }
            elif name == "approval_id":
                params[name] = self._pick(seen.approvals, "APR-1001")
            elif name == "reason":
                params[name] = "Please reconsider."
        return {"app": app, "method": method, "params": params}
