"""Canonical serialisation and the hash chain that makes every stream tamper-evident.

The hash of an event covers its seq, type, schema version and payload, chained over the
previous event's hash. It does not cover the stream id, global position or wall-clock time, so
two runs with the same seed and actions give the same chain even in different stores.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, Protocol

import orjson

GENESIS = "0" * 64


def canonical(obj: Any) -> bytes:
    """Deterministic JSON: sorted keys, no whitespace, shortest round-trip floats."""
    # A copy, not orjson's own result: orjson hands back its working buffer shrunk in place,
    # and while such a buffer is kept (the stores keep every event's JSON) the next dumps
    # costs 2-3 us more, at every size (bench/canonical_json.py). The copy is made in
    # pymalloc's pools and the buffer is freed at once.
    return bytes(memoryview(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)))


def event_body(seq: int, event_type: str, version: int, payload: dict[str, Any]) -> bytes:
    """The bytes an event's hash covers: canonical JSON of its seq, type, version and data."""
    return canonical({"seq": seq, "type": event_type, "v": version, "data": payload})


_TYPE_JSON: dict[str, bytes] = {}


def event_type_json(event_type: str) -> bytes:
    """The JSON string of an event type, kept (there are a few dozen types)."""
    type_json = _TYPE_JSON.get(event_type)
    if type_json is None:
        type_json = _TYPE_JSON.setdefault(event_type, orjson.dumps(event_type))
    return type_json


def event_body_from_json(seq: int, event_type: str, version: int, data_json: bytes) -> bytes:
    """`event_body` when the data is already canonical JSON (the keys are in sorted order)."""
    type_json = event_type_json(event_type)
    return b'{"data":%s,"seq":%d,"type":%s,"v":%d}' % (data_json, seq, type_json, version)


def chain_hash(prev_hash: str, body: bytes) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + body).hexdigest()


class Hashed(Protocol):
    seq: int
    type: str
    schema_version: int
    data: dict[str, Any]
    hash: str


def first_broken_link(records: Iterable[Hashed], prev_hash: str = GENESIS) -> int | None:
    """Seq of the first record whose hash does not follow from its content and predecessor."""
    expected_seq = None
    for r in records:
        if expected_seq is not None and r.seq != expected_seq:
            return r.seq
        prev_hash_calc = chain_hash(prev_hash, event_body(r.seq, r.type, r.schema_version, r.data))
        if prev_hash_calc != r.hash:
            return r.seq
        prev_hash = r.hash
        expected_seq = r.seq + 1
    return None
