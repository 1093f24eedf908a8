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
