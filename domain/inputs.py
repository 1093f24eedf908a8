"""What no caller's text or number may carry, checked in one place for every way in (HTTP
bodies and query strings, `/ws` frames, MCP, in-process `step` and `reset`).

JSON itself lets a client send things no part of this system can keep or answer with:

- a lone surrogate (``"\\ud800"``): valid JSON, but not text; it cannot be encoded as UTF-8, so
  it cannot be stored, hashed, put in a message or sent back;
- a NUL character (``"\\u0000"``): PostgreSQL's text and JSON columns refuse it, and C libraries
  (DuckDB's SQL, file names) end the string there;
- ``NaN``, ``Infinity`` (which Python's JSON reader accepts) and numbers too large for a float
  (``1e400`` reads as infinity): no JSON writer can send them back, so an error message that
  quoted them could not be sent at all.

`hostile` finds the first such value in any JSON-shaped value and says where it is and what it
is, in words that quote nothing of it. `printable` renders any value safely for a message.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

MAX_INT = 2**63 - 1
"""Integers beyond a 64-bit column: no field of this API takes one."""
MAX_WALK = 100_000
"""Values one check looks at (a body is limited in size long before this)."""


class Hostile(NamedTuple):
    where: tuple[str | int, ...]
    """The path to the value: keys and indexes from the top."""
    problem: str
    """What is wrong, quoting nothing of the value."""

    def describe(self, top: str = "") -> str:
        path = top + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.where)
        path = path.lstrip(".") or "the value"
        return f"{path}: {self.problem}"


def text_problem(s: str) -> str | None:
    """Why the string ``s`` cannot be taken as text, or None."""
    if "\x00" in s:
        return "holds a NUL character (\\u0000), which no text field accepts"
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate (\\ud800-\\udfff), which is not text: send UTF-8"
    return None


def number_problem(x: float | int) -> str | None:
    """Why the number ``x`` cannot be taken, or None (booleans are not numbers here: fine)."""
    if isinstance(x, float) and not math.isfinite(x):
        return "is not a finite number (NaN, Infinity and values beyond 1.8e308 are refused)"
    if isinstance(x, int) and not isinstance(x, bool) and not -MAX_INT - 1 <= x <= MAX_INT:
        return "is out of range (integers fit in 64 bits)"
    return None


def hostile(value: Any, skip: Iterable[tuple[str | int, ...]] = ()) -> Hostile | None:
    """The first value inside ``value`` (keys included) that is no text or no number this API
    can keep, or None. Subtrees whose path is in ``skip`` are not looked at (their owner
    judges them: a tool call's params are the environment's to refuse, with a penalty)."""
    if type(value) is dict and all(
        type(k) is str and _plain(k) and _plain(v) for k, v in value.items()
    ):
        return None  # the usual case (reset options, flat params): nothing to walk
    return walk(value, skip)


def walk(value: Any, skip: Iterable[tuple[str | int, ...]] = ()) -> Hostile | None:
    """`hostile`, the long way: every value looked at."""
    skipped = frozenset(skip)
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    seen = 0
    while stack:
        where, v = stack.pop()
        seen += 1
        if seen > MAX_WALK:
            return Hostile(where, f"holds more than {MAX_WALK:,} values")
        if where in skipped:
            continue
        if isinstance(v, str):
            problem = text_problem(v)
        elif isinstance(v, int | float):
            problem = number_problem(v)
        elif isinstance(v, dict):
            problem = None
            for k, item in v.items():
                if isinstance(k, str):
                    key_problem = text_problem(k)
                    if key_problem is not None:
                        return Hostile(where, f"a key {key_problem}")
                stack.append(((*where, printable_key(k)), item))
        elif isinstance(v, list | tuple):
            problem = None
            stack.extend(((*where, i), item) for i, item in enumerate(v))
        else:
            problem = None
        if problem is not None:
            return Hostile(where, problem)
    return None


def _plain(v: Any) -> bool:
    """``v`` is a value `hostile` passes without looking further: None, a bool, an ASCII text
    without NUL, an integer in range or a finite float (anything else takes the long way)."""
    t = type(v)
    if t is str:
        return v.isascii() and "\x00" not in v
    if t is int:
        return -MAX_INT - 1 <= v <= MAX_INT
    if t is float:
        return math.isfinite(v)
    return v is None or t is bool


def printable_key(key: Any) -> str:
    return key if isinstance(key, str) and text_problem(key) is None else printable(key, 40)


def printable(value: Any, limit: int = 80) -> str:
    """``value`` as text any JSON writer can send and any store can keep: lone surrogates and
    NUL escaped (``\\ud800``, ``\\x00``), non-finite numbers named, long text clipped."""
    if isinstance(value, str):
        s = value.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
    elif isinstance(value, float) and not math.isfinite(value):
        s = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    else:
        try:
            s = repr(value)
        except (RecursionError, ValueError):  # nested too deep; an int of too many digits
            s = f"a {type(value).__name__}"
        s = printable(s, limit) if text_problem(s) is not None else s
    return s if len(s) <= limit else s[:limit] + "…"
