"""Snapshots: a cache of a stream's fold at one version, never its truth (invariant 10).

A snapshot holds whatever state the caller folded (the episode's world and score) with the
version and the hash of the event it was folded up to, and a tag naming the code that folded it.
A reader uses it only if the stream's event at that version still has that hash and the tag is
its own; then it folds the events after it. Anything else (no snapshot, another tag, a rewritten
stream) falls back to folding the whole stream. Deleting every snapshot changes nothing but
speed.

The SQL stores keep the state pickled. Unpickling is restricted to CompanyOS's own immutable
value types (named tuples and pydantic models of `companyos.*`) and plain containers, so a
snapshot row can describe state but never run code.
"""

from __future__ import annotations

import io
import pickle
from typing import Any, NamedTuple

from pydantic import BaseModel


class Snapshot(NamedTuple):
    stream: str
    version: int
    """The seq of the last event folded into ``state``."""
    hash: str
    """That event's hash: the snapshot is used only while the stream still has it."""
    tag: str
    """Who folded it (a format and code version): another tag is ignored."""
    state: Any


class UnsafeSnapshot(pickle.UnpicklingError):
    """A snapshot names something that is not a CompanyOS value type."""


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("companyos."):
            found = super().find_class(module, name)
            if isinstance(found, type) and (
                (issubclass(found, tuple) and hasattr(found, "_fields"))
                or issubclass(found, BaseModel)
            ):
                return found
        raise UnsafeSnapshot(f"a snapshot may not name {module}.{name}")


def encode(state: Any) -> bytes:
    return pickle.dumps(state, protocol=5)


def decode(data: bytes) -> Any:
    return _Restricted(io.BytesIO(data)).load()
