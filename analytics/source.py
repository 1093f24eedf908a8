"""Reading the event log for the warehouse: raw pages by global position, and parsing them.

The warehouse needs every event twice over: as stored (the ``events`` table keeps the stored
JSON) and as models (the projections fold them). ``EventStore.read_all`` parses every event into
a model, which costs about as much as replaying it; so for the two backends of this project
the pages are read raw (the stored JSON text, unparsed), and only the episode streams that need
deriving are parsed, through a cache of the opening events every episode of an instance repeats.

Tailing by position is safe on every backend: the stores make positions visible in commit
order (a lock around appends in memory, SQLite's single writer, PostgreSQL's append advisory
lock, see ``events/sql.py``), so no event can commit later with a position at or below one a
reader has already seen. The raw reads below run the same query as ``read_all`` and rely on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import orjson
from sqlalchemy import Select, func, select
from sqlalchemy.exc import DBAPIError

from companyos.events import EventStore, InMemoryEventStore, RecordedEvent
from companyos.events.chain import canonical
from companyos.events.sql import EVENTS, SQLEventStore, unavailable
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


_RAW_COLUMNS = (
    EVENTS.c.episode_id,
    EVENTS.c.seq,
    EVENTS.c.position,
    EVENTS.c.type,
    EVENTS.c.schema_version,
    EVENTS.c.payload,
    EVENTS.c.hash,
    EVENTS.c.recorded_at,
)


def read_raw(store: EventStore, after_position: int, limit: int) -> list[RawEvent]:
    """Up to ``limit`` events with ``position > after_position``, in position order, unparsed."""
    if isinstance(store, InMemoryEventStore):
        return _read_memory(store, after_position, limit)
    if isinstance(store, SQLEventStore):
        return _read_sql(store, after_position, limit)
    return [_from_record(r) for r in store.read_all(after_position, limit)]


def _read_memory(store: InMemoryEventStore, after: int, limit: int) -> list[RawEvent]:
    # The memory store keeps rows as (stream, seq, position, type, version, json bytes, hash,
    # at), position i at index i - 1: the very slice its read_all takes, without the parse.
    with store._lock:
        start = max(0, after)
        rows = store._log[start : start + max(0, limit)]
    return _from_memory(rows)


MemoryRow = tuple[str, int, int, str, int, bytes, str, float]
"""A row of the memory store: (stream, seq, position, type, version, json bytes, hash, at)."""


def _from_memory(rows: Sequence[MemoryRow]) -> list[RawEvent]:
    new = tuple.__new__  # a named tuple's own __new__ is a Python function: a third slower
    return [new(RawEvent, (s, q, p, t, v, d.decode(), h, a)) for s, q, p, t, v, d, h, a in rows]


_SQLITE_PAGE = (
    "SELECT episode_id, seq, position, type, schema_version, payload, hash, recorded_at "
    "FROM events WHERE position > ? ORDER BY position LIMIT ?"
)


def _read_sql(store: SQLEventStore, after: int, limit: int) -> list[RawEvent]:
    store.flush()  # as read_all does: this process's open group commit becomes visible
    if store.dialect == "sqlite":
        # The same query on the driver's own cursor: SQLAlchemy's row processing costs as
        # much again as SQLite's fetch, for columns that need no conversion here.
        try:
            with store.engine.connect() as conn:
                cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
                try:
                    cur.execute(_SQLITE_PAGE, (after, max(0, limit)))
                    new = tuple.__new__
                    return [new(RawEvent, row) for row in cur.fetchall()]
                finally:
                    cur.close()
        except DBAPIError as exc:
            raise unavailable(exc, store.url) from exc
    q = (
        select(*_RAW_COLUMNS)
        .where(EVENTS.c.position > after)
        .order_by(EVENTS.c.position)
        .limit(max(0, limit))
    )
    return _run_sql(store, q)


def _run_sql(store: SQLEventStore, q: Select[Any]) -> list[RawEvent]:
    try:
        with store.engine.connect() as conn:
            return [tuple.__new__(RawEvent, row) for row in conn.execute(q)]
    except DBAPIError as exc:
        raise unavailable(exc, store.url) from exc


def read_prefix(store: EventStore, stream: str, before_seq: int) -> list[RawEvent]:
    """A stream's events with ``seq < before_seq``, unparsed (the part of a continued episode
    that an earlier catch-up loaded)."""
    if before_seq <= 0:
        return []
    if isinstance(store, InMemoryEventStore):
        with store._lock:
            rows = store._streams.get(stream, [])[:before_seq]
        return _from_memory(rows)
    if isinstance(store, SQLEventStore):
        q = (
            select(*_RAW_COLUMNS)
            .where(EVENTS.c.episode_id == stream, EVENTS.c.seq < before_seq)
            .order_by(EVENTS.c.seq)
        )
        return _run_sql(store, q)
    return [_from_record(r) for r in store.read(stream, 0, before_seq - 1)]


def _from_record(r: RecordedEvent) -> RawEvent:
    data = canonical(r.data).decode()
    return RawEvent(
        r.stream, r.seq, r.position, r.type, r.schema_version, data, r.hash, r.recorded_at
    )


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


def head_position(store: EventStore) -> int | None:
    """The log's last global position (0: empty), cheaply; None when the store cannot say."""
    if isinstance(store, InMemoryEventStore):
        with store._lock:
            return len(store._log)
    if isinstance(store, SQLEventStore):
        store.flush()
        try:
            with store.engine.connect() as conn:
                value = conn.execute(select(func.max(EVENTS.c.position))).scalar()
        except DBAPIError as exc:
            raise unavailable(exc, store.url) from exc
        return int(value or 0)
    return None
