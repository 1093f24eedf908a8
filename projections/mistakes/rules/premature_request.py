"""Asking for approval before the task's tickets are ready."""

from __future__ import annotations

from collections.abc import Iterator

from ..context import Episode, Suspect

LABEL = "premature_request"
ORDER = 100
DEFINITION = (
    "Submitted a request while a task ticket still lacked a fix the task asks for (a missing "
    "field, still blocked, not yet resolved). Made good by a later request for the same thing "
    "without the gap, or the approval achieved."
)


def find(ep: Episode) -> Iterator[Suspect]:
    yield from ep.request_defects(LABEL)
