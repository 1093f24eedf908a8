"""The boundary of the server for text and numbers (`domain.inputs` says what is refused and
why): every HTTP request's path, query string and JSON body, and every `/ws` and `/mcp`
WebSocket frame, is checked before any handler, validator or store sees it.

A value no part of the system can keep or send back (a lone surrogate, a NUL, NaN, an infinity,
a number beyond a float or a 64-bit integer) gets a 422 (an error frame on a socket) that says
where it is and what is wrong, quoting nothing of it. Without this each layer met such values
its own way: pydantic's 422 echoed the value and could not be written as JSON (a 500), stores
raised driver errors (a 500, or a 503 that read as an outage), messages quoting them could not
be encoded.

One subtree is let through: a tool call's own arguments (``params`` of a `/step` action or of a
batch item, ``arguments`` of a call to the standard MCP server at `/mcp-server/`). Bad
arguments are the agent's mistake, judged by the environment with the same checks
(`domain.limits.clean_params`) and recorded as an invalid action with a message and a penalty,
as over every other way in.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

import orjson

from companyos.domain.inputs import (
    MAX_WALK,
    Hostile,
    hostile,
    number_problem,
    printable,
    printable_key,
    text_problem,
)

from .asgi import send_json

Where = tuple[str | int, ...]


def _agent_arguments(action: Any, at: Where) -> set[Where]:
    """Where the tool call's own arguments are in ``action`` (found at ``at``): its ``params``,
    or the ``params`` of each item of a batch. Only when the action is valid apart from them:
    otherwise pydantic's error for the action would quote the whole of it, arguments
    included, and nothing hostile may be quoted."""
    from .models import CompanyOSAction, CompanyOSBatchAction

    if not isinstance(action, dict):
        return set()
    if "params" in action and "batch" not in action:
        try:
            CompanyOSAction.model_validate({**action, "params": {}})
        except ValueError:
            return set()
        return {(*at, "params")}
    batch = action.get("batch")
    if isinstance(batch, list):
        try:
            CompanyOSBatchAction.model_validate({**action, "batch": []})
        except ValueError:
            return set()
        return {
            (*at, "batch", i, "params") for i, item in enumerate(batch) if isinstance(item, dict)
        }
    return set()


def skipped(path: str, value: Any) -> set[Where]:
    """The subtrees of a body (or frame) to ``path`` that are the environment's to judge."""
    if path == "/step" and isinstance(value, dict):
        return _agent_arguments(value.get("action"), ("action",))
    if path == "/ws" and isinstance(value, dict) and value.get("type") == "step":
        return _agent_arguments(value.get("data"), ("data",))
    if path.startswith("/mcp-server"):
        # A standard MCP server's tool call: its arguments go to the environment as they are.
        calls = value if isinstance(value, list) else [value]
        return {
            ((i,) if isinstance(value, list) else ()) + ("params", "arguments")
            for i, call in enumerate(calls)
            if isinstance(call, dict)
        }
    # OpenEnv's own JSON-RPC (`/mcp`, and `mcp` messages over `/ws`) validates tool arguments
    # itself and quotes them in its errors: nothing hostile may reach it.
    return set()


UNREAD = object()
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
"""A table that keeps every ASCII digit as "0" and makes every other byte a space."""
_LONG_RUN = b"0" * 16


def long_number(raw: bytes) -> bool:
    """Whether ``raw`` holds a run of 16 or more ASCII digits (what ``re.search(rb"\\d{16}")``
    finds: a bytes pattern's \\d is ASCII only). A translated copy searched for the run: the
    regex tried a match at every digit and took 200 us on an 8 KB batch frame of episode ids,
    this 10 us."""
    return _LONG_RUN in raw.translate(_DIGITS_ONLY)


def fast_json(text: bytes | str) -> Any:
    """``text`` read by orjson, or `UNREAD` where its reading could differ from the json
    module's. orjson reads what the json module reads to the same values, several times
    faster, except that it refuses NaN, Infinity, lone surrogates and deep nesting (the json
    module then decides), and reads integers past 64 bits as floats: a frame with a run of 16
    digits is left to the json module, so every value is the one it would give."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if long_number(raw):
        return UNREAD
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return UNREAD


def clean_read(text: bytes | str) -> bool:
    """Whether a ``text`` that `fast_json` read (not `UNREAD`) can hold no hostile value, so
    that `find` need not walk it. orjson refuses NaN, Infinity, numbers past a float and lone
    surrogates, and `fast_json` leaves integers of 16 digits or more to the json module: what
    orjson reads can be hostile only by a NUL, which JSON can carry only as the escape
    ``\\u0000``, or by more values than `find` looks at (a text of MAX_WALK characters holds
    at most MAX_WALK / 2 + 1: every value but the first takes a character and a separator or
    bracket)."""
    nul = b"\\u0000" if isinstance(text, bytes) else "\\u0000"
    return len(text) <= MAX_WALK and nul not in text  # type: ignore[operator]


def parse(body: bytes | str) -> tuple[bool, Any]:
    """(True, value) when ``body`` is JSON as Python reads it (NaN and Infinity included, as
    Python clients send them), else (False, None): the route explains its own parse errors."""
    ok, value, _ = read(body)
    return ok, value


def read(body: bytes | str) -> tuple[bool, Any, bool]:
    """`parse`, and whether the value is known to hold nothing hostile (`clean_read`)."""
    fast = fast_json(body)
    if fast is not UNREAD:
        return True, fast, clean_read(body)
    try:
        return True, json.loads(body), False
    except (ValueError, RecursionError):  # not JSON, not UTF-8, too deep, too many digits
        return False, None, False


def find(value: Any, skip: set[Where]) -> Hostile | None:
    """`domain.inputs.hostile` with the subtrees in ``skip`` left out."""
    if not skip:
        return hostile(value)
    return _walk(value, (), skip)


def _walk(value: Any, where: Where, skip: set[Where]) -> Hostile | None:
    if where in skip:
        return None
    if isinstance(value, dict):
        flat = {
            k: v
            for k, v in value.items()
            if not isinstance(v, dict | list) and (*where, printable_key(k)) not in skip
        }
        found = hostile(flat)
        if found is not None:
            return Hostile(where + found.where, found.problem)
        for k, v in value.items():
            if isinstance(v, dict | list):
                found = _walk(v, (*where, printable_key(k)), skip)
                if found is not None:
                    return found
        return None
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _walk(v, (*where, i), skip)
            if found is not None:
                return found
        return None
    found = hostile(value)
    return None if found is None else Hostile(where, found.problem)


def refusal(found: Hostile, top: str) -> dict[str, Any]:
    return {
        "detail": [
            {
                "type": "invalid_input",
                "loc": [top, *found.where],
                "msg": f"{found.describe(top)}; nothing was done",
            }
        ]
    }


class HostileInput:
    """ASGI middleware; sits inside the body limit, which has already buffered the body."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = _url_problem(scope)
        if problem is not None:
            await send_json(send, 422, problem)
            return
        chunks: list[bytes] = []
        more, messages = True, []
        while more:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if body[:1] in (b"{", b"[") or body.lstrip()[:1] in (b"{", b"["):
            ok, value, clean = read(body)
            if ok and not clean:
                found = find(value, skipped(scope["path"], value))
                if found is not None:
                    await send_json(send, 422, refusal(found, "body"))
                    return
        pending = [{"type": "http.request", "body": body}] if more is False else messages

        async def replayed() -> Any:
            return pending.pop(0) if pending else await receive()

        await self.app(scope, replayed, send)


def _url_problem(scope: dict[str, Any]) -> dict[str, Any] | None:
    path = scope.get("path", "")
    problem = text_problem(path)
    if problem is not None:
        detail = {"type": "invalid_input", "loc": ["path"], "msg": f"the path {problem}"}
        return {"detail": [detail]}
    query = scope.get("query_string", b"")
    if query:
        for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            for part, text in (("name", name), ("value", value)):
                problem = text_problem(text)
                if problem is not None:
                    return {
                        "detail": [
                            {
                                "type": "invalid_input",
                                "loc": ["query"],
                                "msg": f"a query parameter's {part} {problem}",
                            }
                        ]
                    }
    return None


def frame_problem(path: str, text: str) -> str | None:
    """Why a WebSocket text frame to ``path`` carries a value nobody can keep, or None."""
    ok, value = parse(text)
    if not ok:
        return None
    return value_problem(path, value)


def value_problem(path: str, value: Any) -> str | None:
    """`frame_problem` for a frame already parsed (by `parse`)."""
    skip = skipped(path, value)
    found = find(value, skip)
    return None if found is None else f"{found.describe()}; nothing was done"


def safe_json(value: Any, depth: int = 0) -> Any:
    """``value`` with everything a JSON writer or a UTF-8 encoder refuses made printable: for
    error details that quote what a client sent (pydantic's ``input`` and ``ctx``)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value if text_problem(value) is None else printable(value)
    if isinstance(value, int | float):
        return value if number_problem(value) is None else printable(value)
    if depth > 32:
        return printable(value)
    if isinstance(value, dict):
        return {
            (k if isinstance(k, str) and text_problem(k) is None else printable(k)): safe_json(
                v, depth + 1
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [safe_json(v, depth + 1) for v in value]
    return printable(value)
