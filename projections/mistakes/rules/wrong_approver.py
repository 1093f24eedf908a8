"""Sending a request to someone who cannot approve it."""

from __future__ import annotations

from collections.abc import Iterator

from ..context import Episode, Suspect

LABEL = "wrong_approver"
ORDER = 170
DEFINITION = (
    "Sent a request to someone in the office who cannot approve it (not the role holder nor "
    "their acting delegate). Made good by a later request for the same thing to the right "
    "person (or the approval achieved)."
)


def find(ep: Episode) -> Iterator[Suspect]:
    yield from ep.request_defects(LABEL)
