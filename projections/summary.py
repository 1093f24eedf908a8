"""One row per episode: what analytics, the episode API and the viewer list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from companyos.events.store import RecordedEvent
from companyos.events.types import ActionRejected, FaultInjected, InvalidAction

from .replay import replay


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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(records: Sequence[RecordedEvent]) -> EpisodeSummary:
    r = replay(records)
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
    )
