"""Acting on a ticket that the task or the approval type requires verified, unverified."""

from __future__ import annotations

from collections.abc import Iterator

from companyos.domain import goals
from companyos.domain.model import normalize_ticket_id
from companyos.events.types import ActionRejected

from ..context import Episode, Suspect, param, text

LABEL = "skipped_verification"
ORDER = 110
DEFINITION = (
    "Acted on a ticket without the verification the task or the approval type requires "
    "(submitted about, or linked a request to, an unverified ticket). Made good by a later "
    "request without the gap (or the ticket verified, for a refused link)."
)


def find(ep: Episode) -> Iterator[Suspect]:
    yield from ep.request_defects(LABEL)
    for i, s in enumerate(ep.steps):
        tid = normalize_ticket_id(text(param(s.call, "ticket_id")))
        for e in s.events:
            if (
                isinstance(e, ActionRejected)
                and e.code == "ticket_not_verified"
                and tid in ep.wanted
            ):
                yield Suspect(
                    LABEL,
                    s.step,
                    f"tried to link a request to {tid} before verifying it",
                    lambda i=i, tid=tid: ep.first_after(
                        i, lambda t: goals.verified(t.world.tickets.get(tid))
                    ),
                )
