"""`GET /episodes/{id}/timeline`: an episode step by step, for the replay viewer (and anyone
else who wants to read one). The work is the `timeline` projection; this only checks the
request and pages."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query

from companyos.events import EventStore
from companyos.events.store import RecordedEvent
from companyos.projections.mistakes import analyse
from companyos.projections.replay import Replay, replay
from companyos.projections.timeline import UNDIAGNOSED, Diagnosis, FailureLabel, timeline

from .routes import episode_records

MAX_PAGE = 500
"""Steps per response: an episode may have up to 1,000 and each carries its world (~6 KB)."""


def diagnosis_of(records: list[RecordedEvent], r: Replay) -> Diagnosis:
    """Failure analysis of an ended, failed episode, worked out on the spot: both parts are
    pure folds of its stream (the decisive mistake and the point of no return play
    simulated honest forks), so
    the viewer never shows a label that is out of date with the log. ``r``: its `replay`."""
    found = analyse(records, r, with_point_of_no_return=True)
    mistake = found.decisive
    if mistake is None:
        return UNDIAGNOSED
    return Diagnosis(
        failure=FailureLabel(mistake.label, mistake.step, mistake.evidence),
        point_of_no_return=found.point_of_no_return,
    )


def build_timeline_router(store: EventStore) -> APIRouter:
    router = APIRouter()

    @router.get(
        "/episodes/{episode_id}/timeline",
        tags=["Episodes"],
        summary="An episode step by step: calls, results, chaos, rewards, milestones, world diffs",
    )
    def get_timeline(
        episode_id: str,
        from_step: int = Query(1, ge=0, description="First step to return (0: the first)."),
        limit: int = Query(100, ge=1, le=MAX_PAGE, description="Steps per page."),
    ) -> dict[str, Any]:
        records = episode_records(store, episode_id)
        try:
            r = replay(records)  # once, for the diagnosis and the timeline alike
            return timeline(
                records,
                diagnosis_of(records, r),
                from_step=max(1, from_step),  # step 0 is the start: no call to show
                limit=limit,
                replayed=r,
            )
        except ValueError as exc:  # a from_step past the end
            raise HTTPException(400, str(exc)) from None

    return router
