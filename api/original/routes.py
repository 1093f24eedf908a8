"""The compatibility surface: the original CompanyOS's HTTP API under `/original`, so that its
clients (its random baseline, its notebook, the `requests` examples of its README) run with
only their base URL changed.

    POST /original/reset     {"task_id"?, "seed"?}            -> {"observation"}
    POST /original/step      {"app", "method", "params"}      -> {"observation", "reward",
                                                                  "done", "info"}
    GET  /original/render    GET /original/manifest    GET /original/health    GET /original/

**One default episode per client, as the original had.** The original served a single
episode to whoever called it (its `/step` names no episode). Here each *client* has one: the
base URL `/original` is the client ``default``, and `/original/c/<name>` is the client
``<name>``; a client's `/step` goes to the episode its last `/reset` started. Clients that
share a base URL share its episode, exactly as every client of the original did: give each
concurrent client its own name. Which episode a client is on is written to the store (a
`ClientEpisodeSet` in the stream ``original-client:<name>``), so any replica serves any
client and a restart loses nothing. Every episode is stored like any other (agent label
``original:<name>``): the viewer, analytics, fork and verify work on them.

**What the agent sees and what the trainer sees.** The observation carries the original's
fields but not its ``progress`` flags: those are the grader's view and go to ``info`` (the
trainer's channel, as in gym), with ``success``, ``timeout``, ``total_reward`` and
``shortcut_attempts``. A client that wants the flags in the observation, as the original
gave them (a curriculum), asks for it in the URL: `/original/curriculum/...` (or
`/original/c/<name>/curriculum/...`); the episode is the same.

Episodes play the original's fixed worlds (`domain.original`) at its chaos level
(difficulty 2; a reset may ask for another with ``difficulty``), scored with the original's
per-action reward (`projections.original`).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
from typing import Any

from fastapi import APIRouter, Body, Depends, HTTPException, Path
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, ConfigDict, Field

from companyos.domain import ORIGINAL_DIFFICULTY
from companyos.domain.original import TASK_IDS, draw_task, resolve_task
from companyos.events import NEW_STREAM, ConcurrencyConflict, EventStore
from companyos.events.types import ClientEpisodeSet

from ..cache import EpisodeCache
from ..episode import MAX_SEED, EpisodeNotFound
from . import render

PROFILE = "original_per_action"
DEFAULT_CLIENT = "default"
CLIENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NO_EPISODE = {409: {"description": "This client has no episode yet: POST its reset first."}}


class OriginalReset(BaseModel):
    """The original's reset body. Unknown keys are ignored, as the original ignored them."""

    model_config = ConfigDict(extra="ignore")
    task_id: str | None = Field(
        default=None,
        max_length=64,
        description=f"One of {', '.join(TASK_IDS)}; default: drawn from the seed.",
    )
    seed: int | None = Field(
        default=None,
        ge=0,
        le=MAX_SEED,
        strict=True,
        description="Seed of the episode's chance draws; default: a fresh one.",
    )
    difficulty: int | None = Field(
        default=None,
        ge=0,
        le=3,
        strict=True,
        description="Chance rates 0-3 (an addition; default 2, the original's).",
    )


class OriginalStep(BaseModel):
    """The original's step body: the call itself, flat."""

    model_config = ConfigDict(extra="ignore")
    app: str = Field(max_length=64, description="ticketdesk | datahub | approvalflow")
    method: str = Field(max_length=64, description="A method of the app.")
    params: dict[str, Any] = Field(default_factory=dict, description="Its keyword arguments.")


class Clients:
    """Which episode each compatibility client is on: the last `ClientEpisodeSet` of its
    stream, cached by the stream's version (one version read per step)."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._seen: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def stream(client: str) -> str:
        return f"original-client:{client}"

    def current(self, client: str) -> str | None:
        stream = self.stream(client)
        version = self.store.version(stream)
        if version == NEW_STREAM:
            return None
        with self._lock:
            hit = self._seen.get(stream)
        if hit is not None and hit[0] == version:
            return hit[1]
        last = self.store.read(stream, version, version)[-1].event
        assert isinstance(last, ClientEpisodeSet)
        with self._lock:
            self._seen[stream] = (version, last.episode_id)
        return last.episode_id

    def point(self, client: str, episode_id: str) -> None:
        stream = self.stream(client)
        event = ClientEpisodeSet(client=client, episode_id=episode_id)
        for _ in range(20):  # resets racing on one client: the last to append wins
            try:
                self.store.append(stream, [event], self.store.version(stream))
                return
            except ConcurrencyConflict:
                continue
        raise HTTPException(503, f"client {client!r} is being reset concurrently; retry")


def named_client(
    client: str = Path(
        pattern=CLIENT.pattern, description="The client's name: its own default episode."
    ),
) -> str:
    return client


def default_client() -> str:
    return DEFAULT_CLIENT


def build_original_router(store: EventStore, cache: EpisodeCache, new_env: Any) -> APIRouter:
    router = APIRouter(tags=["Original CompanyOS (compatibility)"])
    clients = Clients(store)

    def reset(client: str, body: OriginalReset | None, curriculum: bool) -> dict[str, Any]:
        body = body or OriginalReset()
        if body.task_id is None:
            seed = secrets.randbelow(2**31) if body.seed is None else body.seed
            task = draw_task(seed)
        else:
            found = resolve_task(body.task_id) or resolve_task(f"task_{body.task_id}")
            if found is None:
                raise HTTPException(
                    400, f"unknown task_id {body.task_id!r}: use one of {', '.join(TASK_IDS)}"
                )
            task, seed = found, body.seed
        previous = clients.current(client)
        env = new_env()
        obs = env.reset(
            seed=seed,
            task_id=task,
            difficulty=ORIGINAL_DIFFICULTY if body.difficulty is None else body.difficulty,
            reward_profile=PROFILE,
            agent=f"original:{client}",
        )
        clients.point(client, obs.episode_id)
        if previous is not None:  # the original replaced its episode; ours stays on record
            _abandon(previous)
        world = env.episode.world
        return {
            "observation": render.observation(world, {}, render.STARTED, curriculum),
            "episode_id": obs.episode_id,
        }

    def _abandon(episode_id: str) -> None:
        try:
            episode = cache.get(episode_id)
        except EpisodeNotFound:
            return
        with contextlib.suppress(ConcurrencyConflict):  # still being stepped: it stays open
            episode.abandon()

    def step(client: str, body: OriginalStep, curriculum: bool) -> dict[str, Any]:
        episode_id = clients.current(client)
        if episode_id is None:
            raise HTTPException(409, f"client {client!r} has no episode yet: POST its reset first")
        episode = cache.get(episode_id, check=False)
        for _ in range(3):
            before = episode.snapshot
            if before.world.ended:
                world = before.world
                return {
                    "observation": render.observation(world, {}, render.ENDED, curriculum),
                    "reward": 0.0,
                    "done": True,
                    "info": render.info(world, before.score),
                    "episode_id": episode_id,
                }
            try:
                result = episode.step(body.app, body.method, body.params)
            except ConcurrencyConflict:  # another request moved it on: decide again on it
                episode = cache.reload(episode_id)
                continue
            world, score = episode.world, episode.score
            shown = render.result(world, before.world, result.caused, (body.app, body.method))
            return {
                "observation": render.observation(
                    world, shown, render.end_message(result.outcome), curriculum
                ),
                "reward": result.reward,
                "done": world.ended,
                "info": render.info(world, score),
                "episode_id": episode_id,
            }
        raise HTTPException(409, "the episode is being stepped concurrently; retry")

    def current_render(client: str) -> dict[str, Any]:
        episode_id = clients.current(client)
        if episode_id is None:
            return render.render(None, None)
        episode = cache.get(episode_id)
        return render.render(episode.world, episode.score)

    for prefix, named in (("/original", False), ("/original/c/{client}", True)):
        for curriculum in (False, True):
            base = prefix + ("/curriculum" if curriculum else "")
            _routes(router, base, named, curriculum, reset, step, current_render)
    router.add_api_route(
        "/original/docs",
        lambda: RedirectResponse("/docs", status_code=307),
        methods=["GET"],
        include_in_schema=False,
    )
    return router


def _routes(
    router: APIRouter,
    base: str,
    named: bool,
    curriculum: bool,
    reset: Any,
    step: Any,
    current_render: Any,
) -> None:
    """One set of the original's routes under ``base`` (``{client}`` in it when ``named``)."""
    who = Depends(named_client if named else default_client)
    whose = "the named client's" if named else "the default client's"
    view = " (the observation with progress flags)" if curriculum else ""

    def do_reset(
        body: OriginalReset | None = Body(default=None), client: str = who
    ) -> dict[str, Any]:
        return reset(client, body, curriculum)  # type: ignore[no-any-return]

    def do_step(body: OriginalStep = Body(), client: str = who) -> dict[str, Any]:
        return step(client, body, curriculum)  # type: ignore[no-any-return]

    def do_render(client: str = who) -> dict[str, Any]:
        return current_render(client)  # type: ignore[no-any-return]

    def do_health(client: str = who) -> dict[str, str]:
        return {"status": "ok", "env": "CompanyOS", "version": render.VERSION}

    def do_manifest(client: str = who) -> dict[str, Any]:
        return {"tools": render.MANIFEST, "action_format": render.ACTION_FORMAT}

    def do_root(client: str = who) -> dict[str, str]:
        return {
            "message": "CompanyOS: the original's API (compatibility surface)",
            "docs": "/docs",
            "health": f"{base}/health".replace("{client}", client),
        }

    routes: list[tuple[str, Any, list[str], str, dict[Any, Any] | None]] = [
        ("/reset", do_reset, ["POST"], f"Start {whose} episode{view}", None),
        ("/step", do_step, ["POST"], f"One call in {whose} episode{view}", NO_EPISODE),
        ("/render", do_render, ["GET"], f"Snapshot of {whose} episode", None),
        ("/health", do_health, ["GET"], "Liveness, as the original answered it", None),
        ("/manifest", do_manifest, ["GET"], "The tools, as the original listed them", None),
        ("/", do_root, ["GET"], "What this surface is", None),
    ]
    for path, endpoint, methods, summary, responses in routes:
        router.add_api_route(
            base + path,
            endpoint,
            methods=methods,
            summary=summary,
            responses=responses,
            name=f"original{base}{path}",
        )
    # A load balancer's probe may use HEAD; it has no body to document.
    router.add_api_route(f"{base}/health", do_health, methods=["HEAD"], include_in_schema=False)
