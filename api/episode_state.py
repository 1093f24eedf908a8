"""`GET /episodes/{id}/state`: the world of a stored episode at a step, as the viewer and
scripts read it.

The latest state (no ``step``, the common case) comes from the episode's fold as the server
holds it or `Episode.load` finds it (its latest snapshot and the events after it) and the
last call from the stream's tail, so it costs the same whatever the episode's length. A step
in the past is a replay of the stream up to it. Both give the same answer at the latest step
(`tests/test_episode_state.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import HTTPException

from companyos.events import EventStore
from companyos.events.types import ToolCalled
from companyos.projections import achieved, progress, render_world, replay

from .episode import Episode, EpisodeNotFound

TAIL = 4
"""Events read back from the end of a stream to find its last call (widened if need be)."""


def not_found(episode_id: str) -> HTTPException:
    return HTTPException(404, f"no episode {episode_id!r}: list them at GET /episodes")


def latest_state(
    store: EventStore, episode_id: str, load: Callable[[str], Episode] | None = None
) -> dict[str, Any]:
    """The episode's state after its last step; ``load`` gives the episode as stored (default
    `Episode.load`; the server passes its cache's `get`, which checks the stored version)."""
    try:
        episode = load(episode_id) if load is not None else Episode.load(store, episode_id)
    except EpisodeNotFound:
        raise not_found(episode_id) from None
    world, score, version = episode.snapshot
    call = last_call(store, episode_id, version)
    return _state(
        episode_id,
        world.step,
        world.step,
        world.outcome,
        score.total,
        progress(episode.graph, score.achieved),
        call,
        render_world(world),
    )


def state_at(records: list[Any], episode_id: str, step: int | None) -> dict[str, Any]:
    """The episode's state after ``step`` steps (None: the last), by replaying ``records``."""
    r = replay(records)
    n = len(r.steps)
    k = n if step is None else step
    if k > n:
        raise HTTPException(400, f"step must be from 0 to {n} (the steps of {episode_id})")
    at = r.steps[k - 1] if k else None
    return _state(
        episode_id,
        k,
        n,
        r.outcome if k == n else None,
        at.score.total if at else 0.0,
        progress(r.graph, at.score.achieved if at else achieved(r.setup, r.graph)),
        at.call if at else None,
        render_world(r.world_at(k)),
    )


def last_call(store: EventStore, episode_id: str, version: int) -> ToolCalled | None:
    """The stream's last `ToolCalled` (None: no call yet), read from its tail up to ``version``
    (the one the answer's episode was loaded at: a later append cannot mix in). Read again
    even after a load from the store: a cached episode reads nothing, and no fold keeps it."""
    window = TAIL
    while True:
        start = max(0, version - window + 1)
        for r in reversed(store.read(episode_id, from_seq=start, to_seq=version)):
            if isinstance(r.event, ToolCalled):
                return r.event
        if start == 0:
            return None
        window *= 4


def _state(
    episode_id: str,
    step: int,
    steps: int,
    outcome: str | None,
    total: float,
    shown: dict[str, bool],
    call: ToolCalled | None,
    world: dict[str, Any],
) -> dict[str, Any]:
    return {
        "episode_id": episode_id,
        "step": step,
        "steps": steps,
        "outcome": outcome,
        "cumulative_return": total,
        "progress": shown,
        "last_call": None
        if call is None
        else {"app": call.app, "method": call.method, "params": call.params},
        "world": world,
    }
