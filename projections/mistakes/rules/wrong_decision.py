"""Deciding a decision task against its rule, on fresh data."""

from __future__ import annotations

from collections.abc import Iterator

from ..context import Episode, Suspect

LABEL = "wrong_decision"
ORDER = 180
DEFINITION = (
    "Decided a decision task on fresh data against its rule: declined or flagged what "
    "qualified, or chose the wrong one of decline and flag. Made good when the ticket later "
    "holds the right decision."
)


def find(ep: Episode) -> Iterator[Suspect]:
    for found in ep.decisions():
        if found.label == LABEL:
            yield found
