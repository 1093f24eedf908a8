"""What the agent's key reaches: the surface an agent acts through, and nothing of the grader.

A server started with both a trainer key (`--api-key`) and an agent key (`--agent-key`) gives
the agent's key to the agent under evaluation or training and keeps the trainer's. The agent's
key reaches the routes an agent plays through: `/reset` and `/step`, a `/ws` session, OpenEnv's
`/mcp` and the standard MCP server, and what describes them (`/schema`, `/metadata`,
`/manifest`). Everything that shows the grader or other episodes is the trainer's: `/state`
(milestones, return), `/episodes` (every id, every log, the goal in the events), `/render` (the
true world), `/analytics`, the viewer, the original's API (its `info` carries progress) and the
API documentation. On what it reaches, a reset may choose the task, seed, difficulty and the
new episode's id; a fork, a curriculum (`show_progress`), another budget, reward profile or
agent label are the trainer's, and so is a `/ws` session's `state` message.

Without an agent key there is one role: whoever has the key (or anyone, on a server without
one) is the trainer.
"""

from __future__ import annotations

import json
from contextlib import suppress
from typing import Any

from uvicorn.protocols.utils import ClientDisconnected

from .asgi import send_json
from .sockets import openenv_error

AGENT_PATHS = frozenset({"/reset", "/step", "/ws", "/mcp", "/schema", "/metadata", "/manifest"})
AGENT_PREFIXES = ("/mcp-server",)
AGENT_RESET_OPTIONS = frozenset({"seed", "task_id", "difficulty", "episode_id"})

TRAINERS = (
    "the trainer's key reaches it: this key is an agent's, which reaches /reset, /step, /ws, "
    "/mcp, /mcp-server/, /schema, /metadata and /manifest only"
)


def reaches(path: str) -> bool:
    """The agent's key reaches ``path``."""
    return path in AGENT_PATHS or any(path == p or path.startswith(p + "/") for p in AGENT_PREFIXES)


def refused_reset_options(options: Any) -> list[str]:
    """The options of a reset that only the trainer may set (all of them, if not an object)."""
    if not isinstance(options, dict):
        return []  # not an object at all: the route's own validation answers it
    return sorted(str(k)[:64] for k in options if k not in AGENT_RESET_OPTIONS)


def reset_refusal(options: list[str]) -> str:
    return (
        f"reset option(s) {', '.join(options)} are the trainer's to set ({TRAINERS}); an "
        f"agent's reset takes {', '.join(sorted(AGENT_RESET_OPTIONS))}"
    )


ROLE = "companyos.role"
"""The scope key `auth.ApiKeyGuard` sets to "agent" for a request made with the agent's key."""


class AgentSurface:
    """ASGI middleware, inside the body limit: a request made with the agent's key reaches only
    the agent's surface, and is screened there."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get(ROLE) != "agent":
            await self.app(scope, receive, send)
            return
        await agent_only(self.app, scope, receive, send)


async def agent_only(app: Any, scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Serve a request made with the agent's key: refuse what it does not reach, and screen
    what an agent may not ask of what it does."""
    path = scope["path"]
    if not reaches(path):
        detail = f"{path} is not for agents: {TRAINERS}"
        if scope["type"] == "http":
            await send_json(send, 403, {"detail": detail})
        else:
            if (await receive())["type"] == "websocket.connect":
                await send({"type": "websocket.accept"})
                await send({"type": "websocket.close", "code": 1008, "reason": detail[:120]})
        return
    if scope["type"] == "http" and path == "/reset":
        await _screened_reset(app, scope, receive, send)
    elif scope["type"] == "websocket" and path == "/ws":
        await app(scope, _screened_frames(receive, send), send)
    else:
        await app(scope, receive, send)


async def _screened_reset(app: Any, scope: dict[str, Any], receive: Any, send: Any) -> None:
    messages, body, more = [], b"", True
    while more:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        body += message.get("body", b"")
        more = message.get("more_body", False)
    try:
        options = json.loads(body) if body.strip() else {}
    except (ValueError, RecursionError):
        options = None  # malformed: the route answers it
    refused = refused_reset_options(options)
    if refused:
        await send_json(send, 403, {"detail": reset_refusal(refused)})
        return
    pending = list(messages)

    async def replayed() -> Any:
        return pending.pop(0) if pending else await receive()

    await app(scope, replayed, send)


def _screened_frames(receive: Any, send: Any) -> Any:
    async def screened() -> dict[str, Any]:
        while True:
            message = await receive()
            if message["type"] != "websocket.receive":
                return message
            problem = _frame_refusal(message.get("text"))
            if problem is None:
                return message
            # OpenEnv's handler is waiting in receive(): nothing else is sending now.
            with suppress(ClientDisconnected, OSError):
                await send({"type": "websocket.send", "text": openenv_error(problem)})

    return screened


def _frame_refusal(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError):
        return None  # FrameGuard and the handler answer malformed frames
    if not isinstance(frame, dict):
        return None
    if frame.get("type") == "state":
        return f"a session's state (milestones, return) is not for agents: {TRAINERS}"
    if frame.get("type") == "reset":
        refused = refused_reset_options(frame.get("data"))
        if refused:
            return reset_refusal(refused)
    return None
