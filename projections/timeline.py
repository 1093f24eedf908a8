"""An episode as a timeline, one record per step: what the agent called, what it got back, what
chaos struck, what the step earned and which milestones it gained or lost, and the world after
it with what changed. This is what the replay viewer shows; it is a fold of the log like every
other projection (`replay` does the folding, this only arranges it for reading).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from companyos.events.store import RecordedEvent
from companyos.events.types import ChaosInjected, Event, FaultInjected

from .milestones import progress
from .observation import render_result, render_world
from .replay import Replay, StepRecord, events_of, replay, setup_length
from .summary import summarize
from .world_diff import IDENTITY_KEYS, Change, diff


@dataclass(frozen=True, slots=True)
class FailureLabel:
    label: str
    """What went wrong: a key of `projections.mistakes.LABELS` (e.g. "used_stale_data")."""
    step: int | None
    """The step of the first unrecovered mistake (None when no single step is to blame)."""
    detail: str = ""
    """What happened, in words."""


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Why an episode failed: its decisive mistake (`projections.mistakes`) and its
    point of no return (`analytics.no_return`). Both None for a success or a running episode."""

    failure: FailureLabel | None = None
    point_of_no_return: int | None = None
    """The last step after which success was still reachable, if known."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "failure": None
            if self.failure is None
            else {
                "label": self.failure.label,
                "step": self.failure.step,
                "detail": self.failure.detail,
            },
            "point_of_no_return": self.point_of_no_return,
        }


UNDIAGNOSED = Diagnosis()

# The step counter and the clock move on every step (and with the clock every metric's age);
# the timeline already says which step and time it is. What time changes (a metric turning
# stale, a request decided or expired) still shows.
_NOISE = {("episode", "step"), ("episode", "clock_minutes"), ("episode", "time")}
_NOISE_LEAVES = {"age_hours", "stale_days"}


def _chaos(e: ChaosInjected) -> dict[str, Any]:
    return {"kind": e.kind, "target": e.target, "params": e.params}


def _fault(e: FaultInjected) -> dict[str, Any]:
    return {"app": e.app, "method": e.method, "kind": e.kind}


def world_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    return [c.as_dict() for c in diff(before, after) if c.path not in _NOISE and not _ages(c)]


def _ages(c: Change) -> bool:
    """A metric growing older (its age, and the hours in a stale metric's warning)."""
    if c.op != "changed" or not c.path:
        return False
    leaf = c.path[-1]
    return leaf in _NOISE_LEAVES or (leaf == "warning" and bool(c.before) and bool(c.after))


def _step_record(r: Replay, s: StepRecord, before: dict[str, Any], world: dict[str, Any]) -> Any:
    result, message, error = render_result(s.world, s.events)
    score = s.score
    return {
        "step": s.step,
        "call": {
            "app": s.call.app,
            "method": s.call.method,
            "params": s.call.params,
            "refused": s.call.refused,
        },
        "result": result,
        "message": message,
        "error": error,
        "events": [e.type for e in s.events],
        "chaos": [_chaos(e) for e in s.events if isinstance(e, ChaosInjected)],
        "faults": [_fault(e) for e in s.events if isinstance(e, FaultInjected)],
        "reward": score.reward,
        "terms": score.terms,
        "return": score.total,
        "gained": list(score.gained),
        "lost": list(score.lost),
        "progress": progress(r.graph, score.achieved),
        "outcome": score.outcome,
        "world": world,
        "changes": world_changes(before, world),
    }


def timeline(
    records: Sequence[RecordedEvent],
    diagnosis: Diagnosis = UNDIAGNOSED,
    from_step: int = 1,
    limit: int | None = None,
    replayed: Replay | None = None,
) -> dict[str, Any]:
    """The episode's summary, its initial world, and steps ``from_step`` .. ``from_step +
    limit - 1`` (each with the world after it and the changes from the world before it).
    ``replayed``: the stream's `replay`, when the caller has it already."""
    r = replayed if replayed is not None else replay(records)
    n = len(r.steps)
    if from_step < 1 or (n and from_step > n):
        raise ValueError(f"from_step must be from 1 to {max(n, 1)} (the episode has {n} steps)")
    last = n if limit is None else min(n, from_step - 1 + limit)
    assert r.setup.task is not None

    events = events_of(records)
    setup_events: list[Event] = events[: setup_length(events)]
    initial = render_world(r.setup)
    before = initial if from_step == 1 else render_world(r.world_at(from_step - 1))
    steps = []
    for s in r.steps[from_step - 1 : last]:
        world = render_world(s.world)
        steps.append(_step_record(r, s, before, world))
        before = world

    episode = summarize(records, r).as_dict()
    episode.update(
        task=r.setup.task.text,
        milestones=[{"id": m.id, "kind": m.kind, "prereqs": list(m.prereqs)} for m in r.graph],
        progress=progress(r.graph, r.score.achieved),
        **diagnosis.as_dict(),
    )
    return {
        "episode_id": records[0].stream,
        "episode": episode,
        "initial": {
            "world": initial,
            "chaos": [_chaos(e) for e in setup_events if isinstance(e, ChaosInjected)],
            "progress": progress(r.graph, r.graph.achieved(r.setup)),
        },
        "steps": steps,
        "identity_keys": list(IDENTITY_KEYS),
        "from_step": from_step,
        "next_step": last + 1 if last < n else None,
    }
