"""The CompanyOS server: OpenEnv's `create_app` (`/ws`, `/reset`, `/step`, `/state`, `/schema`,
`/health`, `/metadata`, `/mcp`) around `CompanyOSEnvironment`, plus the episode API, the
original's `/manifest` and `/render`, a standard MCP server at `/mcp-server/`, request limits
and error handling that answers every bad request with a 4xx and a message.

Every environment the server builds (one per WebSocket session, one per stateless HTTP request)
shares the process's store and episode cache, which is what makes plain HTTP stateful: a step
that names its `episode_id` continues that episode from the log.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.types import ConcurrencyConfig
from starlette.exceptions import HTTPException
from starlette.websockets import WebSocketDisconnect
from uvicorn.protocols.utils import ClientDisconnected

from companyos.analytics.service import LiveAnalytics
from companyos.domain import Limits
from companyos.events import StoreError, open_store

from . import compat, heap
from .analytics_routes import build_analytics_router
from .asgi import HeadAsGet, send_json
from .auth import ApiKeyGuard
from .cache import EpisodeCache
from .environment import CompanyOSEnvironment
from .episode import EpisodeExists, EpisodeNotFound, ResetError
from .inputs import HostileInput, safe_json
from .listeners import listen_on_own_sockets, reuse_port_socket
from .mcp import standard_server
from .models import CompanyOSObservation, CompanyOSWireAction
from .openapi import document
from .original import build_original_router
from .params import EmptyMeansAbsent, SingleValuedQuery
from .roles import AgentSurface
from .routes import build_router
from .settings import Settings
from .slowclients import DeadlineH11Protocol
from .sockets import FrameGuard, IdleSockets
from .timeline import build_timeline_router
from .viewer_page import mount_viewer

Scope = dict[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]
]

DESCRIPTION = """\
CompanyOS: multi-step enterprise workflows across TicketDesk, DataHub and ApprovalFlow, served
through the OpenEnv API from an event-sourced, replayable log.

* `POST /reset` starts an episode; its observation carries the `episode_id`.
* `POST /step` with `{"action": {"app": ..., "method": ..., "params": {...}, "episode_id": ...}}`
  continues that episode (plain HTTP is stateful through the log); `/ws` keeps a session.
* `GET /episodes`, `/episodes/{id}/events`, `/episodes/{id}/state?step=k`,
  `POST /episodes/{id}/fork`, `POST /episodes/{id}/verify`: the log, browsed;
  `GET /episodes/{id}/timeline` step by step, and the replay viewer page at `/viewer/`.
* `POST /analytics/query` (a canned query or one read-only SQL statement, sandboxed),
  `GET /analytics/queries`, `GET /analytics/report`: the trajectory warehouse.
* `GET /manifest`: the tools, for prompting. MCP: `POST /mcp` (OpenEnv JSON-RPC) and a standard
  MCP server at `/mcp-server/`.
"""


class BodyLimit:
    """Refuse HTTP request bodies over ``limit`` bytes with 413, before any handler sees them
    (declared by Content-Length or discovered while reading a chunked body)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message], receive), send)
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                await self._refuse(send)
                return
        await self.app(scope, _replay([{"type": "http.request", "body": body}], receive), send)

    async def _refuse(self, send: Any) -> None:
        detail = f"request body too large: the limit is {self.limit} bytes; send smaller values"
        await send_json(send, 413, {"detail": detail})


class QuietDisconnects:
    """A client that hangs up mid-session is not a server error: OpenEnv's `/ws` handler
    closes the socket again in its `finally` and Starlette raises for the socket already gone;
    without this every hang-up would print a traceback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        with suppress(WebSocketDisconnect, ClientDisconnected):
            await self.app(scope, receive, send)


def _replay(messages: list[dict[str, Any]], receive: Any) -> Any:
    pending = list(messages)

    async def replayed() -> Any:
        return pending.pop(0) if pending else await receive()

    return replayed


def jsonable(errors: Any) -> Any:
    """pydantic's error list as JSON-shaped values (FastAPI's encoder, which may fail on what
    a client sent: then the values are made printable first)."""
    from fastapi.encoders import jsonable_encoder

    try:
        return jsonable_encoder(errors)
    except (ValueError, TypeError, RecursionError):
        return safe_json(errors)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"detail": message}, status_code=status)


def build_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    compat.install()
    store = open_store(settings.store)
    cache = EpisodeCache(store, settings.limits, capacity=settings.cache_episodes)
    new_env = functools.partial(
        CompanyOSEnvironment,
        store,
        difficulty=settings.difficulty,
        reward_profile=settings.reward_profile,
        limits=settings.limits,
        cache=cache,
        max_episode_steps=settings.max_episode_steps,
    )
    app = create_app(
        new_env,
        CompanyOSWireAction,  # type: ignore[arg-type]
        CompanyOSObservation,
        env_name="companyos",
        # No session_timeout here: OpenEnv's reaper frees an idle session's slot but leaves its
        # socket open and playing; `IdleSockets` below closes the socket, which frees both.
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=settings.max_sessions),
    )
    app.title = "CompanyOS"
    app.version = "0.1.0"
    app.description = DESCRIPTION
    app.state.store = store
    app.state.cache = cache
    app.state.settings = settings

    # OpenEnv's /state builds a fresh environment and has nothing to show over plain HTTP;
    # ours takes ?episode_id= (and answers the same without it).
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) != "/state"]
    app.include_router(
        build_router(
            store,
            cache,
            new_env,
            max_page=settings.max_page,
            max_events_page=settings.max_events_page,
        )
    )
    app.include_router(build_timeline_router(store))
    app.include_router(build_original_router(store, cache, new_env))
    analytics = LiveAnalytics(store)
    app.include_router(build_analytics_router(analytics))
    mount_viewer(app)

    mcp_app = standard_server(new_env).http_app(path="/")
    app.mount("/mcp-server", mcp_app)
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[None]:
        async with inner(a), mcp_app.lifespan(mcp_app):
            yield
        analytics.close()
        store.close()

    app.router.lifespan_context = lifespan

    @app.exception_handler(ResetError)
    async def _reset_error(request: Request, exc: ResetError) -> JSONResponse:
        return _error(400, str(exc))

    @app.exception_handler(EpisodeExists)
    async def _exists(request: Request, exc: EpisodeExists) -> JSONResponse:
        return _error(409, str(exc))

    @app.exception_handler(EpisodeNotFound)
    async def _not_found(request: Request, exc: EpisodeNotFound) -> JSONResponse:
        return _error(404, str(exc))

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> Response:
        # OpenEnv's /step puts pydantic's errors, with the value sent, in the detail: make
        # anything JSON cannot carry printable rather than fail to answer (a 500).
        exc.detail = safe_json(exc.detail)
        return await http_exception_handler(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": safe_json(jsonable(exc.errors()))}, status_code=422)

    @app.exception_handler(StoreError)
    async def _store_error(request: Request, exc: StoreError) -> JSONResponse:
        # StoreError texts name the failure's kind only (never the URL, a path or the SQL).
        return _error(503, f"{exc}; retry shortly")

    document(app, api_key=bool(settings.api_key), max_episode_steps=settings.max_episode_steps)
    if settings.agent_key:  # inside the body limit: it reads a /reset body
        app.add_middleware(AgentSurface)  # type: ignore[arg-type]
    app.add_middleware(HostileInput)  # type: ignore[arg-type]
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)  # type: ignore[arg-type]
    app.add_middleware(QuietDisconnects)  # type: ignore[arg-type]
    app.add_middleware(SingleValuedQuery, openapi=app.openapi)  # type: ignore[arg-type]
    app.add_middleware(EmptyMeansAbsent)  # type: ignore[arg-type]
    app.add_middleware(FrameGuard)  # type: ignore[arg-type]
    app.add_middleware(IdleSockets, timeout=settings.session_timeout)  # type: ignore[arg-type]
    app.add_middleware(HeadAsGet)  # type: ignore[arg-type]
    if settings.api_key:  # outermost: nothing runs, nor is any body read, without the key
        app.add_middleware(
            ApiKeyGuard,  # type: ignore[arg-type]
            key=settings.api_key,
            agent_key=settings.agent_key,
        )
    return app


WORKER_SETTINGS = "COMPANYOS_WORKER_SETTINGS"
"""How `serve` hands its settings to worker processes (each builds its own app from them)."""


def check_workers(settings: Settings, workers: int) -> None:
    """Several worker processes share the store, so it must be one that processes share."""
    if workers < 1:
        raise ValueError(f"--workers must be at least 1, not {workers}")
    if workers > 1 and settings.store.split(":", 1)[0] in ("memory", ""):
        raise ValueError(
            "the in-memory store lives inside one process, so worker processes could not "
            "share episodes: with --workers N use a SQLite file (--store sqlite:///data/"
            "companyos.db) or PostgreSQL, or serve memory:// with one worker"
        )


def app_from_environment() -> FastAPI:
    """The app of one worker process (uvicorn's factory): the settings `serve` put in the
    environment. Each worker has its own episode cache; the store is the shared truth."""
    raw = json.loads(os.environ[WORKER_SETTINGS])
    raw["limits"] = Limits(**raw["limits"])
    app = build_app(Settings(**raw))
    listen_on_own_sockets()
    heap.settle()
    return app


def serve(settings: Settings, workers: int = 1) -> None:
    """Serve on ``settings.host:port``. With ``workers`` > 1, that many processes accept
    connections on the one port, the kernel spreading them over the processes (any of them can
    serve any episode: the log is in the shared store, and a process whose cached copy is
    stale reloads it, as replicas do); a WebSocket session stays on the process that accepted
    it. ``max_sessions`` is per process."""
    import uvicorn

    check_workers(settings, workers)
    if workers > 1:
        os.environ[WORKER_SETTINGS] = json.dumps(dataclasses.asdict(settings))
        target: Any = "companyos.api.server:app_from_environment"
    else:
        target = build_app(settings)
        heap.settle()
    options: dict[str, Any] = {
        # A deadline on reading each request: slow clients cannot hold sockets (a partial,
        # which worker processes can pickle, of a class they import).
        "http": functools.partial(DeadlineH11Protocol, request_timeout=settings.request_timeout),
        "timeout_keep_alive": 5,
        "host": settings.host,
        "port": settings.port,
        "ws_max_size": settings.max_body_bytes,
        # Observations are a few KB and cheap to send; compressing each costs more CPU than
        # the bytes save on loopback or a LAN.
        "ws_per_message_deflate": False,
        "log_level": settings.log_level,
        "timeout_graceful_shutdown": 5,
    }
    if workers == 1:
        uvicorn.run(target, **options)
        return
    from uvicorn.supervisors import Multiprocess

    # uvicorn.run's way with workers, but each worker listens on a socket of its own in the
    # port's SO_REUSEPORT group (`listeners`), so connections are spread evenly.
    config = uvicorn.Config(target, factory=True, workers=workers, **options)
    Multiprocess(config, sockets=[reuse_port_socket(settings.host, settings.port)]).run()
