"""One row per episode: what analytics, the episode API and the viewer list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from companyos.events.store import RecordedEvent
from companyos.events.types import (
    ActionRejected,
    EpisodeEnded,
    EpisodeStarted,
    FaultInjected,
    InvalidAction,
    StepScored,
)

from .replay import Replay, replay
from .reward import get_profile


@dataclass(frozen=True, slots=True)
class EpisodeSummary:
    episode_id: str
    scenario: str
    seed: int
    difficulty: int
    max_steps: int
    reward_profile: str
    steps: int
    outcome: str | None
    total_return: float
    invalid_actions: int
    rejected_actions: int
    faults: int
    milestones: tuple[str, ...]
    chaos_kinds: tuple[str, ...]
    forked_from: str | None
    fork_step: int | None
    events: int
    agent: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(records: Sequence[RecordedEvent], replayed: Replay | None = None) -> EpisodeSummary:
    """``replayed``: the stream's `replay`, when the caller has it already."""
    r = replayed if replayed is not None else replay(records)
    info = r.setup.info
    assert info is not None
    caused = [e for s in r.steps for e in s.events]
    return EpisodeSummary(
        episode_id=records[0].stream,
        scenario=info.scenario,
        seed=info.seed,
        difficulty=info.difficulty,
        max_steps=info.max_steps,
        reward_profile=info.reward_profile,
        steps=len(r.steps),
        outcome=r.outcome,
        total_return=r.total,
        invalid_actions=sum(isinstance(e, InvalidAction) for e in caused),
        rejected_actions=sum(isinstance(e, ActionRejected) for e in caused),
        faults=sum(isinstance(e, FaultInjected) for e in caused),
        milestones=tuple(m.id for m in r.graph if m.id in r.score.achieved),
        chaos_kinds=tuple(sorted(r.world.chaos.kinds)),
        forked_from=info.forked_from[0] if info.forked_from else None,
        fork_step=info.forked_from[1] if info.forked_from else None,
        events=len(records),
        agent=getattr(records[0].event, "agent", None),
    )


@dataclass(frozen=True, slots=True)
class Headline:
    """An episode's listing row, from its first event and its last two (no replay needed)."""

    episode_id: str
    scenario: str
    seed: int
    difficulty: int
    max_steps: int
    steps: int
    outcome: str | None
    total_return: float
    forked_from: str | None
    agent: str | None
    events: int
    created_at: float
    updated_at: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def headline(first: RecordedEvent, tail: Sequence[RecordedEvent]) -> Headline | None:
    """None when the stream is not an episode (a session's orphan calls)."""
    started = first.event
    if not isinstance(started, EpisodeStarted):
        return None
    outcome, steps, total = None, 0, 0.0
    abandon = 0.0
    for r in tail:
        e = r.event
        if isinstance(e, StepScored):
            steps, total = e.step, e.total
        elif isinstance(e, EpisodeEnded):
            outcome, steps = e.outcome, e.step
            if e.outcome == "abandoned":
                profile = get_profile(started.reward_profile)
                abandon = profile.abandoned(e.step, started.max_steps)
    last = tail[-1] if tail else first
    return Headline(
        episode_id=first.stream,
        scenario=started.scenario,
        seed=started.seed,
        difficulty=started.difficulty,
        max_steps=started.max_steps,
        steps=steps,
        outcome=outcome,
        total_return=round(total + abandon, 6),
        forked_from=started.forked_from.episode_id if started.forked_from else None,
        agent=started.agent,
        events=last.seq + 1,
        created_at=first.recorded_at,
        updated_at=last.recorded_at,
    )
