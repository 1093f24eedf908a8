"""What the log makes possible, over HTTP: browse episodes, read their events, travel to any
step, fork, verify; plus the original's `/manifest` and `/render`, and a `/state` that can name
its episode (plain OpenEnv `/state` has nothing to show over stateless HTTP)."""

from __future__ import annotations

import functools
import threading
import uuid
from collections import OrderedDict
from typing import Any, Literal

import orjson
from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from companyos.domain import APPS
from companyos.events import EventStore
from companyos.projections import (
    Headline,
    headline,
    progress,
    render_world,
    replay,
    summarize,
    tool_manifest,
)

from .cache import EpisodeCache
from .environment import CompanyOSEnvironment, state_of
from .episode import EPISODE_ID, EpisodeNotFound
from .episode_state import latest_state, not_found, state_at
from .json_answer import JSONAnswer, json_answer
from .models import CompanyOSState
from .verify import verify_episode

Outcome = Literal["success", "failure", "timeout", "abandoned", "running"]
MAX_POSITION = 2**63 - 1
MAX_SEQ = 2**31 - 1
"""Bounds of the store's position and seq columns: a larger number is a 422, not a 500."""
SCAN_BUDGET = 2000
"""Streams one listing request may look at; the `next` cursor continues the scan."""


class ForkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    at_step: int = Field(
        ge=0, le=MAX_SEQ, description="Fork after this step (0: from the initial world)."
    )
    episode_id: str | None = Field(default=None, max_length=128, description="The fork's id.")


class HeadlineCache:
    """Listing rows by (episode, version): a row is recomputed only when its stream grew."""

    def __init__(self, store: EventStore, capacity: int = 20_000) -> None:
        self.store = store
        self.capacity = capacity
        self._rows: OrderedDict[str, tuple[int, Headline | None]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, stream: str, version: int) -> Headline | None:
        with self._lock:
            hit = self._rows.get(stream)
        if hit is not None and hit[0] == version:
            return hit[1]
        first = self.store.read(stream, 0, 0)
        row = headline(first[0], self.store.read(stream, max(1, version - 1))) if first else None
        with self._lock:
            self._rows[stream] = (version, row)
            while len(self._rows) > self.capacity:
                self._rows.popitem(last=False)
        return row


@functools.cache
def _manifest_json() -> bytes:
    return orjson.dumps(
        {
            "apps": list(APPS),
            "action": {
                "app": "ticketdesk",
                "method": "get_ticket",
                "params": {"ticket_id": "TKT-1042"},
                "episode_id": "(from /reset)",
            },
            "tools": tool_manifest(),
        }
    )


def _known(episode_id: str) -> str:
    if not EPISODE_ID.match(episode_id):
        raise HTTPException(404, f"no episode {episode_id!r}")
    return episode_id


def episode_records(store: EventStore, episode_id: str, to_seq: int | None = None) -> list[Any]:
    """The stored events of an episode up to ``to_seq`` (None: all), or a 404."""
    records = store.read(_known(episode_id), 0, to_seq)
    if not records or records[0].type != "EpisodeStarted":
        raise not_found(episode_id)
    return records


def episode_start(store: EventStore, episode_id: str) -> Any:
    """The first event of a stored episode, or a 404: what a route that only needs to know
    the episode exists reads (not the whole stream, thousands of events for a long one)."""
    return episode_records(store, episode_id, 0)[0]


def build_router(
    store: EventStore,
    cache: EpisodeCache,
    new_env: Any,
    *,
    max_page: int = 200,
    max_events_page: int = 2000,
) -> APIRouter:
    """The routes; ``max_page`` and ``max_events_page`` cap the ``limit`` of the listing and of
    an episode's events (a larger one gets 422)."""
    router = APIRouter()
    rows = HeadlineCache(store)

    @router.get(
        "/episodes",
        tags=["Episodes"],
        summary="List stored episodes",
        response_model=dict[str, Any],
    )
    def list_episodes(
        limit: int = Query(min(50, max_page), ge=1, le=max_page, description="Rows per page."),
        after: int = Query(
            0,
            ge=0,
            le=MAX_POSITION,
            description="Cursor, oldest first: the `next` of the previous page.",
        ),
        order: Literal["oldest", "newest"] = Query(
            "oldest", description="oldest first (pages with `after`) or newest first (`before`)."
        ),
        before: int | None = Query(
            None,
            ge=0,
            le=MAX_POSITION,
            description="Cursor, newest first: the `next` of the previous page.",
        ),
        outcome: Outcome | None = Query(None, description="Only this outcome."),
        scenario: str | None = Query(None, max_length=64, description="Only this scenario."),
        difficulty: int | None = Query(None, ge=0, le=3, description="Only this difficulty."),
        agent: str | None = Query(None, max_length=64, description="Only this agent's."),
    ) -> Response:
        found: list[dict[str, Any]] = []
        newest = order == "newest"
        cursor: int | None = before if newest else after
        scanned = 0
        while len(found) < limit and scanned < SCAN_BUDGET:
            if newest:
                page = store.streams(limit=200, newest_first=True, before_position=cursor)
            else:
                page = store.streams(after_position=cursor or 0, limit=200)
            if not page:
                cursor = None
                break
            for info in page:
                scanned += 1
                cursor = info.first_position
                row = rows.get(info.stream_id, info.version)
                if row is None:
                    continue
                if outcome is not None and (row.outcome or "running") != outcome:
                    continue
                if scenario is not None and row.scenario != scenario:
                    continue
                if difficulty is not None and row.difficulty != difficulty:
                    continue
                if agent is not None and row.agent != agent:
                    continue
                found.append(row.as_dict())
                if len(found) >= limit:
                    break
        return json_answer({"episodes": found, "next": cursor, "scanned": scanned})

    @router.get(
        "/episodes/{episode_id}",
        tags=["Episodes"],
        summary="One episode's summary",
        response_model=dict[str, Any],
    )
    def get_episode(episode_id: str) -> Response:
        records = episode_records(store, episode_id)
        r = replay(records)
        out = summarize(records, r).as_dict()
        assert r.setup.task is not None
        out["task"] = r.setup.task.text
        out["progress"] = progress(r.graph, r.score.achieved)
        return json_answer(out)

    @router.get(
        "/episodes/{episode_id}/events",
        tags=["Episodes"],
        summary="An episode's events, in order",
        response_model=dict[str, Any],
    )
    def get_events(
        episode_id: str,
        from_seq: int = Query(0, ge=0, le=MAX_SEQ),
        limit: int = Query(min(500, max_events_page), ge=1, le=max_events_page),
    ) -> Response:
        head = episode_start(store, episode_id)
        records = store.read(head.stream, from_seq, from_seq + limit - 1)
        events = [
            {
                "seq": r.seq,
                "position": r.position,
                "type": r.type,
                "schema_version": r.schema_version,
                "data": r.data,
                "hash": r.hash,
                "recorded_at": r.recorded_at,
            }
            for r in records
        ]
        version = store.version(head.stream)
        nxt = records[-1].seq + 1 if records and records[-1].seq < version else None
        return json_answer(
            {"episode_id": head.stream, "events": events, "next_seq": nxt, "version": version}
        )

    @router.get(
        "/episodes/{episode_id}/state",
        tags=["Episodes"],
        summary="The world at any step (time travel)",
        response_model=dict[str, Any],
    )
    async def get_state_at(
        episode_id: str,
        step: int | None = Query(None, ge=0, le=MAX_SEQ, description="Default: the latest step."),
    ) -> Response:
        if step is None:
            # Bounded work (the cached fold, or a snapshot and at most SNAPSHOT_EVERY events
            # after it), done on the event loop as a /ws step is: the thread pool's two trips
            # cost more than the answer (0.5 ms of 1.2 here).
            return json_answer(latest_state(store, _known(episode_id), cache.get))
        # A past step replays the stream up to it: in the pool, not holding up the loop.
        return await run_in_threadpool(
            lambda: json_answer(state_at(episode_records(store, episode_id), episode_id, step))
        )

    @router.post(
        "/episodes/{episode_id}/fork",
        tags=["Episodes"],
        summary="Fork an episode after a step (same as reset(fork_from, at_step))",
    )
    def fork_episode(episode_id: str, body: ForkRequest) -> dict[str, Any]:
        episode_start(store, episode_id)
        env: CompanyOSEnvironment = new_env()
        obs = env.reset(
            fork_from=episode_id,
            at_step=body.at_step,
            episode_id=body.episode_id or str(uuid.uuid4()),
        )
        return {
            "episode_id": obs.episode_id,
            "forked_from": episode_id,
            "at_step": body.at_step,
            "observation": obs.model_dump(exclude={"tools"}),
        }

    @router.post(
        "/episodes/{episode_id}/verify",
        tags=["Episodes"],
        summary="Check the hash chain and re-simulate the episode",
    )
    def verify(episode_id: str) -> dict[str, Any]:
        episode_start(store, episode_id)
        return verify_episode(store, episode_id).as_dict()

    @router.get(
        "/manifest",
        tags=["Environment Info"],
        summary="Tools, for prompting",
        response_model=dict[str, Any],
    )
    async def manifest() -> Response:
        # The catalogue is fixed for the process's life: encoded once (it took 2.3 ms to
        # build, 5-7 ms a request with FastAPI's checks and the thread pool).
        return JSONAnswer(_manifest_json())

    @router.get(
        "/render",
        tags=["State Management"],
        summary="Snapshot of every app in an episode (as the original's /render)",
        response_model=dict[str, Any],
    )
    async def render(episode_id: str = Query(..., max_length=128)) -> Response:
        # The latest world: bounded work, on the event loop (as the latest state above).
        try:
            episode = cache.get(_known(episode_id))
        except EpisodeNotFound as exc:
            raise HTTPException(404, str(exc)) from None
        return json_answer(render_world(episode.world))

    @router.get(
        "/state",
        response_model=CompanyOSState,
        tags=["State Management"],
        summary="Current state of an episode",
    )
    def state(request: Request, episode_id: str | None = Query(None, max_length=128)) -> Any:
        """OpenEnv's `/state`; over stateless HTTP name the episode with `?episode_id=`."""
        if episode_id is None:
            return CompanyOSState(episode_id=None, step_count=0)
        try:
            return state_of(cache.get(_known(episode_id)))
        except EpisodeNotFound as exc:
            raise HTTPException(404, str(exc)) from None

    return router
