"""Events: the vocabulary (`types`), upcasting, the hash chain and the stores."""

from __future__ import annotations

from .chain import GENESIS, canonical, chain_hash, event_body, first_broken_link
from .memory import InMemoryEventStore
from .store import (
    NEW_STREAM,
    ConcurrencyConflict,
    EventStore,
    RecordedEvent,
    StoreError,
    StreamInfo,
)
from .types import EVENT_ADAPTER, EVENT_TYPES, AnyEvent, Event
from .upcasting import UnknownEventType, parse_event, upcast


def open_store(url: str | None = None, **kwargs: object) -> EventStore:
    """A store from a URL: ``memory://`` (default), ``sqlite:///path.db`` or
    ``postgresql+psycopg://user@host/db``."""
    if url is None or url in ("memory", "memory://"):
        return InMemoryEventStore()
    from .sql import SQLEventStore

    return SQLEventStore(url, **kwargs)  # type: ignore[arg-type]


__all__ = [
    "EVENT_ADAPTER",
    "EVENT_TYPES",
    "GENESIS",
    "NEW_STREAM",
    "AnyEvent",
    "ConcurrencyConflict",
    "Event",
    "EventStore",
    "InMemoryEventStore",
    "RecordedEvent",
    "StoreError",
    "StreamInfo",
    "UnknownEventType",
    "canonical",
    "chain_hash",
    "event_body",
    "first_broken_link",
    "open_store",
    "parse_event",
    "upcast",
]
