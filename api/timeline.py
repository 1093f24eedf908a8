"""`GET /episodes/{id}/timeline`: an episode step by step, for the replay viewer (and anyone
else who wants to read one). The work is the `timeline` projection; this only checks the
request and pages."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query

from companyos.analytics.no_return import point_of_no_return
from companyos.events import EventStore
from companyos.events.store import RecordedEvent
from companyos.projections.diagnosis import diagnose
from companyos.projections.timeline import UNDIAGNOSED, Diagnosis, FailureLabel, timeline

from .episode import EPISODE_ID

MAX_PAGE = 500
"""Steps per response: an episode may have up to 1,000 and each carries its world (~6 KB)."""


def diagnosis_of(records: list[RecordedEvent]) -> Diagnosis:
    """Failure analysis of an ended, failed episode, worked out on the spot: both parts are
    pure folds of its stream (the point of no return replays simulated forks, a few ms), so
    the viewer never shows a label that is out of date with the log."""
    mistake = diagnose(records)
    if mistake is None:
        return UNDIAGNOSED
    return Diagnosis(
        failure=FailureLabel(mistake.label, mistake.step, mistake.detail),
        point_of_no_return=point_of_no_return(records),
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
        from_step: int = Query(1, ge=1, description="First step to return."),
        limit: int = Query(100, ge=1, le=MAX_PAGE, description="Steps per page."),
    ) -> dict[str, Any]:
        records = store.read(episode_id) if EPISODE_ID.match(episode_id) else []
        if not records or records[0].type != "EpisodeStarted":
            raise HTTPException(404, f"no episode {episode_id!r}: list them at GET /episodes")
        try:
            return timeline(records, diagnosis_of(records), from_step=from_step, limit=limit)
        except ValueError as exc:  # a from_step past the end
            raise HTTPException(400, str(exc)) from None

    return router
