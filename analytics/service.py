"""Analytics inside a serving process: a private warehouse caught up from the store on demand,
canned queries on it, user SQL in the sandbox on a snapshot of it, and the report.

Each server process keeps its own warehouse in a private temporary folder: DuckDB lets one
process at a time write a database file, and several replicas may share one store. The first
request after a start loads the whole log (about 7 s per million events here); later ones load
only what was appended since. The point of no return, a few ms per failed episode, is worked
out for at most `NO_RETURN_BUDGET` new failures per request, so a request never waits long; the
rest follow on later requests (the column says NULL until then).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from companyos.events import EventStore

from .no_return import point_of_no_return
from .queries import UnknownQuery
from .queries import run as run_canned
from .report import render_report, report_data
from .sandbox import QueryResult, jsonable, run_query, snapshot
from .warehouse import Warehouse

__all__ = ["NO_RETURN_BUDGET", "LiveAnalytics", "UnknownQuery", "sweep_stale"]

PREFIX = "companyos-analytics-"
"""Each process's private folder is ``PREFIX<pid>-<random>`` in the temporary directory."""

NO_RETURN_BUDGET = 300
"""Failed episodes whose point of no return one request may work out (about 1 s)."""


class LiveAnalytics:
    """Thread-safe: one lock serialises catch-up and every use of the warehouse connection;
    sandboxed queries run on their own read-only handle on a snapshot, outside the lock."""

    def __init__(self, store: EventStore, no_return_budget: int = NO_RETURN_BUDGET) -> None:
        self.store = store
        self.no_return_budget = no_return_budget
        self._dir: Path | None = None
        self._warehouse: Warehouse | None = None
        self._lock = threading.Lock()
        sweep_stale()

    def _fresh(self) -> Warehouse:
        """The warehouse, caught up with the store (call with the lock held)."""
        if self._warehouse is None:
            self._dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
            self._warehouse = Warehouse(self._dir / "warehouse.duckdb")
        wh = self._warehouse
        wh.catch_up(self.store)
        pending = wh.failed_without_no_return()[: self.no_return_budget]
        if pending:
            wh.set_points_of_no_return({e: point_of_no_return(self.store.read(e)) for e in pending})
        return wh

    def canned(self, name: str) -> QueryResult:
        with self._lock:
            wh = self._fresh()
            started = time.perf_counter()
            columns, rows = run_canned(wh.con, name)
            seconds = round(time.perf_counter() - started, 6)
        # Our own SQL, run on the live warehouse; its values still need making JSON-ready.
        return QueryResult(list(columns), [[jsonable(v) for v in r] for r in rows], False, seconds)

    def query(self, sql: str, *, timeout_s: float = 10.0, max_rows: int = 10_000) -> QueryResult:
        """User SQL, sandboxed (see `analytics.sandbox`): refused unless a single read-only
        statement; run on a snapshot, never on the live warehouse."""
        with self._lock:
            wh = self._fresh()
            assert self._dir is not None
            snap = snapshot(wh.con, self._dir / "snapshots")
        return run_query(snap, sql, timeout_s=timeout_s, max_rows=max_rows)

    def report_data(self) -> dict[str, Any]:
        with self._lock:
            return report_data(self._fresh().con)

    def report_html(self) -> str:
        with self._lock:
            wh = self._fresh()
            assert self._dir is not None
            out = render_report(wh.con, self._dir / "report.html")
        return out.read_text(encoding="utf-8")

    def close(self) -> None:
        with self._lock:
            if self._warehouse is not None:
                self._warehouse.close()
                self._warehouse = None
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None


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
