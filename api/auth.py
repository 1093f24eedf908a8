"""The optional API key: when the server has one, every route but `/health` needs it.

Clients present it as ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``; WebSocket
clients that cannot set headers on the upgrade (browsers, OpenEnv's own client) may put it in
the query string instead (``/ws?api_key=<key>``). Plain HTTP never takes it from the query:
URLs end up in logs and browser histories.

A request without a key gets 401, one with a wrong key 403, both with a JSON message saying
what to send. A WebSocket is accepted and then closed at once with code 1008 (policy violation)
and the same message as its reason, so that clients see why rather than a bare handshake error.
The documentation (`/docs`, `/redoc`, `/openapi.json`) is protected too: it maps the whole API.

Keys are compared as SHA-256 digests with `hmac.compare_digest`, so the comparison takes the
same time whatever the key presented, its length included.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any
from urllib.parse import parse_qs

from .asgi import send_json

OPEN_PATHS = frozenset({"/health"})
"""Reachable without the key: what a load balancer's health check calls."""
QUERY_PARAMETER = "api_key"
POLICY_VIOLATION = 1008

HOW = "send it as 'Authorization: Bearer <key>' or 'X-API-Key: <key>' (sockets: ?api_key=<key>)"
MISSING = f"API key required: {HOW}"
WRONG = "API key not accepted: check the key the server was started with"


def _digest(key: str | bytes) -> bytes:
    return hashlib.sha256(key.encode() if isinstance(key, str) else key).digest()


class ApiKeyGuard:
    """ASGI middleware: refuse HTTP requests and WebSockets that do not present the key."""

    def __init__(self, app: Any, key: str) -> None:
        self.app = app
        self._want = _digest(key)

    def accepts(self, presented: bytes) -> bool:
        return hmac.compare_digest(_digest(presented), self._want)

    @staticmethod
    def presented(scope: dict[str, Any]) -> bytes | None:
        for name, value in scope.get("headers") or []:
            if name == b"x-api-key":
                return value.strip()
            if name == b"authorization":
                scheme, _, credentials = value.strip().partition(b" ")
                if scheme.lower() == b"bearer" and credentials.strip():
                    return credentials.strip()
        if scope["type"] == "websocket":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            if query.get(QUERY_PARAMETER):
                return query[QUERY_PARAMETER][0].encode("latin-1")
        return None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        presented = self.presented(scope)
        if presented is not None and self.accepts(presented):
            await self.app(scope, receive, send)
            return
        message = MISSING if presented is None else WRONG
        if scope["type"] == "http":
            await self._refuse_http(send, 401 if presented is None else 403, message)
        else:
            await self._refuse_websocket(receive, send, message)

    @staticmethod
    async def _refuse_http(send: Any, status: int, message: str) -> None:
        challenge = [(b"www-authenticate", b'Bearer realm="companyos"')] if status == 401 else []
        await send_json(send, status, {"detail": message}, challenge)

    @staticmethod
    async def _refuse_websocket(receive: Any, send: Any, message: str) -> None:
        if (await receive())["type"] != "websocket.connect":
            return  # the client left before the handshake finished
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": POLICY_VIOLATION, "reason": message})
