"""Rows of the ``approvals`` and ``chaos`` tables, folded from one episode stream's events.

Pure functions of the events (no store, no DuckDB): the warehouse calls them for every stream
it derives. A step is the ``step`` of the last `ToolCalled` before an event; events before the
first tool call are the episode's set-up (step 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from companyos.domain.world import FAULT_KINDS
from companyos.events.chain import canonical
from companyos.events.types import (
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalPolled,
    ApprovalSubmitted,
    ChaosInjected,
    Event,
    FaultInjected,
    ToolCalled,
)

CHANCE = "chance"
"""``ApprovalDecided.cause`` of a rejection drawn by chance (chaos), not earned by the request."""


_LIFECYCLE = (ApprovalPolled, ApprovalDecided, ApprovalEscalated, ApprovalExpired)


def _steps(events: Sequence[Event]) -> list[tuple[int, Event]]:
    """Every event with the step it happened in (0: set-up)."""
    out: list[tuple[int, Event]] = []
    step = 0
    for e in events:
        if isinstance(e, ToolCalled):
            step = e.step
        out.append((step, e))
    return out


def approval_rows(episode_id: str, events: Sequence[Event]) -> list[tuple[Any, ...]]:
    """One row per approval request of the episode, its whole lifecycle (``approvals``)."""
    rows: dict[str, list[Any]] = {}
    for step, e in _steps(events):
        if isinstance(e, ApprovalSubmitted):
            rows[e.approval_id] = [
                episode_id,
                e.approval_id,
                e.approval_type,
                e.approver,
                e.ticket_id,
                canonical(e.data).decode(),
                step,
                0,  # polls
                None,  # last_polled_step
                "pending",  # status
                None,  # decided_step
                None,  # decision
                None,  # cause
                None,  # reason
                False,  # chance_rejection
                0,  # escalations
                None,  # expired_step
            ]
            continue
        if not isinstance(e, _LIFECYCLE):
            continue
        row = rows.get(e.approval_id)
        if row is None:
            continue  # about a request this stream never made (cannot happen in a valid log)
        if isinstance(e, ApprovalPolled):
            row[7], row[8] = e.polls, step
        elif isinstance(e, ApprovalDecided):
            row[9], row[10], row[11], row[12], row[13] = (
                e.decision,
                step,
                e.decision,
                e.cause,
                e.reason,
            )
            row[14] = row[14] or (e.decision == "rejected" and e.cause == CHANCE)
        elif isinstance(e, ApprovalEscalated):
            row[9], row[15] = "pending", row[15] + 1
        elif isinstance(e, ApprovalExpired):
            row[9], row[16] = "expired", step
    return [tuple(r) for r in rows.values()]


def chaos_rows(episode_id: str, events: Sequence[Event]) -> list[tuple[Any, ...]]:
    """One row per piece of chaos in the episode (``chaos``): each `ChaosInjected`, and each
    `FaultInjected` (a refused call) under its chaos kind with the tool as its target."""
    out: list[tuple[Any, ...]] = []
    for step, e in _steps(events):
        phase = "setup" if step == 0 else "live"
        if isinstance(e, ChaosInjected):
            params = canonical(e.params).decode()
            out.append((episode_id, step, phase, e.kind, e.target, params, "ChaosInjected"))
        elif isinstance(e, FaultInjected):
            kind = FAULT_KINDS.get(e.kind, e.kind)
            fault = {
                "fault": e.kind,
                "retry_after_minutes": e.retry_after_minutes,
                "until_minute": e.until_minute,
            }
            params = canonical({k: v for k, v in fault.items() if v is not None}).decode()
            target = f"{e.app}.{e.method}"
            out.append((episode_id, step, phase, kind, target, params, "FaultInjected"))
    return out
