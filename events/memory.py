"""In-memory recorder: for tests, training loops and throw-away runs.

It keeps what the SQL recorder keeps, the canonical JSON of each event, not the event objects:
rows are tuples of strings, numbers and bytes, which the cyclic garbage collector never has to
walk (a log of live pydantic objects slowed every step of a long run by a third), and reads
parse and upcast exactly as the SQL recorder does, so both backends behave alike.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence

import orjson

from .chain import canonical
from .snapshots import Snapshot
from .store import (
    GENESIS,
    RUN_MIN,
    SETUP_TYPES,
    ConcurrencyConflict,
    EventStore,
    Head,
    RecordedEvent,
    StreamInfo,
    event_hash,
    now,
    seal_all,
    sealed,
)
from .types import Event
from .upcasting import parse_event

# (stream, seq, position, type, schema_version, data_json, hash, recorded_at)
Row = tuple[str, int, int, str, int, bytes, str, float]


def _record(row: Row) -> RecordedEvent:
    stream, seq, position, kind, version, data_json, h, at = row
    data = orjson.loads(data_json)
    return RecordedEvent(
        stream,
        seq,
        position,
        f"{stream}:{seq}",
        kind,
        version,
        data,
        h,
        at,
        parse_event(kind, version, data),
    )


class InMemoryEventStore(EventStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._log: list[Row] = []
        self._streams: dict[str, list[Row]] = {}
        self._created: dict[str, tuple[float, int]] = {}
        self._order: list[str] = []
        self._snapshots: dict[str, Snapshot] = {}

    def append(
        self, stream: str, events: Sequence[Event], expected_version: int
    ) -> list[RecordedEvent]:
        recorded: list[RecordedEvent] = []
        self._write(stream, events, expected_version, recorded)
        return recorded

    def extend(self, stream: str, events: Sequence[Event], expected_version: int) -> Head:
        if not events:
            raise ValueError("extend needs at least one event")
        row = self._write(stream, events, expected_version, None)
        assert row is not None
        return Head(row[1], row[6])

    def _write(
        self,
        stream: str,
        events: Sequence[Event],
        expected_version: int,
        recorded: list[RecordedEvent] | None,
    ) -> Row | None:
        """Append ``events`` (into ``recorded`` too, as records, unless None); the last row."""
        with self._lock:
            current = self._streams.get(stream)
            actual = current[-1][1] if current else -1
            if actual != expected_version:
                raise ConcurrencyConflict(stream, expected_version, actual)
            if not events:
                return None
            prev = current[-1][6] if current else GENESIS
            at = now()
            position = len(self._log)
            seq = expected_version
            rows: list[Row] = []
            if recorded is None and len(events) < RUN_MIN:
                # A step's append (`extend`): no records to build and too few events for a
                # run of an instance's opening ones, so each is sealed (as `seal_all` seals it)
                # and made a row in one pass.
                for ev in events:
                    seq += 1
                    position += 1
                    kind = ev.type
                    if kind in SETUP_TYPES:  # a live ChaosInjected: its JSON and hash kept
                        _, data_json, prev = sealed(prev, seq, ev)
                    else:
                        data_json = canonical(ev.payload())
                        prev = event_hash(prev, seq, ev, data_json)
                    rows.append(
                        (stream, seq, position, kind, ev.schema_version, data_json, prev, at)
                    )
                return self._keep(stream, current, rows, at)
            # `store.seal`, inlined: the rows (and the records) are built in the same pass.
            for ev, (kind, version, data, data_json, h) in zip(
                events, seal_all(prev, seq, events), strict=True
            ):
                seq += 1
                position += 1
                rows.append((stream, seq, position, kind, version, data_json, h, at))
                if recorded is not None:
                    recorded.append(
                        RecordedEvent(
                            stream, seq, position, f"{stream}:{seq}", kind, version, data, h, at, ev
                        )
                    )
            return self._keep(stream, current, rows, at)

    def _keep(self, stream: str, current: list[Row] | None, rows: list[Row], at: float) -> Row:
        """Add an append's rows to the log and their stream (under the lock); the last row."""
        self._log.extend(rows)
        if current is None:
            self._streams[stream] = rows
            self._order.append(stream)
            self._created[stream] = (at, rows[0][2])
        else:
            current.extend(rows)
        return rows[-1]

    def _info(self, stream: str) -> StreamInfo:
        rows = self._streams[stream]
        created, first = self._created[stream]
        last = rows[-1]
        return StreamInfo(stream, last[1], last[6], first, created, last[7])

    def read(
        self, stream: str, from_seq: int = 0, to_seq: int | None = None
    ) -> list[RecordedEvent]:
        with self._lock:
            rows = self._streams.get(stream, [])
            hi = len(rows) if to_seq is None else max(0, min(len(rows), to_seq + 1))
            chosen = rows[max(0, from_seq) : hi]
        return [_record(r) for r in chosen]

    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[RecordedEvent]:
        with self._lock:
            start = max(0, after_position)
            chosen = self._log[start : start + max(0, limit)]
        return [_record(r) for r in chosen]

    def streams(
        self,
        after_position: int = 0,
        limit: int = 100,
        prefix: str | None = None,
        *,
        newest_first: bool = False,
        before_position: int | None = None,
    ) -> list[StreamInfo]:
        with self._lock:
            infos = [self._info(s) for s in self._order]
        firsts = [i.first_position for i in infos]
        if newest_first:
            bound = before_position
            end = len(infos) if bound is None else bisect.bisect_left(firsts, bound)
            chosen = infos[:end][::-1]
        else:
            chosen = infos[bisect.bisect_right(firsts, after_position) :]
        out: list[StreamInfo] = []
        for info in chosen:
            if prefix is None or info.stream_id.startswith(prefix):
                out.append(info)
                if len(out) >= limit:
                    break
        return out

    def stream_info(self, stream: str) -> StreamInfo | None:
        with self._lock:
            return self._info(stream) if stream in self._streams else None

    def version(self, stream: str) -> int:
        with self._lock:
            rows = self._streams.get(stream)
            return rows[-1][1] if rows else -1

    def save_snapshot(self, snapshot: Snapshot) -> None:
        # Kept as the very objects: the state is immutable, so there is nothing to copy.
        with self._lock:
            kept = self._snapshots.get(snapshot.stream)
            if kept is None or kept.version < snapshot.version:
                self._snapshots[snapshot.stream] = snapshot

    def load_snapshot(self, stream: str) -> Snapshot | None:
        with self._lock:
            return self._snapshots.get(stream)
