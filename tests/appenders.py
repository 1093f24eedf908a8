"""Multi-process drivers for the store's concurrency proofs. Each function runs in its own
process (multiprocessing, spawn), opens its own `SQLEventStore` on the shared URL and reports
what it did through a queue:

- `race`: in lock-step rounds (a barrier), every writer appends to every stream at the same
  expected version; exactly one may win each (stream, version);
- `churn`: free-running writers appending to random streams at the version they last read;
- `tail`: a reader following the whole log with `read_all(after_position)`, as a projection
  or the analytics catch-up does, recording every position it sees.

`HeldStore` and `unlocked` are the instruments of the deterministic proof that a tailing reader
can skip an event when appends are not serialised (`test_concurrency.py`).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, select

from companyos.events import ConcurrencyConflict, RecordedEvent
from companyos.events.sql import SQLEventStore, _Prepared
from companyos.events.types import Event, TicketViewed


def tagged(tag: str, n: int = 2) -> list[Event]:
    """``n`` events that name their writer and attempt: what was written can be told apart."""
    return [TicketViewed(ticket_id=f"{tag}/{i}") for i in range(n)]


def tag_of(record: RecordedEvent) -> str:
    return record.event.ticket_id.rsplit("/", 1)[0]  # type: ignore[union-attr]


class JitteryStore(SQLEventStore):
    """Holds each append's transaction open a little after its inserts, before the commit:
    widens the window in which commits could land out of position order."""

    def __init__(self, url: str, jitter: float, seed: int) -> None:
        super().__init__(url, create_tables=False)
        self.jitter = jitter
        self.rng = random.Random(seed)

    def _append(
        self, cur: Any, stream: str, events: Sequence[Event], expected: int, records: bool = True
    ) -> Any:
        out = super()._append(cur, stream, events, expected, records)
        if self.jitter:
            time.sleep(self.rng.uniform(0, self.jitter))
        return out


def race(url: str, worker: int, streams: int, rounds: int, barrier: Any, out: Any) -> None:
    store = SQLEventStore(url, create_tables=False)
    results: list[tuple[str, int, int]] = []
    order = list(range(streams))
    random.Random(worker).shuffle(order)
    try:
        for r in range(rounds):
            barrier.wait()
            for s in order:
                try:
                    store.append(f"race-{s}", tagged(f"w{worker}-r{r}-s{s}"), 2 * r - 1)
                    results.append(("win", s, r))
                except ConcurrencyConflict:
                    results.append(("conflict", s, r))
    finally:
        store.close()
        out.put(("race", worker, results))


def churn(url: str, worker: int, streams: int, appends: int, jitter: float, out: Any) -> None:
    store = JitteryStore(url, jitter, seed=worker)
    rng = random.Random(worker)
    wins: list[str] = []
    conflicts: list[str] = []
    try:
        for i in range(appends):
            stream = f"churn-{rng.randrange(streams)}"
            tag = f"w{worker}-{i}"
            try:
                store.append(stream, tagged(tag, rng.randint(1, 4)), store.version(stream))
                wins.append(tag)
            except ConcurrencyConflict:
                conflicts.append(tag)
    finally:
        store.close()
        out.put(("churn", worker, (wins, conflicts)))


def tail(url: str, stop: Any, out: Any) -> None:
    """Follow the log until ``stop`` is set and one more read finds nothing new."""
    store = SQLEventStore(url, create_tables=False)
    seen: list[int] = []
    after, reads = 0, 0
    try:
        while True:
            finished = stop.is_set()  # read before the page: the last page sees every commit
            page = store.read_all(after, 250)
            reads += 1
            seen += [r.position for r in page]
            if page:
                after = page[-1].position
            elif finished:
                break
    finally:
        store.close()
        out.put(("tail", reads, seen))


def open_fresh(url: str, start: Any, out: Any) -> None:
    """Open (and so create) the store at the same moment as the other processes."""
    start.wait()
    try:
        SQLEventStore(url).close()
        out.put("ok")
    except Exception as exc:  # reported to the test, which shows it
        out.put(repr(exc))


def open_many_fresh(urls: list[str], barrier: Any, out: Any) -> None:
    """Open each of ``urls`` (new files) in turn, in step with other processes doing the same:
    all wait at ``barrier`` before each open so that they reach it together."""
    failures = []
    for url in urls:
        barrier.wait()
        try:
            SQLEventStore(url).close()
        except Exception as exc:  # reported to the test, which shows it
            failures.append(f"{url}: {exc!r} (cause {exc.__cause__!r})")
    out.put(failures)


def unlocked(store: SQLEventStore) -> SQLEventStore:
    """The store without its append lock (PostgreSQL): what the tailing proof must catch."""
    store._sql.lock = _Prepared(select(bindparam("k")), store.engine.dialect)
    return store


class HeldStore(SQLEventStore):
    """Stops each append after its inserts, inside the open transaction, until released."""

    def __init__(self, url: str) -> None:
        super().__init__(url, create_tables=False)
        self.inserted = threading.Event()
        self.release = threading.Event()

    def _append(
        self, cur: Any, stream: str, events: Sequence[Event], expected: int, records: bool = True
    ) -> Any:
        out = super()._append(cur, stream, events, expected, records)
        self.inserted.set()
        if not self.release.wait(30):
            raise TimeoutError("never released")
        return out
