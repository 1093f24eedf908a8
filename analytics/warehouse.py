"""The DuckDB warehouse: the event log as tables, caught up incrementally by global position.

``catch_up`` reads the log in pages after the checkpoint. Each page is one DuckDB transaction:
its events are appended to ``events``, every episode stream the page touched is re-derived from
its whole stream (its ``steps``, ``episodes``, ``failures``, ``approvals`` and ``chaos`` rows,
`EPISODE_TABLES`, deleted and inserted again), and the checkpoint moves to the page's last
position. A crash leaves the warehouse at the end of the last committed page, consistent, and
the next catch-up continues from there. The next page is read while this one is derived.

Episodes are derived by `derive` (the projections ``replay`` and ``projections.mistakes``,
and `lifecycle`), each distinct stream once: streams with the same hash chain (a deterministic
agent's trials of one instance) share rows, and streams with the same set-up share its fold
(`setups`). Worker processes (`default_workers`: one per CPU but this process's;
``workers``, `COMPANYOS_ANALYTICS_WORKERS`) derive the page's distinct streams beside this
process, which appends the events, reads the next page and then derives what no worker has
finished (`DerivePool`; they rest while the load gets no more than one core). Each fast path
gives the rows of deriving each stream on its own (`tests/test_warehouse_parallel.py`).

How rows reach DuckDB, measured on 200,000 events of the benchmark's log: an Arrow table
read by ``INSERT ... SELECT`` 1.6 us per event, pandas (``con.append(df)`` or ``INSERT ...
SELECT``) 2.2 us, DuckDB 2's native appender (``con.appender``) 2.7 us, ``executemany`` 480
us. So Arrow when pyarrow is installed (a dev extra, not a dependency), the appender
otherwise; both stage the stored columns as they are and convert in SQL (epoch seconds to
TIMESTAMP, text to JSON): building
Python datetimes costs more than the whole move.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass
from importlib import resources
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import duckdb

try:  # optional (a dev extra): the fastest way to hand DuckDB a page, the appender otherwise
    import pyarrow
except ImportError:  # pragma: no cover - exercised by a test that hides it
    pyarrow = None

from companyos.events import EventStore
from companyos.projections.mistakes import LABELS

from .derive import (
    EPISODE_TABLES,
    Derived,
    _derive_in_worker,
    _no_gc,
    _ready,
    _relabel,
    caches,
    derive,
)
from .parsing import RawEvent
from .source import read_prefix, read_raw

MEMORY_LIMIT = "300MB"
"""DuckDB's buffer pool for a file-backed warehouse (pages beyond it stay on disk)."""
PAGE_SIZE = 50_000
"""Events per page (one transaction each): large enough that a full load is a few dozen
transactions, small enough that a page's parsed events stay well under a hundred MB."""

TABLES = (
    "events",
    "steps",
    "episodes",
    "failures",
    "mistakes",
    "approvals",
    "chaos",
    "taxonomy",
    "checkpoint",
)
"""Every table of the schema (``sql/schema.sql``)."""

Progress = Callable[[int, int], None]
"""Called after each page with (events loaded so far by this catch-up, position reached)."""

_STAGE_COLUMNS = (
    ("episode_id", "VARCHAR"),
    ("seq", "INTEGER"),
    ("position", "BIGINT"),
    ("type", "VARCHAR"),
    ("schema_version", "INTEGER"),
    ("data", "VARCHAR"),
    ("hash", "VARCHAR"),
    ("recorded_at", "DOUBLE"),
)
"""Events as stored (a `RawEvent`'s fields in order), before the conversion to ``events``."""
_STAGE = "CREATE TEMP TABLE IF NOT EXISTS stage_events ({})".format(
    ", ".join(f"{name} {kind}" for name, kind in _STAGE_COLUMNS)
)
# round_even: the microsecond Python's datetime.fromtimestamp picks (episodes' times use it).
# No ORDER BY: a page comes in position order and DuckDB keeps insertion order (a sort here
# doubled the cost of the move).
_MOVE = """
INSERT INTO events
SELECT position, episode_id, seq, type, schema_version, CAST(data AS JSON), hash,
       make_timestamp(CAST(round_even(recorded_at * 1000000, 0) AS BIGINT))
FROM {source}"""


@dataclass(frozen=True, slots=True)
class CatchUpResult:
    events: int
    """Events loaded by this catch-up."""
    episodes: int
    """Episodes (re-)derived: new ones and those that got new events."""
    position: int
    """The global position the warehouse has reached."""
    seconds: float


WorkerShare = tuple[float, list[Derived]]
"""What a worker sends back for a chunk: the CPU seconds it took, and the rows."""


class Deriver:
    """Stored rows of whole episode streams to warehouse rows, each distinct stream once.

    Streams with the same content get the same rows but for their ids, times and positions:
    the k trials of a deterministic agent on one instance (the oracle, the naive agent, a model
    at temperature 0) store the very same events. The content's identity is the hash chain:
    the last event's hash covers every seq, type, version and payload of the stream (a stream
    whose hashes do not match its content is ``verify``'s business, not the warehouse's)."""

    def __init__(self, max_memo: int = 2048) -> None:
        self.parser, self.setups = caches()
        self.max_memo = max_memo
        self._memo: dict[tuple[str, int], Derived] = {}
        self.derived = 0
        self.reused = 0
        self.stolen = 0
        """Chunks queued for the workers that this process derived itself (none had started)."""
        self.backed_up = 0
        """Chunks a worker had started that this process derived too, and finished first."""

    def __call__(self, rows: Sequence[RawEvent]) -> Derived:
        key = (rows[-1].hash, len(rows))
        seen = self._memo.get(key)
        if seen is not None:
            self.reused += 1
            return _relabel(seen, rows)
        return self._derive(key, rows)

    def many(
        self, streams: Sequence[Sequence[RawEvent]], pool: DerivePool | None
    ) -> Callable[[], list[Derived]]:
        """Start deriving ``streams``; the function returned waits and gives their rows, in
        order. Each distinct content is derived once (the memo, then the batch itself); with a
        pool and enough of them, in its worker processes while the caller goes on."""
        keys = [(rows[-1].hash, len(rows)) for rows in streams]
        todo: dict[tuple[str, int], Sequence[RawEvent]] = {}
        for key, rows in zip(keys, streams, strict=True):
            if key not in self._memo and key not in todo:
                todo[key] = rows
        if pool is None or pool.broken or len(todo) < pool.min_streams or not pool.wanted():
            fresh = {key: self._derive(key, rows) for key, rows in todo.items()}
            return lambda: self._assemble(streams, keys, fresh)
        # The page is cut into small chunks, all queued for the workers, which take them from
        # the front. This process, once it has appended the page's events and read the next
        # page, takes back from the end every chunk no worker has started and derives it
        # itself, then also derives the few a worker is still on (the first to finish gives
        # the rows, the same either way): the shares balance whatever the cores are doing,
        # and a worker slowed down by other processes never holds this one up.
        wall, cpu = time.perf_counter(), time.process_time()
        items = list(todo.items())
        chunks = pool.chunks(len(items))
        futures = pool.submit([[rows for _, rows in items[a:b]] for a, b in chunks])

        def finish() -> list[Derived]:
            used = 0.0  # the workers' CPU seconds for this page
            done: list[list[Derived] | None] = [None] * len(chunks)
            taken = len(chunks)
            while taken > 0 and futures[taken - 1].cancel():
                taken -= 1
                done[taken] = self._chunk(items[slice(*chunks[taken])])
            self.stolen += len(chunks) - taken
            for i in reversed(range(taken)):
                if not futures[i].done():
                    done[i] = self._chunk(items[slice(*chunks[i])], futures[i])
                    self.backed_up += done[i] is not None
            fresh: dict[tuple[str, int], Derived] = {}
            for i, (a, b) in enumerate(chunks):
                rows = done[i]
                if rows is None:
                    try:
                        seconds, rows = futures[i].result()
                        used += seconds
                    except BrokenProcessPool:
                        # A worker died (killed, or it could not start: see `DerivePool`):
                        # this chunk and every later page are derived here.
                        pool.broken = True
                        rows = self._chunk(items[a:b])
                for (key, _), d in zip(items[a:b], rows, strict=True):
                    self.derived += 1
                    self._remember(key, d)
                    fresh[key] = d
            # The share of the machine this page got: this process's CPU seconds (its DuckDB
            # threads included) and the workers', over the wall seconds.
            used += time.process_time() - cpu
            pool.measured(used / max(time.perf_counter() - wall, 1e-6))
            return self._assemble(streams, keys, fresh)

        return finish

    def _chunk(
        self,
        items: Sequence[tuple[tuple[str, int], Sequence[RawEvent]]],
        worker: Future[WorkerShare] | None = None,
    ) -> list[Derived] | None:
        """The rows of ``items``' streams, derived here (counted and remembered by the caller);
        None as soon as ``worker`` is done with them first."""
        out = []
        for _, rows in items:
            if worker is not None and worker.done():
                return None
            out.append(derive(rows, self.parser.events(rows), self.setups))
        return out

    def _derive(self, key: tuple[str, int], rows: Sequence[RawEvent]) -> Derived:
        self.derived += 1
        out = derive(rows, self.parser.events(rows), self.setups)
        self._remember(key, out)
        return out

    def _remember(self, key: tuple[str, int], d: Derived) -> None:
        if self.max_memo > 0:  # 0: derive every stream (what the benchmark compares with)
            if len(self._memo) >= self.max_memo:
                self._memo.clear()
            self._memo[key] = d

    def _assemble(
        self,
        streams: Sequence[Sequence[RawEvent]],
        keys: list[tuple[str, int]],
        fresh: dict[tuple[str, int], Derived],
    ) -> list[Derived]:
        out = []
        for key, rows in zip(keys, streams, strict=True):
            d = fresh.pop(key, None)  # the first stream with this content: its own rows
            if d is None:
                seen = self._memo.get(key)
                if seen is None:  # no memo (or it was just cleared): derive again
                    d = self._derive(key, rows)
                else:
                    self.reused += 1
                    d = _relabel(seen, rows)
            out.append(d)
        return out


def _cpus() -> int:
    """The CPUs this process may run on (its affinity, where the system says)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def default_workers() -> int:
    """Worker processes for deriving, besides this one: ``COMPANYOS_ANALYTICS_WORKERS`` if set
    (0: derive in this process only), else one per CPU but this process's (none on one CPU).
    Deriving is CPU-bound Python: with a second core free, a load takes about a third less wall
    time (measured on 150,000-200,000 events while one other session was busy: 1.3-1.4x). A
    worker costs CPU (each stream's events go to it pickled, its rows come back, it keeps caches
    of its own): 10-20% more in all. Where other work keeps every core busy it gains nothing,
    so `DerivePool` stops using its workers while a load gets no more than a core
    (`bench/analytics.py` measures a load with and without them). None by default in a
    program whose main script a worker would run again (`spawn_is_safe`)."""
    value = os.environ.get("COMPANYOS_ANALYTICS_WORKERS")
    if value is not None:
        try:
            return max(0, int(value))
        except ValueError:
            raise ValueError(
                f"COMPANYOS_ANALYTICS_WORKERS={value!r}: expected a whole number (0: none)"
            ) from None
    if not spawn_is_safe():
        return 0
    return max(0, _cpus() - 1)


def spawn_is_safe() -> bool:
    """Whether a spawned worker can start without running this program's own code again.

    A spawned process imports the main script it was started from (as ``__mp_main__``): a
    script run by its path whose top-level code is not under ``if __name__ == "__main__"``
    would do its work a second time in every worker (write its files, start its server). So
    workers are the default only where that cannot happen: ``python -m`` of a package's
    ``__main__`` (which spawn never imports), an interactive session or ``python -c``, and a
    script that tests ``__name__`` (every console script pip writes, ``companyos`` included,
    guards its entry point so). Any program may still ask for workers (``workers=``, or
    ``COMPANYOS_ANALYTICS_WORKERS``)."""
    main = sys.modules.get("__main__")
    if main is None:
        return True
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:  # python -m NAME: spawn imports NAME again unless it is a __main__
        return name == "__main__" or name.endswith(".__main__")
    path = getattr(main, "__file__", None)
    if path is None:
        return True  # interactive, -c, stdin: nothing to import again
    try:
        source = Path(path).read_text(errors="replace")
    except OSError:
        return False
    return _GUARD.search(source) is not None


_GUARD = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.MULTILINE)
"""A main script's guard of its entry point, at top level."""


class DerivePool:
    """Worker processes deriving episode streams, started on first use (the first page with
    ``min_streams`` distinct streams: a catch-up of a few episodes is not worth the round trip,
    nor a process).

    Spawned, not forked: the parent holds DuckDB's threads (and a server's), which a fork would
    copy mid-flight; so, as with any spawned pool, a script that loads a warehouse must keep its
    top level under ``if __name__ == "__main__":`` (a spawned worker imports the script). A
    page is cut into ``per_process`` chunks per process (the loading one included), queued in
    order; `Deriver.many` takes back from the end those no worker has started and derives
    those a worker is still on. While pages get no more than ``min_share`` cores, the workers
    rest (`measured`)."""

    def __init__(
        self,
        workers: int,
        min_streams: int = 100,
        per_process: int = 32,
        min_chunk: int = 2,
        min_share: float = 1.3,
    ) -> None:
        self.workers = workers
        self.min_streams = min_streams
        self.per_process = per_process
        self.min_chunk = min_chunk
        self.min_share = min_share
        """The CPU (in cores) a page derived with the workers must have got for the next page to
        use them too."""
        self.broken = False
        """A worker died: the pool is no longer used (pages are derived in this process)."""
        self.resting = 0
        """Pages still to derive in this process before the workers are tried again."""
        self._rest = 1
        self._executor: ProcessPoolExecutor | None = None

    def wanted(self) -> bool:
        """Whether this page goes to the workers (else, resting, it is derived here)."""
        if self.resting > 0:
            self.resting -= 1
            return False
        return True

    def measured(self, share: float) -> None:
        """A page derived with the workers got ``share`` cores (CPU seconds of this process and
        the workers over wall seconds). Workers pay only when the load gets more than one core:
        where other work keeps the cores busy (the kernel shares them between sessions, not
        processes) a worker costs CPU (pickling, caches of its own) and gains nothing. Below
        ``min_share``, the next 1, 2, 4 ... 16 pages (doubling each time) are derived here."""
        if share >= self.min_share:
            self._rest = 1
            return
        self.resting = self._rest
        self._rest = min(2 * self._rest, 16)

    def chunks(self, n: int) -> list[tuple[int, int]]:
        """``n`` streams cut into (start, end) chunks: several per process, so that whoever
        is idle takes the next one and the shares end together (a chunk is a round trip)."""
        size = max(self.min_chunk, -(-n // (self.per_process * (self.workers + 1))))
        return [(a, min(a + size, n)) for a in range(0, n, size)]

    def submit(self, chunks: list[list[Sequence[RawEvent]]]) -> list[Future[WorkerShare]]:
        executor = self.start()
        return [
            executor.submit(_derive_in_worker, [list(map(tuple, s)) for s in chunk])
            for chunk in chunks
        ]

    def start(self) -> ProcessPoolExecutor:
        """The executor, its workers started (and importing) in the background."""
        if self._executor is None:
            self._executor = ProcessPoolExecutor(self.workers, mp_context=get_context("spawn"))
            for _ in range(self.workers):
                self._executor.submit(_ready)
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None


class _Streams:
    """Which episode streams a catch-up has to derive, whole, as stored rows.

    Streams that did not end are kept from one page to the next (so an episode spanning pages
    is not read back from the store), but only while the pages keep touching them: memory stays
    bounded by one page. A stream continued from before this catch-up is completed from the
    store if it is an episode (its first event, loaded back then, is an ``EpisodeStarted``)."""

    def __init__(self, warehouse: Warehouse, store: EventStore) -> None:
        self.warehouse = warehouse
        self.store = store
        self.open: dict[str, list[RawEvent]] = {}
        self.skipped: set[str] = set()

    def collect(self, page: Sequence[RawEvent]) -> tuple[dict[str, list[RawEvent]], list[str]]:
        """The page's episode streams, whole, and those of them that have rows already."""
        by_stream: dict[str, list[RawEvent]] = {}
        for row in page:
            if row.stream not in self.skipped:
                by_stream.setdefault(row.stream, []).append(row)
        known = self._known_episodes(
            [s for s, rows in by_stream.items() if rows[0].seq > 0 and s not in self.open]
        )
        out: dict[str, list[RawEvent]] = {}
        existing: list[str] = []
        for stream, rows in by_stream.items():
            whole = self._whole(stream, rows, known)
            if whole is None:
                self.skipped.add(stream)
                continue
            if rows[0].seq > 0:
                existing.append(stream)
            out[stream] = whole
        self.open = {s: rows for s, rows in out.items() if rows[-1].type != "EpisodeEnded"}
        return out, existing

    def _whole(self, stream: str, rows: list[RawEvent], known: set[str]) -> list[RawEvent] | None:
        if stream in self.open:
            return self.open[stream] + rows
        if rows[0].seq == 0:
            if rows[0].type != "EpisodeStarted":
                return None  # not an episode (a session's orphan calls): events only
            return rows
        if stream not in known:
            return None
        return read_prefix(self.store, stream, rows[0].seq) + rows

    def _known_episodes(self, streams: list[str]) -> set[str]:
        """Which of ``streams`` (continued from an earlier catch-up) are episodes: their first
        event, loaded then, says so."""
        if not streams:
            return set()
        found = self.warehouse.con.execute(
            "SELECT episode_id FROM events WHERE seq = 0 AND type = 'EpisodeStarted' "
            "AND list_contains($ids, episode_id)",
            {"ids": streams},
        ).fetchall()
        return {r[0] for r in found}


def _arrow(page: Sequence[RawEvent]) -> Any:
    """A page as an Arrow table of the staging columns."""
    return _arrow_rows(page, [(name, _arrow_type(kind)) for name, kind in _STAGE_COLUMNS])


_ARROW_MIN_ROWS = 256
"""Below this the appender is as quick as building an Arrow table."""


def _arrow_type(duckdb_type: str) -> Any:
    assert pyarrow is not None
    if duckdb_type.endswith("[]"):
        return pyarrow.list_(_arrow_type(duckdb_type[:-2]))
    simple = {
        "VARCHAR": pyarrow.string(),
        "JSON": pyarrow.string(),  # DuckDB casts the text to JSON on insert
        "INTEGER": pyarrow.int32(),
        "BIGINT": pyarrow.int64(),
        "DOUBLE": pyarrow.float64(),
        "BOOLEAN": pyarrow.bool_(),
        "TIMESTAMP": pyarrow.timestamp("us"),
    }
    return simple[duckdb_type]


def _arrow_rows(rows: Sequence[tuple[Any, ...]], types: list[tuple[str, Any]]) -> Any:
    assert pyarrow is not None
    columns = zip(*rows, strict=True)
    arrays = [pyarrow.array(c, t) for c, (_, t) in zip(columns, types, strict=True)]
    return pyarrow.table(arrays, names=[name for name, _ in types])


def _last_append_start(rows: Sequence[RawEvent]) -> int:
    """Where the trailing append of ``rows`` begins. An append is one stream's events written
    together (one position run, one ``recorded_at``): a page that ends inside one would show
    a state the store never held (a reset without its task, a call without its outcome)."""
    last = rows[-1]
    i = len(rows) - 1
    while (
        i > 0 and rows[i - 1].stream == last.stream and rows[i - 1].recorded_at == last.recorded_at
    ):
        i -= 1
    return i


class Warehouse:
    """A DuckDB database (a file, or ``":memory:"``) holding the log's analytics tables.

    One connection, used from one thread at a time (DuckDB connections are not shared across
    threads; open a read-only handle on a snapshot for concurrent readers)."""

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        page_size: int = PAGE_SIZE,
        workers: int | None = None,
    ) -> None:
        """``workers``: processes deriving episodes during a load (None: `default_workers`;
        0: derive in this process)."""
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.con: duckdb.DuckDBPyConnection = duckdb.connect(self.path)
        self.memory_limit: str | None = None
        """DuckDB's memory limit set on the connection (None: DuckDB's default)."""
        if self.path != ":memory:":
            # A file-backed warehouse keeps only its working set in memory: DuckDB's buffer
            # pool would otherwise grow with the database (80% of RAM by default).
            self.memory_limit = MEMORY_LIMIT
            self.con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        self.page_size = page_size
        self.deriver = Deriver()
        n = default_workers() if workers is None else workers
        self.pool: DerivePool | None = DerivePool(n) if n > 0 else None
        self._arrow_schemas: dict[str, list[tuple[str, Any]]] = {}
        self._create()
        self._position = self._checkpoint()

    # ------------------------------------------------------------------ schema

    def _create(self) -> None:
        schema = resources.files("companyos.analytics.sql").joinpath("schema.sql").read_text()
        self.con.execute(schema)
        self.con.execute(_STAGE)
        if self.con.execute("SELECT count(*) FROM checkpoint").fetchall() == [(0,)]:
            self.con.execute("INSERT INTO checkpoint VALUES (0)")

    def _checkpoint(self) -> int:
        # fetchall, not fetchone: DuckDB 2 holds a connection busy until a result is drained.
        [(position,)] = self.con.execute("SELECT max(position) FROM checkpoint").fetchall()
        return int(position) if position is not None else 0

    @property
    def position(self) -> int:
        """The highest global position loaded (0: nothing yet)."""
        return self._position

    # ------------------------------------------------------------------ loading

    def catch_up(
        self,
        store: EventStore,
        progress: Progress | None = None,
        page_lock: AbstractContextManager[Any] | None = None,
    ) -> CatchUpResult:
        """Load every event after `position`, page by page, re-deriving the episodes touched.
        ``page_lock`` is held around each page's transaction, and only then (a server lets its
        snapshots in between pages, see `analytics.service`)."""
        started = time.perf_counter()
        streams = _Streams(self, store)
        loaded = 0
        derived: set[str] = set()
        with _no_gc():
            page, at_end = self._next_page(store, self._position)
            while page:
                # The next page is read while the workers derive this one.
                ahead: list[tuple[list[RawEvent], bool]] = []

                def read_ahead(
                    after: int = page[-1].position, end: bool = at_end, into: list[Any] = ahead
                ) -> None:
                    into.append(([], True) if end else self._next_page(store, after))

                with page_lock if page_lock is not None else nullcontext():
                    derived |= self._apply(page, streams, read_ahead)
                loaded += len(page)
                if progress is not None:
                    progress(loaded, self._position)
                page, at_end = ahead[0] if ahead else self._next_page(store, self._position)
        return CatchUpResult(loaded, len(derived), self._position, time.perf_counter() - started)

    def rebuild(self, store: EventStore, progress: Progress | None = None) -> CatchUpResult:
        """Drop every table and load the whole log again. The load works out each failure's
        point of no return again; one stored for an episode whose stream has not changed (set
        by `set_points_of_no_return`, perhaps by other means) is kept as it was."""
        kept = self.con.execute(
            "SELECT f.episode_id, e.last_position, f.point_of_no_return "
            "FROM failures f JOIN episodes e USING (episode_id) WHERE f.no_return_checked"
        ).fetchall()
        for table in TABLES:
            self.con.execute(f"DROP TABLE IF EXISTS {table}")
        self._create()
        self._arrow_schemas.clear()
        self._position = 0
        result = self.catch_up(store, progress)
        if kept:
            current = dict(
                self.con.execute("SELECT episode_id, last_position FROM episodes").fetchall()
            )
            self.set_points_of_no_return(
                {eid: k for eid, last, k in kept if current.get(eid) == last}
            )
        return result

    def _next_page(self, store: EventStore, after: int) -> tuple[list[RawEvent], bool]:
        """The next page, ending where an append ends, and whether it reaches the log's end.

        A short read is the log's end, and appends are atomic, so it ends on a boundary. A full
        read may stop inside an append: the page stops before it and the next one starts
        there; an append larger than a page is read whole, whatever its size."""
        limit = self.page_size
        while True:
            rows = read_raw(store, after, limit)
            if len(rows) < limit:
                return rows, True
            cut = _last_append_start(rows)
            if cut > 0:
                return rows[:cut], False
            limit *= 2

    def _apply(
        self,
        page: Sequence[RawEvent],
        streams: _Streams,
        meanwhile: Callable[[], None] | None = None,
    ) -> set[str]:
        """One page in one transaction. Episodes are derived (by the workers, if any) while
        the events are appended and ``meanwhile`` runs."""
        con = self.con
        try:
            episodes, existing = streams.collect(page)
            finish = self.deriver.many(list(episodes.values()), self.pool)
            con.begin()
            self._append_events(page)
            if meanwhile is not None:
                meanwhile()
            rows = finish()
            self._replace(rows, existing)
            self._refresh_taxonomy()
            con.execute("UPDATE checkpoint SET position = $p", {"p": page[-1].position})
            con.commit()
        except BaseException:
            with suppress(duckdb.TransactionException):  # raised before begin(): none open
                con.rollback()
            streams.open.clear()  # the buffers may hold this page
            raise
        self._position = page[-1].position
        return set(episodes)

    def _append_events(self, page: Sequence[RawEvent]) -> None:
        # Both ways stage the stored columns as they are and let one INSERT ... SELECT convert
        # them (epoch seconds to TIMESTAMP, text to JSON): converting in Python costs more.
        if pyarrow is not None:
            self.con.register("page_events", _arrow(page))
            try:
                self.con.execute(_MOVE.format(source="page_events"))
            finally:
                self.con.unregister("page_events")
            return
        with self.con.appender("stage_events") as app:
            app.append_rows(page)
        self.con.execute(_MOVE.format(source="stage_events"))
        self.con.execute("DELETE FROM stage_events")

    def _replace(self, rows: list[Derived], existing: list[str]) -> None:
        if existing:
            for table in EPISODE_TABLES:
                self.con.execute(
                    f"DELETE FROM {table} WHERE list_contains($ids, episode_id)", {"ids": existing}
                )
        self._insert("steps", [step for d in rows for step in d.steps])
        self._insert("episodes", [d.episode for d in rows])
        self._insert("failures", [d.failure for d in rows if d.failure is not None])
        self._insert("mistakes", [m for d in rows for m in d.mistakes])
        self._insert("approvals", [a for d in rows for a in d.approvals])
        self._insert("chaos", [c for d in rows for c in d.chaos])

    def _insert(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        """Rows in the table's column order, by Arrow when there are many, else the appender."""
        if not rows:
            return
        if pyarrow is None or len(rows) < _ARROW_MIN_ROWS:
            with self.con.appender(table) as app:
                app.append_rows(rows)
            return
        self.con.register("new_rows", _arrow_rows(rows, self._arrow_types(table)))
        try:
            self.con.execute(f"INSERT INTO {table} SELECT * FROM new_rows")
        finally:
            self.con.unregister("new_rows")

    def _arrow_types(self, table: str) -> list[tuple[str, Any]]:
        """The table's columns as Arrow (name, type) pairs, read from DuckDB once."""
        found = self._arrow_schemas.get(table)
        if found is None:
            described = self.con.execute(f"DESCRIBE {table}").fetchall()
            found = [(name, _arrow_type(kind)) for name, kind, *_ in described]
            self._arrow_schemas[table] = found
        return found

    def _refresh_taxonomy(self) -> None:
        self.con.execute("DELETE FROM taxonomy")
        self._insert("taxonomy", sorted(LABELS.items()))

    # ------------------------------------------------------------------ points of no return

    def set_points_of_no_return(self, values: Mapping[str, int | None]) -> int:
        """Store computed points of no return (None: computed, there is none); returns how
        many failure rows were updated (episodes not in ``failures`` are ignored)."""
        if not values:
            return 0
        con = self.con
        con.begin()
        try:
            con.execute("CREATE TEMP TABLE IF NOT EXISTS stage_ponr (episode_id VARCHAR, k INT)")
            con.execute("DELETE FROM stage_ponr")
            with con.appender("stage_ponr") as app:
                app.append_rows(list(values.items()))
            [(updated,)] = con.execute(
                "UPDATE failures f SET point_of_no_return = s.k, no_return_checked = true "
                "FROM stage_ponr s WHERE f.episode_id = s.episode_id"
            ).fetchall()
            con.commit()
        except BaseException:
            con.rollback()
            raise
        return int(updated)

    def failed_without_no_return(self) -> list[str]:
        """Failed episodes whose point of no return has not been computed yet."""
        rows = self.con.execute(
            "SELECT episode_id FROM failures WHERE NOT no_return_checked ORDER BY episode_id"
        ).fetchall()
        return [r[0] for r in rows]

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        self.con.close()
        if self.pool is not None:
            self.pool.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
