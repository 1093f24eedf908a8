"""Query parameters are given once. A request that repeats one its route takes a single value
of (``?step=x&step=.exe&step=0``) gets a 422 saying so: FastAPI would quietly keep the last
value and drop the rest, accepting garbage it never looked at.

Which parameters take one value comes from the OpenAPI document (any parameter whose schema is
not an array), so routes added later are covered with no list to keep up to date.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from .asgi import send_json

Table = list[tuple[re.Pattern[str], str, frozenset[str]]]


def _is_array(schema: dict[str, Any]) -> bool:
    if schema.get("type") == "array":
        return True
    return any(_is_array(s) for s in schema.get("anyOf", []) + schema.get("oneOf", []))


def single_valued(openapi: dict[str, Any]) -> Table:
    """(path pattern, method, names of the query parameters that take one value)."""
    table: Table = []
    for path, operations in openapi.get("paths", {}).items():
        pattern = re.compile("^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(path)) + "$")
        for method, operation in operations.items():
            names = frozenset(
                p["name"]
                for p in operation.get("parameters", [])
                if p.get("in") == "query" and not _is_array(p.get("schema", {}))
            )
            if names:
                table.append((pattern, method.upper(), names))
    return table


class SingleValuedQuery:
    def __init__(self, app: Any, openapi: Callable[[], dict[str, Any]]) -> None:
        self.app = app
        self.openapi = openapi
        self._table: Table | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        query = scope.get("query_string", b"") if scope["type"] == "http" else b""
        if query:
            counts = Counter(k for k, _ in parse_qsl(query.decode("latin-1"), True))
            repeated = {k: n for k, n in counts.items() if n > 1}
            if repeated:
                if self._table is None:
                    self._table = single_valued(self.openapi())
                for pattern, method, names in self._table:
                    if method == scope["method"] and pattern.match(scope["path"]):
                        bad = sorted(set(repeated) & names)
                        if bad:
                            await _refuse(send, bad, repeated)
                            return
                        break
        await self.app(scope, receive, send)


async def _refuse(send: Any, names: list[str], counts: dict[str, int]) -> None:
    detail = [
        {
            "type": "repeated_parameter",
            "loc": ["query", name],
            "msg": f"give {name} once, not {counts[name]} times",
        }
        for name in names
    ]
    await send_json(send, 422, {"detail": detail})


class EmptyMeansAbsent:
    """An empty query value is no value: ``/episodes?outcome=&scenario=x`` filters by scenario
    only, as a form's empty field or a URL template with nothing filled in means. Without this,
    FastAPI validates the empty string (a 422 for a number or a choice, an empty filter that
    matches nothing for a string). The pair is dropped before any route sees the request."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        query = scope.get("query_string", b"") if scope["type"] == "http" else b""
        if query:
            pairs = query.split(b"&")
            kept = [p for p in pairs if p.partition(b"=")[2]]
            if len(kept) != len(pairs):
                scope = {**scope, "query_string": b"&".join(kept)}
        await self.app(scope, receive, send)
