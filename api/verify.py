"""Verification of a stored episode: check its hash chain, then re-simulate its recorded calls
from its recorded seed and compare the two chains event by event.

A mismatch in the chain means the stored bytes were altered; a divergence in re-simulation
means the events do not follow from the seed and the calls (tampering that rewrote the chain,
or a change in the simulation's code since the episode was recorded).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from companyos.domain import DEFAULT_LIMITS, Limits
from companyos.domain.instances import GENERATOR, build_episode
from companyos.events import NEW_STREAM, EventStore, InMemoryEventStore, first_broken_link
from companyos.events.types import EpisodeEnded, EpisodeStarted, ToolCalled

from .episode import Episode

RESIMULATION_LIMITS = Limits(
    max_string=2**62, max_params_chars=2**62, max_items=2**62, max_depth=DEFAULT_LIMITS.max_depth
)
"""Re-simulation takes every recorded call the recording server accepted, whatever the size
limits it was configured with (a call it refused is replayed from its recorded events)."""


@dataclass(frozen=True, slots=True)
class VerifyReport:
    episode_id: str
    ok: bool
    events: int
    chain_ok: bool
    first_broken_seq: int | None
    resimulated: bool
    first_divergent_seq: int | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def verify_episode(store: EventStore, episode_id: str) -> VerifyReport:
    records = store.read(episode_id)
    if not records or not isinstance(records[0].event, EpisodeStarted):
        return VerifyReport(
            episode_id, False, len(records), False, None, False, None, f"no episode {episode_id!r}"
        )
    broken = first_broken_link(records)
    started = records[0].event
    if started.generator != GENERATOR or records[0].schema_version != started.schema_version:
        return VerifyReport(
            episode_id,
            broken is None,
            len(records),
            broken is None,
            broken,
            False,
            None,
            f"recorded by {started.generator!r} (schema v{records[0].schema_version}); only the "
            "hash chain can be checked",
        )
    sim = InMemoryEventStore()
    sim.append(
        episode_id,
        build_episode(
            started.scenario,
            started.seed,
            started.difficulty,
            reward_profile=started.reward_profile,
            max_steps=started.max_steps,
            forked_from=started.forked_from,
            agent=started.agent,
        ),
        NEW_STREAM,
    )
    episode = Episode.load(sim, episode_id, RESIMULATION_LIMITS)
    calls = [r for r in records if isinstance(r.event, ToolCalled)]
    for call in calls:
        e = call.event
        assert isinstance(e, ToolCalled)
        if e.refused is not None:
            # Refused params were never stored, so the call cannot be re-made: its recorded
            # events (covered by the chain check) stand in for it.
            step_events = [r.event for r in records[call.seq :]]
            end = next(
                (i for i, ev in enumerate(step_events[1:], 1) if isinstance(ev, ToolCalled)),
                len(step_events),
            )
            chunk = [
                ev
                for ev in step_events[:end]
                if not (isinstance(ev, EpisodeEnded) and ev.outcome == "abandoned")
            ]
            sim.append(episode_id, chunk, episode.version)
            episode = Episode.load(sim, episode_id, RESIMULATION_LIMITS)
        elif not episode.world.ended:
            episode.step(e.app, e.method, e.params)
    last = records[-1].event
    if isinstance(last, EpisodeEnded) and last.outcome == "abandoned":
        episode.abandon()
    mine = sim.read(episode_id)
    divergent = next((a.seq for a, b in zip(records, mine, strict=False) if a.hash != b.hash), None)
    if divergent is None and len(mine) != len(records):
        divergent = min(len(mine), len(records))
    ok = broken is None and divergent is None
    if ok:
        message = f"verified: {len(records)} events, hash chain intact, re-simulation identical"
    elif broken is not None:
        message = f"hash chain broken at seq {broken}: the stored event was altered"
    else:
        message = f"re-simulation diverges at seq {divergent}"
    return VerifyReport(
        episode_id, ok, len(records), broken is None, broken, True, divergent, message
    )
