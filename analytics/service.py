"""Analytics inside a serving process: a private warehouse kept caught up with the store by a
background thread, canned queries on it, user SQL in the sandbox on a snapshot of it, and the
report. No request ever runs a catch-up.

Each server process keeps its own warehouse in a private temporary folder: DuckDB lets one
process at a time write a database file, and several replicas may share one store. A thread
loads what the log gained (the whole log after a start: 18 s for a million events in the
README's last run), page by page, each failure with its point of no return; then works out the
point of no return of at most `NO_RETURN_BUDGET` failures that have none (none, unless a caller
loaded rows without one), then sleeps until a request pokes it or `POLL_S` passes. A
request pokes it and waits at most its ``wait_s`` (`DEFAULT_WAIT_S`) for the warehouse to reach
the log's end as it was when the request came; then it answers from what is loaded, and says
how fresh that is: `Freshness` (``as_of_event``, the last position loaded; ``lag_events``, how
many events the log had beyond it; ``catching_up``).

Readers never wait for the writer: DuckDB is multi-version, so a query on a cursor of its own
sees the last committed page while the next one is written. The snapshot that user SQL runs on
is the one thing that needs the file still: it is taken between two pages (the catch-up holds
``_page_lock`` around each page's transaction only).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import duckdb

from companyos.events import EventStore

from .no_return import point_of_no_return
from .queries import UnknownQuery
from .queries import run as run_canned
from .report import render_report, report_data
from .sandbox import QueryResult, jsonable, run_query, snapshot
from .source import head_position
from .warehouse import PAGE_SIZE, Warehouse

__all__ = [
    "DEFAULT_WAIT_S",
    "NO_RETURN_BUDGET",
    "Freshness",
    "LiveAnalytics",
    "UnknownQuery",
    "sweep_stale",
]

PREFIX = "companyos-analytics-"
"""Each process's private folder is ``PREFIX<pid>-<random>`` in the temporary directory."""

NO_RETURN_BUDGET = 300
"""Failed episodes whose point of no return one round of the catch-up works out (about 1 s)."""
DEFAULT_WAIT_S = 1.0
"""How long a request waits, at most, for the warehouse to reach the log's end."""
POLL_S = 5.0
"""The catch-up looks at the log at least this often, even when no request pokes it."""


@dataclass(frozen=True, slots=True)
class Freshness:
    as_of_event: int
    """The last global position the answer reflects (0: nothing loaded yet)."""
    lag_events: int | None
    """Events the log held beyond it when the request came (None: the store cannot say)."""
    catching_up: bool
    """The answer is behind the log (``lag_events`` > 0; when the store cannot say, the
    background catch-up was running)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class LiveAnalytics:
    """Thread-safe. The background thread owns the warehouse's connection; every request works
    on a cursor of its own (its own DuckDB connection to the same database)."""

    def __init__(
        self,
        store: EventStore,
        no_return_budget: int = NO_RETURN_BUDGET,
        poll_s: float = POLL_S,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.store = store
        self.page_size = page_size
        self.no_return_budget = no_return_budget
        self.poll_s = poll_s
        self._dir: Path | None = None
        self._warehouse: Warehouse | None = None
        self._start_lock = threading.Lock()
        self._page_lock = threading.Lock()
        self._poke = threading.Event()
        self._progress = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._busy = False
        self._error: BaseException | None = None
        sweep_stale()

    # ------------------------------------------------------------------ the background thread

    def _started(self) -> Warehouse:
        with self._start_lock:
            if self._warehouse is None:
                self._dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
                self._warehouse = Warehouse(
                    self._dir / "warehouse.duckdb", page_size=self.page_size
                )
                self._thread = threading.Thread(
                    target=self._run, name="analytics-catch-up", daemon=True
                )
                self._thread.start()
            return self._warehouse

    def _run(self) -> None:
        wh = self._warehouse
        assert wh is not None
        while not self._stop.is_set():
            self._poke.clear()
            try:
                self._round(wh)
                self._error = None
            except Exception as exc:  # kept and reported (`error`); the next round retries
                self._error = exc
            finally:
                with self._progress:
                    self._busy = False
                    self._progress.notify_all()
            self._poke.wait(self.poll_s)

    def _round(self, wh: Warehouse) -> None:
        def moved(_loaded: int, _position: int) -> None:
            with self._progress:
                self._progress.notify_all()

        with self._progress:
            self._busy = True
        wh.catch_up(self.store, moved, page_lock=self._page_lock)
        pending = wh.failed_without_no_return()[: self.no_return_budget]
        if pending:
            found = {e: point_of_no_return(self.store.read(e)) for e in pending}
            with self._page_lock:
                wh.set_points_of_no_return(found)

    def _ready(self, wait_s: float) -> tuple[Warehouse, int | None]:
        """The warehouse, after poking the catch-up and waiting at most ``wait_s`` for it to
        reach the log's end; and that end."""
        wh = self._started()
        head = head_position(self.store)
        self._poke.set()
        deadline = time.monotonic() + max(0.0, wait_s)
        with self._progress:
            while head is None or wh.position < head:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._progress.wait(min(left, 0.1))
            if head is None:
                # No head to compare with: wait for one round to end instead.
                while self._busy and time.monotonic() < deadline:
                    self._progress.wait(min(deadline - time.monotonic(), 0.1))
        return wh, head

    def _freshness(self, as_of: int, head: int | None) -> Freshness:
        lag = None if head is None else max(0, head - as_of)
        return Freshness(as_of, lag, bool(lag) if lag is not None else self._busy)

    # ------------------------------------------------------------------ requests

    def freshness(self) -> Freshness:
        wh = self._started()
        return self._freshness(wh.position, head_position(self.store))

    def canned(self, name: str, *, wait_s: float = DEFAULT_WAIT_S) -> tuple[QueryResult, Freshness]:
        wh, head = self._ready(wait_s)
        cur = wh.con.cursor()
        try:
            # One transaction: the checkpoint read and the query see the same committed state.
            cur.execute("BEGIN TRANSACTION")
            as_of = _position(cur)
            started = time.perf_counter()
            columns, rows = run_canned(cur, name)
            seconds = round(time.perf_counter() - started, 6)
            cur.execute("COMMIT")
        finally:
            cur.close()
        # Our own SQL, run on the live warehouse; its values still need making JSON-ready.
        result = QueryResult(
            list(columns), [[jsonable(v) for v in r] for r in rows], False, seconds
        )
        return result, self._freshness(as_of, head)

    def query(
        self,
        sql: str,
        *,
        timeout_s: float = 10.0,
        max_rows: int = 10_000,
        wait_s: float = DEFAULT_WAIT_S,
    ) -> tuple[QueryResult, Freshness]:
        """User SQL, sandboxed (see `analytics.sandbox`): refused unless a single read-only
        statement; run on a snapshot taken between two pages, never on the live warehouse."""
        wh, head = self._ready(wait_s)
        assert self._dir is not None
        with self._page_lock:
            snap = snapshot(wh.con, self._dir / "snapshots")
            as_of = wh.position
        return run_query(snap, sql, timeout_s=timeout_s, max_rows=max_rows), self._freshness(
            as_of, head
        )

    def report_data(self, *, wait_s: float = DEFAULT_WAIT_S) -> dict[str, Any]:
        wh, head = self._ready(wait_s)
        data = report_data(wh.con)
        data["freshness"] = self._freshness(data["checkpoint"] or 0, head).to_dict()
        return data

    def report_html(self, *, wait_s: float = DEFAULT_WAIT_S) -> str:
        wh, head = self._ready(wait_s)
        assert self._dir is not None
        out = self._dir / f"report-{threading.get_ident()}.html"
        # Served at /analytics/report: the viewer is ../viewer/ (also behind a path prefix).
        render_report(
            wh.con,
            out,
            viewer_url="../viewer/",
            freshness=lambda as_of: self._freshness(as_of, head),
        )
        try:
            return out.read_text(encoding="utf-8")
        finally:
            out.unlink(missing_ok=True)

    @property
    def error(self) -> BaseException | None:
        """What the last round of the catch-up failed with (None: it did not)."""
        return self._error

    def close(self) -> None:
        self._stop.set()
        self._poke.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._start_lock:
            if self._warehouse is not None:
                self._warehouse.close()
                self._warehouse = None
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None


def _position(cur: duckdb.DuckDBPyConnection) -> int:
    [(position,)] = cur.execute("SELECT max(position) FROM checkpoint").fetchall()
    return int(position or 0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def sweep_stale(tmp: str | os.PathLike[str] | None = None) -> list[Path]:
    """Delete the analytics folders (a full copy of the log each) that processes killed
    without a shutdown left behind: those whose owner process no longer runs. Returns what
    was deleted. A folder of a live process, or of another user, is left alone."""
    removed: list[Path] = []
    root = Path(tmp if tmp is not None else tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for folder in root.glob(f"{PREFIX}*"):
            found = re.match(rf"{re.escape(PREFIX)}(\d+)-", folder.name)
            if not found or not folder.is_dir() or folder.stat().st_uid != os.getuid():
                continue
            pid = int(found.group(1))
            if pid == os.getpid() or _alive(pid):
                continue
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
