"""Answering from raw ASGI middleware, before FastAPI has seen the request."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


async def send_json(
    send: Any, status: int, payload: Any, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """A whole JSON response: ``payload`` as the body, with ``status`` and extra ``headers``."""
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class HeadAsGet:
    """``HEAD`` on any route that answers ``GET``: the same status and headers, no body.
    Load balancers and uptime checks probe with HEAD (``HEAD /health``); FastAPI routes declare
    GET only, so HEAD was a 405."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # the rest of a streamed body: nothing to send
                message = {"type": "http.response.body", "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
