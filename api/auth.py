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

A second key, the agent's (`--agent-key`), reaches only what an agent acts through
(`api.roles`): give it to the agent, keep the trainer's.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any
from urllib.parse import parse_qs

from .asgi import send_json
from .roles import ROLE

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
    """ASGI middleware: refuse HTTP requests and WebSockets that present neither the trainer's
    key nor, if the server has one, the agent's; mark those made with the agent's key
    (`roles.ROLE`) for `roles.AgentSurface`."""

    def __init__(self, app: Any, key: str, agent_key: str | None = None) -> None:
        self.app = app
        self._want = _digest(key)
        self._agent = _digest(agent_key) if agent_key else None

    def accepts(self, presented: bytes) -> bool:
        return hmac.compare_digest(_digest(presented), self._want)

    def role(self, presented: bytes) -> str | None:
        """ "trainer", "agent", or None for a key the server does not know (both compared in
        constant time, whichever matches)."""
        digest = _digest(presented)
        trainer = hmac.compare_digest(digest, self._want)
        agent = self._agent is not None and hmac.compare_digest(digest, self._agent)
        return "trainer" if trainer else "agent" if agent else None

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
        role = self.role(presented) if presented is not None else None
        if role is not None:
            if role == "agent":
                scope = {**scope, ROLE: "agent"}
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
