"""Using a stale figure."""

from __future__ import annotations

from collections.abc import Iterator

from ..context import Episode, Suspect

LABEL = "used_stale_data"
ORDER = 130
DEFINITION = (
    "Submitted or decided on a metric while its served value was stale, never refreshed. "
    "Made good by a later request (or decision) on fresh data, or the goal achieved."
)


def find(ep: Episode) -> Iterator[Suspect]:
    yield from ep.data_mistakes(LABEL)
