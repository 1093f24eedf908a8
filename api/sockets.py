"""Two guards on the WebSocket routes that OpenEnv's handlers need and lack.

`FrameGuard`: OpenEnv 0.3's `/ws` and `/mcp` loops answer malformed JSON with an error frame and
carry on, but a frame that is valid JSON and not an object (``[]``, ``5``), a binary frame, or
JSON nested past Python's recursion limit escapes their handlers: the session is destroyed and
the client gets an internal message such as ``'list' object has no attribute 'get'``. The guard
answers such frames itself, in the route's own protocol (an OpenEnv error frame, a JSON-RPC
error), and the session continues: bad input gets a clear error and changes nothing else.

`IdleSockets`: OpenEnv's idle reaper (`ConcurrencyConfig.session_timeout`) frees the session's
slot but leaves its socket open and still playing, so a server could hold more live sessions
than its cap. This closes, with code 1001 and a reason, any socket whose client sent nothing for
``timeout`` seconds; the handler then sees a disconnect and destroys the session, slot and all.
The clock runs only while the server waits for the client, never while a step is computed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from uvicorn.protocols.utils import ClientDisconnected

from . import handover
from .inputs import UNREAD, clean_read, fast_json
from .inputs import value_problem as hostile_value

GOING_AWAY = 1001

Reply = Callable[[str], str]


def openenv_error(message: str) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": "INVALID_JSON"}})


def jsonrpc_error(message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "error": {"code": -32600, "message": message}, "id": None})


WEBSOCKET_REPLIES: dict[str, Reply] = {"/ws": openenv_error, "/mcp": jsonrpc_error}


def screen(message: dict[str, Any], path: str = "/ws") -> tuple[str | None, Any]:
    """Why a received frame cannot go to OpenEnv's handler (None if it can), and the frame's
    JSON value as the json module reads it (`UNREAD` where the frame is refused or is not
    JSON: the handler answers that itself)."""
    text = message.get("text")
    if text is None:
        return "binary frames are not accepted: send JSON objects as text frames", UNREAD
    # Every frame is read here once (`fast_json` where it reads as the json module would).
    parsed = fast_json(text)
    if parsed is UNREAD:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            return None, UNREAD  # the handler answers this one itself, in its own words
        except RecursionError:
            return "the frame's JSON nests too deeply", UNREAD
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            return f"the frame is not acceptable JSON: {exc}", UNREAD
        clean = False
    else:
        clean = clean_read(text)
    if not isinstance(parsed, dict):
        kind = _JSON_KINDS.get(type(parsed), "a value")
        return (
            f'a frame must be a JSON object such as {{"type": "step", "data": {{...}}}}, not {kind}'
        ), UNREAD
    problem = None if clean else hostile_value(path, parsed)
    return problem, (parsed if problem is None else UNREAD)


_JSON_KINDS = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


class FrameGuard:
    def __init__(self, app: Any, replies: dict[str, Reply] | None = None) -> None:
        self.app = app
        self.replies = WEBSOCKET_REPLIES if replies is None else replies

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        reply = self.replies.get(scope["path"]) if scope["type"] == "websocket" else None
        if reply is None:
            await self.app(scope, receive, send)
            return

        async def screened() -> dict[str, Any]:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                problem, value = screen(message, scope["path"])
                if problem is None:
                    if value is not UNREAD:
                        handover.put(message["text"], value)
                    return message
                # The handler is waiting in receive(), so nothing else is sending now.
                with suppress(ClientDisconnected, OSError):
                    await send({"type": "websocket.send", "text": reply(problem)})

        await self.app(scope, screened, send)


class IdleSockets:
    def __init__(self, app: Any, timeout: float | None) -> None:
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket" or self.timeout is None:
            await self.app(scope, receive, send)
            return
        timeout = self.timeout
        closed = False
        gone = {"type": "websocket.disconnect", "code": GOING_AWAY}

        async def timed_receive() -> dict[str, Any]:
            # A deadline on the wait itself (one timer, cancelled by the message): a task and
            # asyncio.wait per message cost the server 6-8 us more a message.
            nonlocal closed
            if closed:
                return gone
            deadline = asyncio.timeout(timeout)
            try:
                async with deadline:
                    return await receive()
            except TimeoutError:
                if not deadline.expired():
                    raise
                closed = True
                reason = f"idle for {timeout:g} s: session closed, its episode stays stored"
                with suppress(ClientDisconnected, OSError, RuntimeError):
                    await send({"type": "websocket.close", "code": GOING_AWAY, "reason": reason})
                return gone

        async def guarded_send(message: dict[str, Any]) -> None:
            if not closed:  # after an idle close the handler's own close has nothing to do
                await send(message)

        await self.app(scope, timed_receive, guarded_send)
