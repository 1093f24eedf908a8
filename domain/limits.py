"""Limits on what an agent may send. Checked before anything is stored: an oversize or
malformed value is refused with a message and never written to the log."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .inputs import printable, text_problem

INT_RANGE = 2**53  # beyond this JSON numbers stop being exact in most readers


@dataclass(frozen=True, slots=True)
class Limits:
    max_string: int = 4096
    """Characters in any one string value."""
    max_params_chars: int = 16384
    """Approximate serialised size of one call's params."""
    max_depth: int = 6
    max_items: int = 256
    """Values in one call's params, counted over all nested containers."""
    max_name: int = 64
    """Characters of an app or method name kept in the log."""


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class Problem:
    code: str
    message: str


class _Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        self.problem = Problem(code, message)


def clean_params(params: Any, limits: Limits = DEFAULT_LIMITS) -> tuple[Any, Problem | None]:
    """A deep, JSON-shaped copy of ``params`` (tuples become lists), or the first problem."""
    if type(params) is dict and len(params) <= 8:
        # Fast path for the usual call: a few short strings, bools and small ints.
        for k, v in params.items():
            t = type(v)
            if (
                type(k) is not str
                or len(k) > limits.max_name
                or not _plain(k)
                or not (
                    (t is str and len(v) <= 256 and len(v) <= limits.max_string and _plain(v))
                    or t is bool
                    or v is None
                    or (t is int and -INT_RANGE <= v <= INT_RANGE)
                )
            ):
                break
        else:
            return dict(params), None
    budget = [limits.max_items, limits.max_params_chars]

    def walk(v: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise _Refused("too_large", f"params hold more than {limits.max_items} values")
        if v is None or isinstance(v, bool):
            budget[1] -= 5
            return v
        if isinstance(v, int):
            if not -INT_RANGE <= v <= INT_RANGE:
                raise _Refused("invalid_number", f"integer {v} is out of range (|n| <= 2**53)")
            budget[1] -= 20
            return v
        if isinstance(v, float):
            if not math.isfinite(v):
                raise _Refused("invalid_number", "numbers must be finite (no NaN or infinity)")
            budget[1] -= 24
            return v
        if isinstance(v, str):
            problem = text_problem(v)
            if problem is not None:
                raise _Refused("invalid_text", f"a string value {problem}")
            if len(v) > limits.max_string:
                raise _Refused(
                    "too_large",
                    f"a string of {len(v)} characters exceeds the limit of {limits.max_string}",
                )
            budget[1] -= len(v) + 2
            if budget[1] < 0:
                raise _Refused("too_large", f"params exceed {limits.max_params_chars} characters")
            return v
        if depth >= limits.max_depth:
            raise _Refused("too_deep", f"params nest deeper than {limits.max_depth} levels")
        if isinstance(v, dict):
            out = {}
            for k, item in v.items():
                if not isinstance(k, str):
                    raise _Refused("invalid_params", "object keys must be strings")
                if len(k) > limits.max_name:
                    raise _Refused("too_large", f"a key of {len(k)} characters is too long")
                key_problem = text_problem(k)
                if key_problem is not None:
                    raise _Refused("invalid_text", f"a key {key_problem}")
                budget[1] -= len(k) + 3
                out[k] = walk(item, depth + 1)
            return out
        if isinstance(v, list | tuple):
            return [walk(item, depth + 1) for item in v]
        raise _Refused("invalid_params", f"{type(v).__name__} is not a JSON value")

    try:
        cleaned = walk(params, 0)
    except _Refused as refused:
        return None, refused.problem
    except RecursionError:
        return None, Problem("too_deep", "params nest too deeply")
    if budget[1] < 0:
        return None, Problem("too_large", f"params exceed {limits.max_params_chars} characters")
    return cleaned, None


def _plain(s: str) -> bool:
    """Text the fast path may take as it is (the slow path explains anything else)."""
    return "\x00" not in s and (s.isascii() or text_problem(s) is None)


def clip_name(name: Any, limits: Limits = DEFAULT_LIMITS) -> str:
    """A name as the log keeps it and messages quote it: clipped, and never anything a store
    or a JSON writer refuses (a lone surrogate or NUL is escaped, see `inputs.printable`)."""
    if isinstance(name, str) and text_problem(name) is None:
        s = name
    else:
        s = printable(name, 10 * limits.max_name)
    return s if len(s) <= limits.max_name else s[: limits.max_name] + "…"
