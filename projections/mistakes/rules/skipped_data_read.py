"""Using a figure without reading it first."""

from __future__ import annotations

from collections.abc import Iterator

from ..context import Episode, Suspect

LABEL = "skipped_data_read"
ORDER = 140
DEFINITION = (
    "Submitted or decided on a metric without reading its current value first (the number, "
    "if right, was not confirmed), or before access to it was granted. Made good by a later "
    "request (or decision) on data read fresh."
)


def find(ep: Episode) -> Iterator[Suspect]:
    yield from ep.data_mistakes(LABEL)
