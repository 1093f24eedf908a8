"""SQL recorder on SQLModel/SQLAlchemy: an embedded SQLite file by default, PostgreSQL given a
URL, the same code for both.

One append is one transaction. On SQLite it starts with ``BEGIN IMMEDIATE`` (the write lock is
taken up front, so two writers never both read version n and race) on a WAL-mode file. On
PostgreSQL every append first takes one transaction-scoped advisory lock: appends are
serialised, so global positions become visible in commit order and a reader tailing
``read_all`` can never skip an event that commits later with a lower position.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import random as _random
import sqlite3 as _sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

import orjson
from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    bindparam,
    create_engine,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Dialect, Engine, make_url
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlmodel import Field, SQLModel

from .checkpoints import BACKSTOP_PAGES, WalCheckpointer
from .snapshots import Snapshot, decode, encode
from .store import (
    GENESIS,
    ConcurrencyConflict,
    EventStore,
    Head,
    RecordedEvent,
    SealedEvent,
    StoreError,
    StreamInfo,
    now,
    seal,
)
from .types import Event
from .upcasting import parse_event

_log = logging.getLogger("companyos.store")
_POSITION = BigInteger().with_variant(Integer, "sqlite")  # INTEGER PRIMARY KEY is SQLite's rowid
_APPEND_LOCK_KEY = 0x436F6D70  # any constant: one advisory lock for all appends on PostgreSQL
_SCHEMA_LOCK_KEY = 0x436F6D71  # and another for creating the tables


class EventRow(SQLModel, table=True):
    __tablename__ = "events"
    __table_args__ = (UniqueConstraint("episode_id", "seq", name="uq_events_stream_seq"),)

    position: int | None = Field(
        default=None, sa_column=Column(_POSITION, primary_key=True, autoincrement=True)
    )
    episode_id: str = Field(sa_column=Column(String(128), nullable=False))
    seq: int = Field(sa_column=Column(Integer, nullable=False))
    # Unique because it is "{episode_id}:{seq}" and (episode_id, seq) is unique: no index of
    # its own (one fewer B-tree page written per commit).
    event_id: str = Field(sa_column=Column(String(200), nullable=False))
    type: str = Field(sa_column=Column(String(64), nullable=False))
    schema_version: int = Field(sa_column=Column(Integer, nullable=False))
    payload: str = Field(sa_column=Column(Text, nullable=False))
    hash: str = Field(sa_column=Column(String(64), nullable=False))
    recorded_at: float = Field(sa_column=Column(Double, nullable=False))


class StreamRow(SQLModel, table=True):
    __tablename__ = "streams"

    stream_id: str = Field(sa_column=Column(String(128), primary_key=True))
    version: int = Field(sa_column=Column(Integer, nullable=False))
    last_hash: str = Field(sa_column=Column(String(64), nullable=False))
    first_position: int = Field(sa_column=Column(BigInteger, nullable=False, index=True))
    created_at: float = Field(sa_column=Column(Double, nullable=False))
    updated_at: float = Field(sa_column=Column(Double, nullable=False))


class SnapshotRow(SQLModel, table=True):
    """The latest snapshot of a stream's fold (`events.snapshots`): a cache, never read as
    the truth; dropping the table loses only speed."""

    __tablename__ = "snapshots"

    stream_id: str = Field(sa_column=Column(String(128), primary_key=True))
    version: int = Field(sa_column=Column(Integer, nullable=False))
    hash: str = Field(sa_column=Column(String(64), nullable=False))
    tag: str = Field(sa_column=Column(String(200), nullable=False))
    state: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    created_at: float = Field(sa_column=Column(Double, nullable=False))


EVENTS = EventRow.__table__  # type: ignore[attr-defined]
STREAMS = StreamRow.__table__  # type: ignore[attr-defined]
SNAPSHOTS = SnapshotRow.__table__  # type: ignore[attr-defined]
_TABLES = [EVENTS, STREAMS, SNAPSHOTS]

_EVENT_COLUMNS = [
    EVENTS.c.episode_id,
    EVENTS.c.seq,
    EVENTS.c.position,
    EVENTS.c.event_id,
    EVENTS.c.type,
    EVENTS.c.schema_version,
    EVENTS.c.payload,
    EVENTS.c.hash,
    EVENTS.c.recorded_at,
]


_STREAM_COLUMNS = [
    STREAMS.c.stream_id,
    STREAMS.c.version,
    STREAMS.c.last_hash,
    STREAMS.c.first_position,
    STREAMS.c.created_at,
    STREAMS.c.updated_at,
]
_SNAPSHOT_COLUMNS = [
    SNAPSHOTS.c.stream_id,
    SNAPSHOTS.c.version,
    SNAPSHOTS.c.hash,
    SNAPSHOTS.c.tag,
    SNAPSHOTS.c.state,
]


class _Prepared:
    """A Core statement compiled once for one dialect and run on the driver's cursor.

    SQLAlchemy's per-execution work (building, caching and wrapping the statement) costs more
    than SQLite's own, and the append path runs four statements per step: they are compiled
    once here and run on the DBAPI cursor of the connection SQLAlchemy's transaction holds."""

    def __init__(self, stmt: Any, dialect: Dialect) -> None:
        compiled = stmt.compile(dialect=dialect)
        self.sql = str(compiled)
        self.order = list(compiled.positiontup) if compiled.positional else None

    def _params(self, values: dict[str, Any]) -> Any:
        return tuple(values[n] for n in self.order) if self.order is not None else values

    def run(self, cursor: Any, **values: Any) -> Any:
        cursor.execute(self.sql, self._params(values))
        return cursor

    def run_many(self, cursor: Any, rows: list[dict[str, Any]]) -> None:
        cursor.executemany(self.sql, [self._params(r) for r in rows])


class _Statements:
    def __init__(self, dialect: Dialect) -> None:
        columns = (
            "episode_id",
            "seq",
            "event_id",
            "type",
            "schema_version",
            "payload",
            "hash",
            "recorded_at",
        )
        self.lock = _Prepared(select(func.pg_advisory_xact_lock(bindparam("k"))), dialect)
        self.head = _Prepared(
            select(STREAMS.c.version, STREAMS.c.last_hash).where(
                STREAMS.c.stream_id == bindparam("stream_id")
            ),
            dialect,
        )
        self.insert = _Prepared(insert(EVENTS).values({c: bindparam(c) for c in columns}), dialect)
        self.positions = _Prepared(
            select(EVENTS.c.position)
            .where(EVENTS.c.episode_id == bindparam("episode_id"), EVENTS.c.seq >= bindparam("lo"))
            .order_by(EVENTS.c.seq),
            dialect,
        )
        self.create = _Prepared(
            insert(STREAMS).values(
                {
                    c: bindparam(c)
                    for c in (
                        "stream_id",
                        "version",
                        "last_hash",
                        "first_position",
                        "created_at",
                        "updated_at",
                    )
                }
            ),
            dialect,
        )
        self.advance = _Prepared(
            update(STREAMS)
            .where(STREAMS.c.stream_id == bindparam("sid"))
            .values(version=bindparam("v"), last_hash=bindparam("h"), updated_at=bindparam("at")),
            dialect,
        )
        # The reads every request makes (a cached episode's version check, a load's snapshot
        # and tail, a stream's head): SQLAlchemy's work per execution was 150 us of the 170 a
        # version check took on SQLite, the query itself 5.
        one_stream = STREAMS.c.stream_id == bindparam("stream_id")
        self.version = _Prepared(select(STREAMS.c.version).where(one_stream), dialect)
        self.info = _Prepared(select(*_STREAM_COLUMNS).where(one_stream), dialect)
        self.snapshot = _Prepared(
            select(*_SNAPSHOT_COLUMNS).where(SNAPSHOTS.c.stream_id == bindparam("stream_id")),
            dialect,
        )
        tail = select(*_EVENT_COLUMNS).where(
            EVENTS.c.episode_id == bindparam("stream_id"), EVENTS.c.seq >= bindparam("lo")
        )
        self.read_from = _Prepared(tail.order_by(EVENTS.c.seq), dialect)
        self.read_range = _Prepared(
            tail.where(EVENTS.c.seq <= bindparam("hi")).order_by(EVENTS.c.seq), dialect
        )


def _record(row: Any) -> RecordedEvent:
    """A row of `_EVENT_COLUMNS`, as SQLAlchemy or the driver gives it."""
    stream, seq, position, event_id, kind, version, payload, h, at = row
    data = orjson.loads(payload)
    return RecordedEvent(
        stream, seq, position, event_id, kind, version, data, h, at,
        parse_event(kind, version, data),
    )  # fmt: skip


_I64 = 2**63 - 1
_I32 = 2**31 - 1


def _i64(n: int) -> int:
    """Clamp a caller's bound to what the position column can hold: a bound past the range
    simply matches nothing more (the drivers would raise on the number itself)."""
    return max(-_I64, min(int(n), _I64))


def _i32(n: int) -> int:
    """The same for a seq bound (an INTEGER column: PostgreSQL casts the parameter to it)."""
    return max(-_I32, min(int(n), _I32))


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path)}"


def redact_url(url: str) -> str:
    """The URL with its password masked, for the operator's eyes (logs, the CLI)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not even a URL: say nothing of it
        return "<unparsable store URL>"


def unavailable(exc: BaseException, url: str) -> StoreError:
    """A `StoreError` safe to show a client: it names the failure's kind, never the database's
    address, credentials, file path or the SQL; the details go to the server log."""
    cause = getattr(exc, "orig", None) or exc
    _log.warning("event store %s failed: %s", redact_url(url), cause)
    return StoreError(f"event store unavailable ({type(cause).__name__})")


WAL_SWITCH_PATIENCE = 30.0
"""Seconds a connection keeps trying to put a fresh database into WAL mode (`enter_wal`)."""


def enter_wal(dbapi_conn: Any, patience: float = WAL_SWITCH_PATIENCE) -> None:
    """Put the database in WAL mode, waiting out other connections doing the same.

    On a fresh file the switch reads the header under a shared lock, then needs the exclusive
    one. Two processes that both hold the shared lock would deadlock, so SQLite fails one of
    them at once with "database is locked", without calling the busy handler: the connect
    timeout does not cover it. Replicas started together on a new database hit this (about 3%
    of opens with 8 processes), so the switch is retried, with jitter, until ``patience``
    runs out; once one of them has switched, the mode is in the file and the rest find it.
    """
    deadline = time.monotonic() + patience
    delay = 0.001
    while True:
        try:
            dbapi_conn.execute("PRAGMA journal_mode=WAL")
            return
        except _sqlite3.OperationalError as exc:
            message = str(exc).lower()
            if ("locked" not in message and "busy" not in message) or (
                time.monotonic() >= deadline
            ):
                raise
        time.sleep(delay * (0.5 + _random.random()))
        delay = min(delay * 2, 0.05)


_UNBOUNDED = 2**62
"""A group size no block of appends reaches (`SQLEventStore.deferred_commit`)."""


class _Written(NamedTuple):
    """What one append wrote: its records are made only for a caller that wants them."""

    stream: str
    sealed: list[SealedEvent]
    positions: list[int]
    at: float

    def records(self) -> list[RecordedEvent]:
        stream, at = self.stream, self.at
        return [s.recorded(stream, p, at) for s, p in zip(self.sealed, self.positions, strict=True)]


class SQLEventStore(EventStore):
    """Event store on any SQLAlchemy URL (``sqlite:///file.db``, ``postgresql+psycopg://...``).

    ``synchronous`` applies to SQLite: ``NORMAL`` (default) means a committed step survives a
    crash of the process, the power-loss window being the last transactions since the WAL was
    last synced; ``FULL`` syncs the WAL at every commit and survives power loss too.

    ``group_commit=N`` (SQLite only) keeps one write transaction open across appends and commits
    it every N appends or ``group_delay`` seconds, whichever comes first, and before any read
    through this store. Each append is still all-or-nothing and its conflict check is exact
    (the open transaction holds the write lock); the rows of appends to existing streams are
    written together just before the commit, in the order of the appends. The trade-off: a
    crash loses the appends of the open group, up to N-1 acknowledged steps or ``group_delay``
    seconds of them, never part of one; and other processes cannot write while a group is open.
    Use it for a single process that owns its episodes (training rollouts), not behind several
    replicas.
    """

    def __init__(
        self,
        url: str,
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        create_tables: bool = True,
        pool_size: int = 8,
        group_commit: int = 1,
        group_delay: float = 0.05,
    ) -> None:
        self.url = url
        self.dialect = url.split(":", 1)[0].split("+", 1)[0]
        if group_commit > 1 and self.dialect != "sqlite":
            raise StoreError(
                "group_commit is for the embedded SQLite store; PostgreSQL commits "
                "each append so that replicas can share streams"
            )
        self.group_commit = max(1, int(group_commit))
        self.group_delay = group_delay
        self._wlock = threading.RLock()
        self._conn: Any = None
        self._open = False
        self._pending = 0
        self._since = 0.0
        self._closed = threading.Event()
        self._flusher: threading.Thread | None = None
        self._heads: dict[str, tuple[int, str]] = {}
        """Streams appended to in a group: (version, last hash). Exact while the group's
        transaction holds the write lock (nobody else can write), so their appends need not
        read the head back; kept from one group to the next while no other connection has
        written (`_check_heads`), dropped when a group is lost."""
        self._data_version: int | None = None
        self._dirty: dict[str, tuple[int, str, float]] = {}
        """Existing streams whose head the open group moved: written once, at its commit."""
        self._due: list[tuple[Any, ...]] = []
        """Rows of the open group's appends to existing streams, inserted together (one
        ``executemany``) at its commit or before any INSERT that must follow them: SQLite's
        work in one run costs less than an INSERT between steps (a step in a group 11-22%
        less in all, README *Performance*)."""
        self._inserts: dict[tuple[int, bool], str] = {}
        self._lockfile: Any = None
        self._flocked = False
        self._checkpointer: WalCheckpointer | None = None
        if self.dialect == "sqlite":
            self._engine = self._sqlite_engine(url, synchronous)
            self._checkpointer = WalCheckpointer(self._engine.raw_connection)
            path = url.split(":///", 1)[1].split("?", 1)[0]
            self._lockfile = open(f"{path}-append.lock", "a+b")  # noqa: SIM115 - kept open
        elif self.dialect == "postgresql":
            self._engine = create_engine(
                url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True
            )
        else:
            raise StoreError(
                f"unsupported store URL {redact_url(url)!r}: use sqlite:///path.db or "
                "postgresql+psycopg://..."
            )
        dbapi = self._engine.dialect.dbapi
        self._conflict_errors: tuple[type[BaseException], ...] = (
            IntegrityError,
            dbapi.IntegrityError,
        )
        # Any other driver error means the database is unreachable or broken, not that the
        # caller did something wrong: it becomes a StoreError that names no secret.
        self._db_errors: tuple[type[BaseException], ...] = (DBAPIError, dbapi.Error)
        if create_tables:
            try:
                self._create_tables()
            except self._db_errors as exc:
                self._engine.dispose()
                raise StoreError(
                    f"cannot open the event store {redact_url(url)}: "
                    f"{type(getattr(exc, 'orig', None) or exc).__name__}"
                ) from exc
        self._sql = _Statements(self._engine.dialect)

    def _create_tables(self) -> None:
        """Create the tables unless they exist, one process at a time: replicas started
        together on a fresh database would otherwise both see no table and both create it
        (a unique violation on PostgreSQL's catalogue, "table already exists" on SQLite)."""
        with self._engine.connect() as conn:
            if self.dialect == "postgresql":
                conn.execute(select(func.pg_advisory_xact_lock(_SCHEMA_LOCK_KEY)))
                SQLModel.metadata.create_all(conn, tables=_TABLES)
                conn.commit()  # DDL is transactional there; the lock goes with the commit
            else:
                conn.exec_driver_sql("BEGIN IMMEDIATE")  # the driver is in autocommit mode
                try:
                    SQLModel.metadata.create_all(conn, tables=_TABLES)
                except BaseException:
                    conn.exec_driver_sql("ROLLBACK")
                    raise
                conn.exec_driver_sql("COMMIT")

    # ------------------------------------------------------------------ engines

    @staticmethod
    def _sqlite_engine(url: str, synchronous: str) -> Engine:
        if url in ("sqlite://", "sqlite:///:memory:"):
            raise StoreError("in-memory SQLite is not shared between connections: use memory://")
        path = url.split(":///", 1)[1].split("?", 1)[0]
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: Any, _record: Any) -> None:
            # Autocommit at the driver: the writer issues BEGIN IMMEDIATE / COMMIT itself.
            dbapi_conn.isolation_level = None
            enter_wal(dbapi_conn)
            dbapi_conn.execute(f"PRAGMA synchronous={synchronous}")
            dbapi_conn.execute("PRAGMA busy_timeout=30000")
            # The store's checkpointer folds the WAL back from a thread of its own; the
            # writer does it in its COMMIT only if that falls this far behind.
            dbapi_conn.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")

        return engine

    @property
    def engine(self) -> Engine:
        return self._engine

    # ------------------------------------------------------------------ writes
    #
    # Appends go through one dedicated DBAPI connection (the writer), under a lock: SQLite and
    # the PostgreSQL advisory lock serialise appends anyway, and SQLAlchemy's per-transaction
    # work (pool checkout, events, statement wrappers) cost more than SQLite's own commit.
    # Reads use the engine's pool and never wait for the writer.

    def _writer(self) -> Any:
        if self._conn is None:
            self._conn = self._engine.raw_connection()
        return self._conn

    def _drop_writer(self) -> None:
        conn, self._conn = self._conn, None
        self._forget_group()  # whatever the open group held is gone with its transaction
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.invalidate()

    def _begin(self, cur: Any) -> None:
        if self.dialect == "sqlite":
            self._flock(True)
            try:
                cur.execute("BEGIN IMMEDIATE")  # take the write lock before reading the head
            except BaseException:
                self._flock(False)
                raise
        # psycopg opens a transaction at the first statement by itself.

    def _end(self, conn: Any, cur: Any, commit: bool) -> None:
        if self.dialect == "sqlite":  # the driver is in autocommit mode: say it in SQL
            try:
                cur.execute("COMMIT" if commit else "ROLLBACK")
            finally:
                self._flock(False)
        elif commit:
            conn.commit()
        else:
            conn.rollback()

    def _flock(self, take: bool) -> None:
        """Writers of one SQLite file queue on a lock file before ``BEGIN IMMEDIATE``. SQLite's
        own busy handler polls, sleeping 1 ms, then 2, 5, 10 ... between tries, far longer than
        an append takes; a process waiting on the lock file wakes the moment the writer before
        it is done (`companyos serve --workers N` has N writers on one file)."""
        if self._lockfile is None or take == self._flocked:
            return
        fcntl.flock(self._lockfile, fcntl.LOCK_EX if take else fcntl.LOCK_UN)
        self._flocked = take

    def append(
        self, stream: str, events: Sequence[Event], expected_version: int
    ) -> list[RecordedEvent]:
        written = self._write(stream, events, expected_version, True)
        return written.records() if written is not None else []

    def extend(self, stream: str, events: Sequence[Event], expected_version: int) -> Head:
        if not events:
            raise ValueError("extend needs at least one event")
        written = self._write(stream, events, expected_version, False)
        assert written is not None
        last = written.sealed[-1]
        return Head(last.seq, last.hash)

    def _write(
        self, stream: str, events: Sequence[Event], expected_version: int, records: bool
    ) -> _Written | None:
        """Append; ``records``: the caller wants the records (so the events' positions)."""
        with self._wlock:
            try:
                if self.group_commit > 1:
                    return self._append_grouped(stream, events, expected_version, records)
                conn = self._writer()
                cur = conn.cursor()
                self._begin(cur)
                try:
                    out = self._append(cur, stream, events, expected_version, records)
                except BaseException:
                    self._end(conn, cur, commit=False)
                    raise
                self._end(conn, cur, commit=True)
                return out
            except self._conflict_errors as exc:
                # Only reachable when another program writes to the tables without the lock:
                # still a conflict, never a torn write.
                raise ConcurrencyConflict(stream, expected_version, self.version(stream)) from exc
            except self._db_errors as exc:
                # The transaction is gone with the connection (or its commit is in doubt: the
                # caller's next append finds out, through its expected version).
                self._drop_writer()
                raise unavailable(exc, self.url) from exc

    def _append_grouped(
        self, stream: str, events: Sequence[Event], expected_version: int, records: bool = True
    ) -> _Written | None:
        cur = self._writer().cursor()
        if not self._open:
            self._begin(cur)
            self._open, self._since = True, time.monotonic()
            self._start_flusher()
            self._check_heads(cur)
        if stream not in self._heads:
            # Read inside the group's transaction, which holds the write lock: exact.
            row = self._sql.head.run(cur, stream_id=stream).fetchone()
            if row is not None:
                self._heads[stream] = (row[0], row[1])
        if stream in self._heads:
            # An existing stream's append is its rows (the head moves at commit): one INSERT,
            # which SQLite backs out by itself if it fails (no savepoint needed), or rows kept
            # for the group's INSERT at commit (`_append`); the group's view of the head
            # follows at once.
            out = self._append(cur, stream, events, expected_version, records)
        else:
            # A new stream: its INSERT comes after the rows the group keeps (positions in the
            # order of the appends), and with the stream's row under one savepoint.
            self._insert_due(cur)
            cur.execute("SAVEPOINT append")
            try:
                out = self._append(cur, stream, events, expected_version, records)
            except BaseException:
                cur.execute("ROLLBACK TO append")
                cur.execute("RELEASE append")
                # Nothing of it is in the group: neither is its head (it had none in the group).
                self._heads.pop(stream, None)
                self._dirty.pop(stream, None)
                raise
            cur.execute("RELEASE append")
        self._pending += 1
        if self._pending >= self.group_commit:
            self._commit_group()
        return out

    def _insert_due(self, cur: Any) -> None:
        """Insert the rows the open group keeps (`_due`). They cannot be refused (each was
        checked against a head the group's lock makes exact), so a failure here is the
        database's or a writer's that ignores the lock: the group is lost, as when its COMMIT
        fails, and the caller is told."""
        if not self._due:
            return
        due, self._due = self._due, []
        try:
            cur.executemany(self._insert_sql(1, False), due)
        except self._db_errors as exc:
            self._lose_group(cur)
            raise StoreError(
                f"the open group of appends could not be written and is lost ({len(due)} "
                f"events): {type(getattr(exc, 'orig', None) or exc).__name__}; a writer's "
                "cached state must be read back from the store"
            ) from exc

    def _lose_group(self, cur: Any) -> None:
        try:
            with contextlib.suppress(*self._db_errors):
                cur.execute("ROLLBACK")
        finally:
            self._forget_group()

    def _forget_group(self) -> None:
        """The open group is gone (rolled back, or with its connection): so is all it held,
        and the lock file is let go."""
        self._open, self._pending = False, 0
        self._heads.clear()
        self._dirty.clear()
        self._due = []
        self._flock(False)

    def _commit_group(self) -> None:
        if self._open:
            cur = self._writer().cursor()
            self._insert_due(cur)
            if self._dirty:
                q = self._sql.advance
                cur.executemany(
                    q.sql,
                    [
                        q._params({"sid": sid, "v": v, "h": h, "at": at})
                        for sid, (v, h, at) in self._dirty.items()
                    ],
                )
            self._open, self._pending = False, 0
            self._dirty.clear()
            try:
                cur.execute("COMMIT")
            except BaseException:
                self._heads.clear()  # the group is gone: so are the heads it moved
                raise
            finally:
                self._flock(False)

    def _check_heads(self, cur: Any) -> None:
        """At the start of a group: the heads known from earlier groups are still exact if no
        other connection (another store object, another process) has committed since, which
        SQLite's ``data_version`` tells (this connection's own commits leave it as it is). Then
        a stream's next append needs neither a head SELECT nor a savepoint."""
        version = cur.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._heads.clear()
            self._data_version = version

    @contextlib.contextmanager
    def deferred_commit(self) -> Iterator[None]:
        """`EventStore.deferred_commit`. On SQLite, the block's appends share one transaction
        (a group without a size limit, committed at the end, earlier if a read comes first);
        this store's other threads wait for the block, other processes for its write lock.
        PostgreSQL commits each append (replicas share streams, and the advisory lock must not
        be held across a batch), as does a store already in group-commit mode (its own
        trade-off stands)."""
        if self.dialect != "sqlite" or self.group_commit > 1:
            yield
            return
        with self._wlock:
            self.group_commit = _UNBOUNDED
            try:
                yield
            finally:
                self.group_commit = 1
                # The block's appends are kept even if the block failed part-way: the caller
                # holds state derived from each append that succeeded.
                try:
                    self._commit_group()
                except self._db_errors as exc:
                    self._drop_writer()
                    raise unavailable(exc, self.url) from exc

    def flush(self) -> None:
        """Commit the open group now (a no-op unless ``group_commit`` > 1)."""
        if self._open:
            with self._wlock:
                self._commit_group()

    def _start_flusher(self) -> None:
        if self._flusher is not None:
            return

        def run() -> None:
            while not self._closed.wait(self.group_delay / 2):
                if self._open and time.monotonic() - self._since >= self.group_delay:
                    with self._wlock:
                        if self._open:
                            try:
                                self._commit_group()
                            except Exception as exc:
                                # Nobody to tell here: the group is lost as in a crash (the
                                # trade-off of group commit), and the thread must live on.
                                # A writer holding state past the store's head finds out at
                                # its next append (a conflict) and reads it back.
                                _log.warning("group commit failed, group lost: %s", exc)
                                self._drop_writer()

        self._flusher = threading.Thread(target=run, name="companyos-group-commit", daemon=True)
        self._flusher.start()

    def _append(
        self,
        cur: Any,
        stream: str,
        events: Sequence[Event],
        expected_version: int,
        records: bool = True,
    ) -> _Written | None:
        """Write ``events`` inside the open transaction (None: there were none). Without
        ``records``, an existing stream's events are inserted without asking their positions
        back (the `_Written` then has none)."""
        q = self._sql
        grouped = self._open
        if not grouped:
            self._heads.pop(stream, None)  # moved outside a group: a group reads it again
        head = self._heads.get(stream) if grouped else None
        if head is None:
            if self.dialect == "postgresql":
                q.lock.run(cur, k=_APPEND_LOCK_KEY)
            head = q.head.run(cur, stream_id=stream).fetchone()
        actual = head[0] if head is not None else -1
        if actual != expected_version:
            raise ConcurrencyConflict(stream, expected_version, actual)
        if not events:
            return None
        sealed = seal(stream, events, expected_version, head[1] if head else GENESIS)
        at = now()
        if self._checkpointer is not None:
            # About the pages this append dirties: a leaf of the events table, one of its
            # (stream, seq) index, the stream's row; more for large payloads.
            self._checkpointer.wrote(3 + len(sealed) // 8)
        values = [
            (stream, s.seq, s.event_id, s.type, s.schema_version, s.data_json.decode(), s.hash, at)
            for s in sealed
        ]
        rows: list[Any] = []
        if grouped and head is not None and not records:
            self._due += values  # no positions wanted: the rows wait for the group's INSERT
        else:
            self._insert_due(cur)  # the group's earlier rows come first (positions in order)
            params = [v for row in values for v in row]
            # One statement inserts the step's events and hands back their positions (when
            # they are wanted: a new stream records its first; `append` hands them out).
            if records or head is None:
                rows = cur.execute(self._insert_sql(len(sealed), True), params).fetchall()
            else:
                cur.execute(self._insert_sql(len(sealed), False), params)
        last = sealed[-1]
        if head is not None and grouped:
            # At once: the group's view of the stream must follow its INSERT (written at commit).
            self._dirty[stream] = (last.seq, last.hash, at)
            self._heads[stream] = (last.seq, last.hash)
        positions = [p for p, _ in sorted(rows, key=lambda r: r[1])]
        if head is None:
            q.create.run(
                cur,
                stream_id=stream,
                version=last.seq,
                last_hash=last.hash,
                first_position=positions[0],
                created_at=at,
                updated_at=at,
            )
            if grouped:
                self._heads[stream] = (last.seq, last.hash)
        elif not grouped:
            q.advance.run(cur, sid=stream, v=last.seq, h=last.hash, at=at)
        return _Written(stream, sealed, positions, at)

    def _insert_sql(self, n: int, returning: bool) -> str:
        """INSERT of ``n`` events in the driver's parameter style, ``returning`` their
        (position, seq)."""
        sql = self._inserts.get((n, returning))
        if sql is None:
            mark = "?" if self._engine.dialect.paramstyle == "qmark" else "%s"
            row = "(" + ", ".join([mark] * 8) + ")"
            sql = self._inserts[n, returning] = (
                "INSERT INTO events (episode_id, seq, event_id, type, schema_version, payload, "
                f"hash, recorded_at) VALUES {', '.join([row] * n)}"
                + (" RETURNING position, seq" if returning else "")
            )
        return sql

    # ------------------------------------------------------------------ snapshots

    def save_snapshot(self, snapshot: Snapshot) -> None:
        """Upsert the stream's snapshot (a later version wins). A cache: a failure is logged
        and changes nothing else, inside an open group too (its own savepoint)."""
        mark = "?" if self._engine.dialect.paramstyle == "qmark" else "%s"
        sql = (
            "INSERT INTO snapshots (stream_id, version, hash, tag, state, created_at) VALUES "
            f"({', '.join([mark] * 6)}) ON CONFLICT (stream_id) DO UPDATE SET "
            "version = excluded.version, hash = excluded.hash, tag = excluded.tag, "
            "state = excluded.state, created_at = excluded.created_at "
            "WHERE excluded.version > snapshots.version"
        )
        params = (
            snapshot.stream,
            snapshot.version,
            snapshot.hash,
            snapshot.tag,
            encode(snapshot.state),
            now(),
        )
        with self._wlock:
            try:
                cur = self._writer().cursor()
                if self._open:
                    cur.execute("SAVEPOINT snapshot")
                    try:
                        cur.execute(sql, params)
                    except BaseException:
                        cur.execute("ROLLBACK TO snapshot")
                        cur.execute("RELEASE snapshot")
                        raise
                    cur.execute("RELEASE snapshot")
                    return
                self._begin(cur)
                try:
                    cur.execute(sql, params)
                except BaseException:
                    self._end(self._writer(), cur, commit=False)
                    raise
                self._end(self._writer(), cur, commit=True)
            except self._db_errors as exc:
                _log.warning("snapshot of %s not kept: %s", snapshot.stream, exc)

    def load_snapshot(self, stream: str) -> Snapshot | None:
        try:
            rows = self._fetch(self._sql.snapshot, stream_id=stream)
        except StoreError:
            return None
        if not rows:
            return None
        stream_id, version, h, tag, state = rows[0]
        try:
            folded = decode(bytes(state))
        except Exception as exc:  # a cache that cannot be read is no cache
            _log.warning("snapshot of %s ignored: %s", stream, exc)
            return None
        return Snapshot(stream_id, version, h, tag, folded)

    # ------------------------------------------------------------------ reads

    def _rows(self, q: Any) -> list[Any]:
        self.flush()
        try:
            with self._engine.connect() as conn:
                return list(conn.execute(q).all())
        except self._db_errors as exc:
            raise unavailable(exc, self.url) from exc

    def _fetch(self, stmt: _Prepared, **values: Any) -> list[Any]:
        """`_rows` of a statement compiled once (`_Statements`), run on a pooled connection's
        own cursor: the same rows as tuples, the same errors."""
        self.flush()
        try:
            conn = self._engine.raw_connection()
            try:
                cursor = conn.cursor()
                try:
                    return stmt.run(cursor, **values).fetchall()
                finally:
                    cursor.close()
            finally:
                conn.close()  # back to the pool, rolled back as SQLAlchemy's own would be
        except self._db_errors as exc:
            raise unavailable(exc, self.url) from exc

    def read(
        self, stream: str, from_seq: int = 0, to_seq: int | None = None
    ) -> list[RecordedEvent]:
        if to_seq is None:
            rows = self._fetch(self._sql.read_from, stream_id=stream, lo=_i32(from_seq))
        else:
            rows = self._fetch(
                self._sql.read_range, stream_id=stream, lo=_i32(from_seq), hi=_i32(to_seq)
            )
        return [_record(r) for r in rows]

    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[RecordedEvent]:
        q = (
            select(*_EVENT_COLUMNS)
            .where(EVENTS.c.position > _i64(after_position))
            .order_by(EVENTS.c.position)
            .limit(max(0, _i64(limit)))
        )
        return [_record(r) for r in self._rows(q)]

    def streams(
        self,
        after_position: int = 0,
        limit: int = 100,
        prefix: str | None = None,
        *,
        newest_first: bool = False,
        before_position: int | None = None,
    ) -> list[StreamInfo]:
        if newest_first:
            q = select(*_STREAM_COLUMNS)
            if before_position is not None:
                q = q.where(STREAMS.c.first_position < _i64(before_position))
        else:
            q = select(*_STREAM_COLUMNS).where(STREAMS.c.first_position > _i64(after_position))
        if prefix:
            escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            q = q.where(STREAMS.c.stream_id.like(escaped + "%", escape="\\"))
        order = STREAMS.c.first_position.desc() if newest_first else STREAMS.c.first_position
        q = q.order_by(order).limit(max(0, _i64(limit)))
        return [self._info(r) for r in self._rows(q)]

    def stream_info(self, stream: str) -> StreamInfo | None:
        rows = self._fetch(self._sql.info, stream_id=stream)
        return self._info(rows[0]) if rows else None

    @staticmethod
    def _info(r: Any) -> StreamInfo:
        """A row of `_STREAM_COLUMNS`."""
        return StreamInfo(*r)

    def version(self, stream: str) -> int:
        rows = self._fetch(self._sql.version, stream_id=stream)
        return -1 if not rows else int(rows[0][0])

    def close(self) -> None:
        self._closed.set()
        self.flush()
        if self._checkpointer is not None:
            self._checkpointer.close()
        with self._wlock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._flock(False)
            if self._lockfile is not None:
                self._lockfile.close()
                self._lockfile = None
        self._engine.dispose()
