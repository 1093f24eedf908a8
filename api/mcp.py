"""Every app tool as an MCP tool, with its JSON schema taken from the same pydantic parameter
model that validates it (one catalogue feeds the manifest, MCP and validation).

Two ways in:
- OpenEnv's own: `MCPToolClient` sends `call_tool`/`list_tools` actions over `/ws` (handled by
  the environment's `step`), and `POST /mcp` JSON-RPC uses the environment's `mcp_server`,
  built here per environment.
- Any MCP client: a standard MCP server (streamable HTTP, mounted by the app at `/mcp-server/`)
  whose tools are the same; `companyos_reset` starts an episode and returns its id.

MCP calls are stateless the way stateful HTTP is: a tool call may carry `episode_id`, and the
episode is loaded from the store. Within an MCP session that keeps an id (OpenEnv's `/mcp`
and `/ws`, a handshake-era MCP session), the last episode the session started is the default
and naming another is refused.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import anyio
from fastmcp import FastMCP
from fastmcp.tools.base import Tool as MCPTool
from fastmcp.tools.base import ToolResult
from openenv.core.env_server.mcp_types import Tool
from pydantic import PrivateAttr

from companyos.domain import TOOLS

from .episode import ResetError
from .models import CompanyOSObservation

RESET_TOOL = "companyos_reset"
EPISODE_ID_PROPERTY = {
    "type": "string",
    "description": "The episode to act in (from companyos_reset); default: this session's. "
    "A session plays one episode: naming another is refused.",
}
RESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task_id": {
            "anyOf": [{"type": "string"}, {"type": "integer"}],
            "description": "Scenario name or index; default: drawn from the seed.",
        },
        "seed": {"type": "integer", "minimum": 0, "description": "Default: a fresh one."},
        "difficulty": {
            "type": "integer",
            "minimum": 0,
            "maximum": 3,
            "description": "Chaos level 0-3 (2: the original CompanyOS).",
        },
        "episode_id": {"type": "string", "description": "An id for the new episode."},
    },
    "additionalProperties": False,
}
AGENT_RESET_OPTIONS = frozenset(RESET_SCHEMA["properties"])
"""What an agent may choose when it starts an episode through MCP. Forks (which would let it
continue, or take the outcome of, a stored episode), a curriculum (`show_progress`), another
step budget or reward profile, and the agent label are the trainer's: `/reset` over HTTP or
the `/ws` reset message."""
RESET_DESCRIPTION = (
    "Start a new CompanyOS episode and return its id, task and tools. Then call the app "
    "tools with that episode_id; each returns the tool's result, a message, the steps left "
    "and whether the episode is done."
)


def app_tools() -> list[tuple[str, str, dict[str, Any]]]:
    """(name, description, parameter schema) of every app tool, from the one catalogue. MCP
    adds an ``episode_id`` to each; a chat model's function tools (`agents.toolcalls`) are
    these as they are."""
    return [
        (t.name, f"{t.signature()}: {t.description}", t.parameters_schema()) for t in TOOLS.values()
    ]


def catalogue() -> list[tuple[str, str, dict[str, Any]]]:
    """(name, description, input schema) of every MCP tool, reset first."""
    tools = [(RESET_TOOL, RESET_DESCRIPTION, RESET_SCHEMA)]
    for name, description, schema in app_tools():
        schema["properties"] = {**schema["properties"], "episode_id": EPISODE_ID_PROPERTY}
        tools.append((name, description, schema))
    return tools


def openenv_tools() -> list[Tool]:
    """The app tools as OpenEnv `Tool`s (for `list_tools` over `/ws`, where reset is the
    protocol's own message)."""
    return [Tool(name=n, description=d, input_schema=s) for n, d, s in catalogue()[1:]]


def tool_result(obs: CompanyOSObservation) -> dict[str, Any]:
    """What an MCP tool call returns, the agent's view (`agent_view`): the tool's own result
    under ``data`` (which MCP clients unwrap), and what a person doing the job would see
    besides. Nothing of the grader: no reward, return or outcome, the milestones only in an
    episode reset with show_progress (a curriculum), and no seed or instance id (with the
    public generator they rebuild the goal)."""
    out: dict[str, Any] = {
        "data": obs.last_result,
        "message": obs.message,
        "error": obs.error,
        "episode_id": obs.episode_id,
        "step": obs.step,
        "steps_remaining": obs.steps_remaining,
        "time": obs.time,
        "done": obs.done,
    }
    if obs.progress:
        out["progress"] = obs.progress
    if obs.tools:
        out["task"] = obs.task
        out["task_id"] = obs.task_id
        out["max_steps"] = obs.max_steps
    return out


def call(env: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one MCP tool on an environment. Mistakes come back as results with an error code
    (they are events in the log like any other), never as exceptions."""
    args = dict(arguments) if isinstance(arguments, dict) else {}
    if name == RESET_TOOL:
        extra = sorted(str(k) for k in args if k not in AGENT_RESET_OPTIONS)
        if extra:
            return _refused_reset(
                f"{RESET_TOOL} takes only {', '.join(sorted(AGENT_RESET_OPTIONS))}, not "
                f"{', '.join(extra)[:200]}: forks, curricula (show_progress), step budgets, "
                "reward profiles and agent labels are the trainer's to set (POST /reset, or "
                "the /ws reset message)."
            )
        try:
            obs = env.reset(**args)
        except ResetError as exc:
            return _refused_reset(str(exc))
        return tool_result(obs)
    return tool_result(env.call_tool(name, args))


def _refused_reset(message: str) -> dict[str, Any]:
    return {"data": None, "error": "invalid_reset", "message": message, "done": False}


class _CatalogueTool(MCPTool):
    """An MCP tool whose schema comes from the catalogue and whose body runs a step."""

    _body: Callable[..., dict[str, Any]] | None = PrivateAttr(default=None)

    @property
    def fn(self) -> Callable[..., dict[str, Any]]:
        # OpenEnv's /mcp handler calls `tool.fn(**arguments)` directly.
        assert self._body is not None
        return self._body

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        # A step touches the store: keep it off the event loop.
        result = await anyio.to_thread.run_sync(lambda: self.fn(**arguments))
        return self.convert_result(result)


def _tool(
    name: str, description: str, schema: dict[str, Any], body: Callable[..., dict[str, Any]]
) -> _CatalogueTool:
    tool = _CatalogueTool(name=name, description=description, parameters=schema)
    tool._body = body
    return tool


def server_for(env: Any) -> FastMCP:
    """An MCP server whose tools act on one environment (OpenEnv's per-session `/mcp`)."""
    mcp = FastMCP("CompanyOS")
    for name, description, schema in catalogue():
        mcp.add_tool(_tool(name, description, schema, lambda _n=name, **kw: call(env, _n, kw)))
    return mcp


class SessionEnvironments:
    """Environments of standard MCP sessions, by session id, least recently used evicted."""

    def __init__(self, factory: Callable[[], Any], capacity: int = 256) -> None:
        self.factory = factory
        self.capacity = capacity
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str | None) -> Any:
        if session_id is None:
            return self.factory()
        with self._lock:
            env = self._items.get(session_id)
            if env is None:
                env = self._items[session_id] = self.factory()
            self._items.move_to_end(session_id)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)[1].close()
            return env


def standard_server(factory: Callable[[], Any]) -> FastMCP:
    """A standard MCP server for any MCP client. A handshake-era MCP session (protocol before
    2026-07-28) gets its own environment: its last reset is its default episode and it cannot
    act in another. A 2026-07-28 connection lasts one request and has no session: each call
    names its episode with ``episode_id``, as plain HTTP does."""
    from fastmcp.server.dependencies import get_context
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    sessions = SessionEnvironments(factory)
    mcp = FastMCP("CompanyOS", instructions=RESET_DESCRIPTION)

    def session_env() -> Any:
        try:
            ctx = get_context()
        except RuntimeError:
            return sessions.get(None)
        request = ctx.request_context
        if request is not None and request.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return sessions.get(None)  # nothing to keep between requests
        return sessions.get(ctx.session_id)

    for name, description, schema in catalogue():
        mcp.add_tool(
            _tool(name, description, schema, lambda _n=name, **kw: call(session_env(), _n, kw))
        )
    return mcp
