"""Reverting work the task needs."""

from __future__ import annotations

from collections.abc import Iterator

from companyos.domain import goals

from ..context import Episode, Suspect

LABEL = "undid_progress"
ORDER = 90
DEFINITION = (
    "Reverted work the task needs: un-verified a task ticket, moved it off the status the "
    "task asks for, or withdrew a right decision. Made good when the work is back."
)


def find(ep: Episode) -> Iterator[Suspect]:
    for i, s, e in ep.ticket_updates():
        tid, tg = e.ticket_id, ep.wanted.get(e.ticket_id)
        if tg is None:
            continue
        if ep.is_decision(e):
            if e.new is None and tg.resolution is not None and e.old == tg.resolution:
                yield Suspect(
                    LABEL,
                    s.step,
                    f"withdrew {tid}'s decision ({e.old})",
                    lambda i=i: ep.first_after(i, lambda t: ep.decision_right(t.world)),
                )
        elif e.field == "verified" and tg.verify and e.old is True and e.new is False:
            yield Suspect(
                LABEL,
                s.step,
                f"un-verified {tid}",
                lambda i=i, tid=tid: ep.first_after(
                    i, lambda t: goals.verified(t.world.tickets.get(tid))
                ),
            )
        elif e.field == "status" and tg.status and e.old == tg.status and e.new != tg.status:
            yield Suspect(
                LABEL,
                s.step,
                f"moved {tid} from {tg.status} back to {e.new}",
                lambda i=i, tid=tid, tg=tg: ep.first_after(
                    i, lambda t: goals.status_ok(t.world.tickets.get(tid), tg)
                ),
            )
