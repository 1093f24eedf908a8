"""A received frame's JSON value, handed from `sockets.FrameGuard` to OpenEnv's handler.

The guard reads every `/ws` and `/mcp` frame to screen it, and OpenEnv's loop then reads the
same text again with the json module (1.7 us of a step's frame, about 70 us for a
batch's). The guard leaves the value it read here, keyed by the very text object it passes on;
`compat` gives OpenEnv's module a `json` whose ``loads`` takes that value when handed the same
object, and reads anything else as the json module does. The value is the json module's own
(`inputs.fast_json` reads a text only where orjson's reading is the json module's), and the
guard keeps no reference to it, so the handler owns it as it would own its own reading.

Both ends run on the event loop of the one process that received the frame; a value nobody
takes (a route that reads its frames another way) is dropped when the table fills.
"""

from __future__ import annotations

import json as _json
from typing import Any

KEPT = 64
"""Values left at most (each socket's handler takes its frame before the next is received)."""

_frames: dict[int, tuple[str, Any]] = {}


def put(text: str, value: Any) -> None:
    """Leave ``value``, the JSON reading of ``text``, for whoever reads this very ``text``."""
    if len(_frames) >= KEPT:
        _frames.clear()
    _frames[id(text)] = (text, value)  # holding the text: its id cannot be reused meanwhile


def take(text: Any) -> Any:
    """The value left for this very ``text`` object (given once), else `json.loads(text)`."""
    hit = _frames.pop(id(text), None)
    if hit is not None and hit[0] is text:
        return hit[1]
    return _json.loads(text)


class HandedOverJSON:
    """The json module, but for ``loads`` of one argument, which is `take`: what OpenEnv's
    server module sees as ``json``."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_json, name)

    @staticmethod
    def loads(s: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return _json.loads(s, *args, **kwargs)
        return take(s)
