"""Sending a request to an approver who is away."""

from __future__ import annotations

from collections.abc import Iterator

from ..context import Episode, Suspect

LABEL = "routed_to_out_of_office"
ORDER = 160
DEFINITION = (
    "Sent a request to an approver who is out of office instead of whoever covers for them. "
    "Made good by a later request for the same thing to the right person (or the approval "
    "achieved)."
)


def find(ep: Episode) -> Iterator[Suspect]:
    yield from ep.request_defects(LABEL)
