"""Checkpoints of SQLite's write-ahead log, taken off the writer's path.

SQLite copies the WAL back into the database file (a checkpoint) from inside the COMMIT that
takes the log past ``wal_autocheckpoint`` pages: every few hundred steps one step's commit
copies a thousand pages and syncs two files, and the server's event loop waits for it. Here a
thread of the store's process checkpoints instead (``PRAGMA wal_checkpoint(PASSIVE)`` on a
connection of its own: it copies what no reader still needs and never blocks the writer), and
the writer's own automatic checkpoint is kept only as a backstop, at a larger log, for a
checkpointer that cannot keep up. SQLite's driver lets go of the GIL while it works, so the copy
runs beside the steps on another core.

Durability is SQLite's either way: a checkpoint only moves committed pages from one file to the
other, and SQLite decides what may be copied.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

_log = logging.getLogger("companyos.store")

BACKSTOP_PAGES = 10_000
"""The writer checkpoints by itself past this many WAL pages (SQLite's default is 1,000)."""


class WalCheckpointer:
    """Checkpoints one SQLite file's WAL from a daemon thread once enough has been written.

    The writer reports an estimate of the pages each append dirties (`wrote`); every ``interval``
    seconds the thread checkpoints if the estimate since its last checkpoint reached ``pages``,
    or if anything at all was written ``idle_after`` seconds ago or more (a quiet server's log
    is folded back too). The estimate is an int the writer only adds to and the thread only
    reads, so neither ever waits for the other.
    """

    def __init__(
        self,
        connect: Callable[[], Any],
        *,
        pages: int = 1_000,
        interval: float = 0.05,
        idle_after: float = 2.0,
    ) -> None:
        self._connect = connect
        self.pages, self.interval, self.idle_after = pages, interval, idle_after
        self.written = 0
        """Pages written since the store opened (an estimate, see `wrote`)."""
        self.runs = 0
        self.failures = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def wrote(self, pages: int) -> None:
        """Called by the writer for each append, with about how many pages it dirties (cheap:
        an addition, and the thread's start on the first call). The thread's PASSIVE checkpoint
        copies only what is committed, so counting an append before its commit is harmless."""
        self.written += pages
        if self._thread is None:
            self._start()

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="companyos-wal-checkpoint", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        conn: Any = None
        done, last = 0, time.monotonic()
        try:
            while not self._stop.wait(self.interval):
                written = self.written
                if written == done:
                    continue
                now = time.monotonic()
                if written - done < self.pages and now - last < self.idle_after:
                    continue
                try:
                    if conn is None:
                        conn = self._connect()
                    cur = conn.cursor()
                    try:
                        cur.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    finally:
                        cur.close()
                except Exception as exc:  # the writer's backstop still checkpoints
                    self.failures += 1
                    _log.warning("WAL checkpoint failed (will retry): %s", exc)
                    conn = _close(conn)
                    continue
                done, last = written, now
                self.runs += 1
        finally:
            _close(conn)

    def checkpoint_now(self) -> None:
        """From now on, let the thread checkpoint at its next wake-up whatever was written
        (tests: no waiting for a thousand pages or two idle seconds)."""
        self.idle_after = 0.0

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


def _close(conn: Any) -> None:
    if conn is not None:
        with contextlib.suppress(Exception):
            conn.close()
    return None
