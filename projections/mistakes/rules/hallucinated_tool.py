"""A call to a tool that does not exist. Made good only by a later call that does what the
hallucinated one meant: a real tool it plausibly meant, on the same object (and, for a
``set_<field>`` verb, the same field), not just any later call of the app."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from companyos.domain.model import normalize_ticket_id
from companyos.events.types import InvalidAction

from ...replay import StepRecord
from ..context import PSEUDO_APP, Episode, Suspect, meant, param, text, understood

LABEL = "hallucinated_tool"
ORDER = 20
DEFINITION = (
    "Called a tool that does not exist (an unknown app or method). Made good only by a later "
    "call of a real tool it meant (same app intent, same ticket, metric or request, same field "
    "for a set_<field> verb) that the app understood."
)
OBJECTS = ("ticket_id", "metric_name", "approval_id", "role")


def _object(call: Any, key: str) -> str:
    value = text(param(call, key))
    return normalize_ticket_id(value) if key == "ticket_id" else value.lower()


def _field_of(method: str) -> str | None:
    for prefix in ("set_", "update_"):
        if method.startswith(prefix) and len(method) > len(prefix):
            return method[len(prefix) :]
    return {"verify_ticket": "verified", "close_ticket": "status", "assign_ticket": "assignee"}.get(
        method
    )


def does_what_it_meant(bad: StepRecord, t: StepRecord) -> bool:
    """``t`` is a call that does what the hallucinated call ``bad`` meant."""
    tools = meant(str(bad.call.app), str(bad.call.method))
    if (t.call.app, t.call.method) not in tools or not understood(t):
        return False
    for key in OBJECTS:
        had = _object(bad.call, key)
        if had and _object(t.call, key) != had:
            return False
    if t.call.method == "update_ticket":
        wanted = _field_of(str(bad.call.method))
        field = text(param(bad.call, "field")).lower() or wanted
        if field and text(param(t.call, "field")).lower() != field:
            return False
    return True


def find(ep: Episode) -> Iterator[Suspect]:
    for i, s in enumerate(ep.steps):
        if s.call.app == PSEUDO_APP:
            continue  # no tool named at all: `no_tool_call`
        if any(isinstance(e, InvalidAction) and e.code == "unknown_tool" for e in s.events):
            about = ", ".join(o for key in OBJECTS if (o := _object(s.call, key)))
            yield Suspect(
                LABEL,
                s.step,
                f"called {s.call.app}.{s.call.method}"
                + (f" (for {about})" if about else "")
                + ", which does not exist",
                lambda i=i, s=s: ep.first_after(i, lambda t: does_what_it_meant(s, t)),
            )
