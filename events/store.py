"""The event store: one abstract interface, several recorders behind it.

A stream is one episode. Its events carry ``seq`` 0, 1, 2, ... with no gaps; the store also
gives every event a global ``position`` that grows in commit order, so readers can tail the
whole log. ``append`` is atomic and optimistic: it succeeds only if the stream is still at
``expected_version`` (the seq of its last event, -1 for a new stream) and raises
`ConcurrencyConflict` otherwise, on every backend.
"""

from __future__ import annotations

import abc
import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from hashlib import sha256
from typing import Any, NamedTuple

from .chain import GENESIS, canonical, event_type_json
from .snapshots import Snapshot
from .types import Event

NEW_STREAM = -1


class StoreError(Exception):
    """Base of the store's own errors."""


class ConcurrencyConflict(StoreError):
    """The stream moved on since the caller read it: nothing was written."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(
            f"stream {stream!r} is at version {actual}, not {expected}: another writer got "
            "there first; reload the episode and retry"
        )
        self.stream = stream
        self.expected = expected
        self.actual = actual


class RecordedEvent(NamedTuple):
    """An event as stored (a named tuple: immutable and cheap, one is made per event).

    ``type``, ``schema_version`` and ``data`` are the stored originals (what the hash covers);
    ``event`` is the model lifted to the current schema version."""

    stream: str
    seq: int
    position: int
    event_id: str
    type: str
    schema_version: int
    data: dict[str, Any]
    hash: str
    recorded_at: float
    event: Event


@dataclass(frozen=True, slots=True)
class StreamInfo:
    stream_id: str
    version: int
    last_hash: str
    first_position: int
    created_at: float
    updated_at: float


class Head(NamedTuple):
    """A stream's last event: its seq (the stream's version) and its hash."""

    version: int
    hash: str


class SealedEvent(NamedTuple):
    """An event with its seq and hash fixed, ready for a backend to write."""

    seq: int
    event_id: str
    type: str
    schema_version: int
    data: dict[str, Any]
    data_json: bytes
    """``data`` as canonical JSON: what SQL backends store."""
    hash: str
    event: Event

    def recorded(self, stream: str, position: int, at: float) -> RecordedEvent:
        """This event as stored: at global ``position``, recorded at ``at``."""
        return RecordedEvent(
            stream,
            self.seq,
            position,
            self.event_id,
            self.type,
            self.schema_version,
            self.data,
            self.hash,
            at,
            self.event,
        )


SETUP_TYPES = frozenset(
    {
        "TaskAssigned",
        "AppRulesSet",
        "ApprovalTypeDefined",
        "ApproverRegistered",
        "TicketCreated",
        "MetricRecorded",
        "ChaosInjected",
    }
)
"""Events that describe an instance's initial world (its rules and set-up chaos included): the
very same objects open every episode of a (cached) instance, so their canonical JSON and hashes
are worth keeping. A live `ChaosInjected` is kept too: a few per episode, harmless."""
_JSON_CACHE: dict[int, tuple[Event, dict[str, Any], bytes]] = {}
_JSON_CACHE_MAX = 16_384  # about 300 instances' opening events


def _payload_json(ev: Event) -> tuple[dict[str, Any], bytes]:
    if ev.type not in SETUP_TYPES:
        data = ev.payload()
        return data, canonical(data)
    # Keyed by identity and holding the event itself, so the id cannot be reused while cached;
    # events are frozen, so the JSON cannot go out of date.
    hit = _JSON_CACHE.get(id(ev))
    if hit is not None and hit[0] is ev:
        return hit[1], hit[2]
    data = ev.payload()
    data_json = canonical(data)
    if len(_JSON_CACHE) >= _JSON_CACHE_MAX:
        _JSON_CACHE.clear()
    _JSON_CACHE[id(ev)] = (ev, data, data_json)
    return data, data_json


_HASHES: dict[tuple[str, int, int], tuple[Event, str]] = {}
_HASHES_MAX = 16_384


def sealed(prev: str, seq: int, ev: Event) -> tuple[dict[str, Any], bytes, str]:
    """``ev``'s payload, its canonical JSON and its hash at ``seq`` after ``prev``. For an
    instance's opening events (the same objects every episode of a cached instance) the JSON
    and the hash are kept: the same predecessor, seq and event give the same hash."""
    data, data_json = _payload_json(ev)
    if ev.type not in SETUP_TYPES:
        return data, data_json, event_hash(prev, seq, ev, data_json)
    key = (prev, seq, id(ev))
    hit = _HASHES.get(key)
    if hit is not None and hit[0] is ev:
        return data, data_json, hit[1]
    h = event_hash(prev, seq, ev, data_json)
    if len(_HASHES) >= _HASHES_MAX:
        _HASHES.clear()
    _HASHES[key] = (ev, h)  # holding ``ev``: its id cannot be reused
    return data, data_json, h


Sealed = tuple[str, int, dict[str, Any], bytes, str]
"""An event sealed at its place in a stream: (type, schema version, payload, JSON, hash)."""
_RUNS: dict[tuple[str, int, int, int], tuple[tuple[Event, ...], list[Sealed]]] = {}
_RUNS_MAX = 256  # as many as the instances `domain.instances` keeps built
RUN_MIN = 8


def seal_all(prev: str, seq: int, events: Sequence[Event]) -> list[Sealed]:
    """Each of ``events`` sealed in turn after ``prev``, the first at ``seq + 1``. The run of an
    instance's opening events that follows `EpisodeStarted` is kept whole: played again after
    the same predecessor, it is the same list (compared as a tuple: identity first, and equal
    events seal alike anyway), so a warm reset seals thirty events with one look-up."""
    out: list[Sealed] = []
    n = len(events)
    for i, ev in enumerate(events):
        kind = ev.type
        if kind in SETUP_TYPES:
            if n - i >= RUN_MIN:
                out += _sealed_run(prev, seq + i, tuple(events[i:]))
                break
            data, data_json, prev = sealed(prev, seq + i + 1, ev)
        else:  # a step's own events: no cache to consult
            data = ev.payload()
            data_json = canonical(data)
            prev = event_hash(prev, seq + i + 1, ev, data_json)
        out.append((kind, ev.schema_version, data, data_json, prev))
    return out


def _sealed_run(prev: str, seq: int, run: tuple[Event, ...]) -> list[Sealed]:
    key = (prev, seq, id(run[0]), len(run))
    hit = _RUNS.get(key)
    if hit is not None and hit[0] == run:
        return hit[1]
    out: list[Sealed] = []
    for ev in run:  # the run is kept whole: its events' hashes need not be kept one by one
        seq += 1
        data, data_json = _payload_json(ev)
        prev = event_hash(prev, seq, ev, data_json)
        out.append((ev.type, ev.schema_version, data, data_json, prev))
    if len(_RUNS) >= _RUNS_MAX:
        _RUNS.clear()
    _RUNS[key] = (run, out)  # holding the run: the ids in the key cannot be reused
    return out


def event_hash(prev: str, seq: int, ev: Event, data_json: bytes) -> str:
    """`chain.chain_hash` of `chain.event_body_from_json`, in one formatting (the hot path):
    what follows the seq depends only on the event's type and schema version, so it is
    formatted once for each."""
    kind, version = ev.type, ev.schema_version
    kept = _TAILS.get(kind)
    if kept is None or kept[0] != version:
        kept = _TAILS[kind] = (version, b',"type":%s,"v":%d}' % (event_type_json(kind), version))
    body = b'%s{"data":%s,"seq":%d%s' % (prev.encode("ascii"), data_json, seq, kept[1])
    return sha256(body).hexdigest()


_TAILS: dict[str, tuple[int, bytes]] = {}


def seal(
    stream: str, events: Sequence[Event], expected_version: int, prev_hash: str
) -> list[SealedEvent]:
    """Number and hash ``events`` as the continuation of a stream at ``expected_version``."""
    out: list[SealedEvent] = []
    seq = expected_version
    prev = prev_hash
    for ev, (kind, version, data, data_json, h) in zip(
        events, seal_all(prev, seq, events), strict=True
    ):
        seq += 1
        out.append(SealedEvent(seq, f"{stream}:{seq}", kind, version, data, data_json, h, ev))
    return out


class EventStore(abc.ABC):
    """What every backend offers. Subclasses: `InMemoryEventStore`, `SQLEventStore`."""

    @abc.abstractmethod
    def append(
        self, stream: str, events: Sequence[Event], expected_version: int
    ) -> list[RecordedEvent]:
        """Append atomically if the stream is at ``expected_version``; else raise
        `ConcurrencyConflict` and write nothing."""

    def extend(self, stream: str, events: Sequence[Event], expected_version: int) -> Head:
        """`append`, handing back only the stream's new head, not the records: for a writer
        that keeps its own state (an episode stepping) and would throw them away. Atomic and
        optimistic as `append`; ``events`` must not be empty. Backends override it to skip
        building the records."""
        if not events:
            raise ValueError("extend needs at least one event")
        last = self.append(stream, events, expected_version)[-1]
        return Head(last.seq, last.hash)

    @abc.abstractmethod
    def read(
        self, stream: str, from_seq: int = 0, to_seq: int | None = None
    ) -> list[RecordedEvent]:
        """Events of one stream with ``from_seq <= seq <= to_seq`` (inclusive), in seq order."""

    @abc.abstractmethod
    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[RecordedEvent]:
        """Up to ``limit`` events of all streams with ``position > after_position``."""

    @abc.abstractmethod
    def streams(
        self,
        after_position: int = 0,
        limit: int = 100,
        prefix: str | None = None,
        *,
        newest_first: bool = False,
        before_position: int | None = None,
    ) -> list[StreamInfo]:
        """Streams in creation order, those created after ``after_position`` (a stream's
        ``first_position``), optionally only ids starting with ``prefix``. With
        ``newest_first``, in reverse creation order, those created before ``before_position``
        (None: the newest): a listing that people read starts with what they just did."""

    @abc.abstractmethod
    def version(self, stream: str) -> int:
        """The seq of the stream's last event, or -1 if the stream does not exist."""

    def stream_info(self, stream: str) -> StreamInfo | None:
        found = [s for s in self.streams(prefix=stream, limit=1_000_000) if s.stream_id == stream]
        return found[0] if found else None

    # Snapshots (`events.snapshots`): a cache; a backend without them keeps none.

    def save_snapshot(self, snapshot: Snapshot) -> None:  # noqa: B027 - optional
        """Keep ``snapshot`` as the stream's latest, unless a later one is kept already."""

    def load_snapshot(self, stream: str) -> Snapshot | None:
        """The stream's latest snapshot, if any (check it before use: it is a cache)."""
        return None

    @contextlib.contextmanager
    def deferred_commit(self) -> Iterator[None]:
        """Appends made inside are made durable together when the block ends, not one by one:
        for a caller that acknowledges them together (a batch of steps answered in one
        message). Each append is still all-or-nothing and its conflict check exact. If the
        store fails (`StoreError`, from an append inside or from the final commit), none of
        the block's appends may have been kept: the caller must then load again what it
        derived from them. The default commits each append as it comes (a backend that has
        nothing to defer, or must not)."""
        yield

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the default has none."""

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def now() -> float:
    return time.time()


__all__ = [
    "GENESIS",
    "NEW_STREAM",
    "ConcurrencyConflict",
    "EventStore",
    "Head",
    "RecordedEvent",
    "SealedEvent",
    "StoreError",
    "StreamInfo",
    "now",
    "seal",
]
