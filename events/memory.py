"""In-memory recorder: the fastest backend, for tests, training loops and throw-away runs."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence

from .store import (
    GENESIS,
    ConcurrencyConflict,
    EventStore,
    RecordedEvent,
    StreamInfo,
    now,
    seal,
)
from .types import Event


class InMemoryEventStore(EventStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._log: list[RecordedEvent] = []
        self._streams: dict[str, list[RecordedEvent]] = {}
        self._created: dict[str, tuple[float, int]] = {}
        self._order: list[str] = []

    def append(
        self, stream: str, events: Sequence[Event], expected_version: int
    ) -> list[RecordedEvent]:
        with self._lock:
            current = self._streams.get(stream)
            actual = current[-1].seq if current else -1
            if actual != expected_version:
                raise ConcurrencyConflict(stream, expected_version, actual)
            if not events:
                return []
            prev_hash = current[-1].hash if current else GENESIS
            at = now()
            base = len(self._log)
            recorded = [
                RecordedEvent(
                    stream,
                    s.seq,
                    base + i,
                    s.event_id,
                    s.type,
                    s.schema_version,
                    s.data,
                    s.hash,
                    at,
                    s.event,
                )
                for i, s in enumerate(seal(stream, events, expected_version, prev_hash), 1)
            ]
            self._log.extend(recorded)
            if current is None:
                self._streams[stream] = recorded
                self._order.append(stream)
                self._created[stream] = (at, recorded[0].position)
            else:
                current.extend(recorded)
            return recorded

    def _info(self, stream: str) -> StreamInfo:
        events = self._streams[stream]
        created, first = self._created[stream]
        last = events[-1]
        return StreamInfo(stream, last.seq, last.hash, first, created, last.recorded_at)

    def read(
        self, stream: str, from_seq: int = 0, to_seq: int | None = None
    ) -> list[RecordedEvent]:
        with self._lock:
            events = self._streams.get(stream, [])
            hi = len(events) if to_seq is None else max(0, min(len(events), to_seq + 1))
            return events[max(0, from_seq) : hi]

    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[RecordedEvent]:
        with self._lock:
            start = max(0, after_position)
            return self._log[start : start + max(0, limit)]

    def streams(
        self, after_position: int = 0, limit: int = 100, prefix: str | None = None
    ) -> list[StreamInfo]:
        with self._lock:
            infos = [self._info(s) for s in self._order]
        firsts = [i.first_position for i in infos]
        start = bisect.bisect_right(firsts, after_position)
        out: list[StreamInfo] = []
        for info in infos[start:]:
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
            events = self._streams.get(stream)
            return events[-1].seq if events else -1
