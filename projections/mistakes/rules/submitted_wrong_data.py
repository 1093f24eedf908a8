"""Putting data into a request or a task ticket that does not match the record or the task."""

from __future__ import annotations

from collections.abc import Iterator

from companyos.domain import goals

from ..context import Episode, Suspect

LABEL = "submitted_wrong_data"
ORDER = 150
DEFINITION = (
    "Put data into a request or a task ticket that does not match the system of record or "
    "the task: a figure, a prior approval, a text field, or a ticket field value. Made good by "
    "a later request without it (or the approval achieved), or the field set right."
)


def find(ep: Episode) -> Iterator[Suspect]:
    yield from ep.request_defects(LABEL)
    for i, s, e in ep.ticket_updates():
        tg = ep.wanted.get(e.ticket_id)
        if tg is None or e.field not in tg.fields or ep.is_decision(e):
            continue
        if goals.value_ok(e.new, tg.fields[e.field]):
            continue
        tid, field = e.ticket_id, e.field
        yield Suspect(
            LABEL,
            s.step,
            f"set {tid}.{field} to {e.new!r}; the task needs {tg.fields[field]!r}",
            lambda i=i, tid=tid, tg=tg, field=field: ep.first_after(
                i, lambda t: goals.field_ok(t.world.tickets.get(tid), tg, field)
            ),
        )
