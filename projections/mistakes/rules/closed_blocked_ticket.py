"""Trying to close a task ticket while it is blocked."""

from __future__ import annotations

from collections.abc import Iterator

from companyos.domain import goals
from companyos.domain.model import normalize_ticket_id
from companyos.events.types import ActionRejected

from ..context import Episode, Suspect, param, text

LABEL = "closed_blocked_ticket"
ORDER = 60
DEFINITION = (
    "Tried to close one of the task's tickets while it was blocked instead of resolving the "
    "blocker first. Made good once the ticket is unblocked."
)


def find(ep: Episode) -> Iterator[Suspect]:
    for i, s in enumerate(ep.steps):
        tid = normalize_ticket_id(text(param(s.call, "ticket_id")))
        for e in s.events:
            if (
                isinstance(e, ActionRejected)
                and e.code == "blocked_ticket_close"
                and tid in ep.wanted
            ):
                yield Suspect(
                    LABEL,
                    s.step,
                    f"tried to close {tid} while it was blocked",
                    lambda i=i, tid=tid: ep.first_after(
                        i, lambda t: goals.unblocked(t.world.tickets.get(tid))
                    ),
                )
