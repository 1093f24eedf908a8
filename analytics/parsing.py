"""Stored events to what the warehouse derives from: `RawEvent` (an event as stored, unparsed)
and `EventParser` (rows to event models, each distinct opening event validated once).

A module of its own, light to import (no database driver): the warehouse's worker processes
import it and `derive`, nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import orjson

from companyos.events.types import EVENT_TYPES, Event
from companyos.events.upcasting import parse_event


class RawEvent(NamedTuple):
    """An event as stored, unparsed: the column order of the warehouse's staging table."""

    stream: str
    seq: int
    position: int
    type: str
    schema_version: int
    data: str
    """The stored payload, JSON text."""
    hash: str
    recorded_at: float
    """Seconds since the epoch (UTC)."""


_CACHED_TYPES = frozenset(
    {
        "TaskAssigned",
        "ApprovalTypeDefined",
        "ApproverRegistered",
        "TicketCreated",
        "MetricRecorded",
        "ChaosInjected",
    }
)
"""The opening events of an instance: every trial of it (every agent, every repeat) stores the
very same JSON, and the nested ones are the dearest to validate."""


class EventParser:
    """Stored rows to event models, validating each distinct opening event once.

    Events are frozen models, so one parsed instance can stand for every identical row; the
    cache is bounded (cleared when full) so a long catch-up cannot grow without limit. The
    projections take models (`RecordedEvent` or `Event` alike), so no `RecordedEvent` is
    built: the warehouse has the rows for the rest."""

    def __init__(self, max_cached: int = 65_536) -> None:
        self.max_cached = max_cached
        self._cache: dict[tuple[str, int, str], Event] = {}
        self.parsed = 0
        self.hits = 0

    def events(self, rows: Sequence[RawEvent]) -> list[Event]:
        return [self.event(r.type, r.schema_version, r.data) for r in rows]

    def event(self, kind: str, version: int, data_json: str) -> Event:
        if kind not in _CACHED_TYPES:
            self.parsed += 1
            cls = EVENT_TYPES.get(kind)
            if cls is not None and not cls.nested and version == cls.schema_version:
                # A flat event at the current version: its constructor validates exactly what
                # needs it (see `Event`), half the cost of going through `model_validate`.
                return cls(**orjson.loads(data_json))
            return parse_event(kind, version, orjson.loads(data_json))
        key = (kind, version, data_json)
        hit = self._cache.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.parsed += 1
        event = parse_event(kind, version, orjson.loads(data_json))
        if len(self._cache) >= self.max_cached:
            self._cache.clear()
        self._cache[key] = event
        return event
