"""Reading the event log for the warehouse: raw pages by global position (`parsing` turns them

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
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.exc import DBAPIError

from companyos.events import EventStore, InMemoryEventStore, RecordedEvent
from companyos.events.chain import canonical
from companyos.events.sql import EVENTS, SQLEventStore, unavailable

# EventParser is re-exported: the frozen reference (bench/reference_analytics.py) imports it here.
from .parsing import EventParser as EventParser
from .parsing import RawEvent

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
