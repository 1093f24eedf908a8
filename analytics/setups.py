"""`projections.replay.replay` for the warehouse, with each distinct set-up folded once.

Every trial of an instance by one agent opens with the very same events (the episode's start,
its task, the world's tickets, metrics, approvers, chaos): the same stored payloads, hence the
same hashes, since an event's hash covers its seq, type, version, payload and the hash before
it, not the stream's id. Folding those forty-odd events, building the task's milestone graph
and scoring the initial world is a good part of a replay; here it is done once per distinct
set-up (keyed by the hash of its last event) and the steps are folded from there.

The result is the `Replay` that `replay` returns (`tests/test_warehouse_parallel.py` and the
warehouse tests compare them): the same fold, the same scoring loop (`projections.replay
._steps`), the same end-of-episode rules. Sharing a milestone graph between streams is sound:
its memo maps world parts, compared by identity, to the value of pure predicates on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from companyos.domain.model import World
from companyos.domain.world import fold
from companyos.events.types import Event
from companyos.projections.milestones import MilestoneGraph, milestones_for
from companyos.projections.replay import Replay, replay_after_setup, setup_length
from companyos.projections.reward import RewardProfile, ScoreState, get_profile, initial_score


class _Setup(NamedTuple):
    world: World
    graph: MilestoneGraph
    profile: RewardProfile
    score: ScoreState


class SetupCache:
    """Folded set-ups by the hash of their last event (bounded: cleared when full)."""

    def __init__(self, max_size: int = 512) -> None:
        self.max_size = max_size
        self._cache: dict[tuple[str, int], _Setup] = {}
        self.hits = 0

    def replay(self, events: Sequence[Event], hashes: Sequence[str]) -> Replay:
        """``replay(events)``; ``hashes`` are the stored hashes of the same events."""
        n_setup = setup_length(events)
        key = (hashes[n_setup - 1], n_setup) if n_setup else None
        found = self._cache.get(key) if key is not None else None
        if found is None:
            found = self._fold(events[:n_setup])
            if key is not None:
                if len(self._cache) >= self.max_size:
                    self._cache.clear()
                self._cache[key] = found
        else:
            self.hits += 1
        return _replay_from(found, events, n_setup)

    @staticmethod
    def _fold(setup_events: Sequence[Event]) -> _Setup:
        setup = fold(setup_events)
        if setup.info is None or setup.task is None:
            raise ValueError(
                "not an episode stream: it does not start with EpisodeStarted/TaskAssigned"
            )
        prof = get_profile(setup.info.reward_profile)
        graph = milestones_for(setup.task.goal)
        return _Setup(setup, graph, prof, initial_score(setup, graph, prof))


def _replay_from(s: _Setup, events: Sequence[Event], n_setup: int) -> Replay:
    return replay_after_setup(events, n_setup, s.world, s.graph, s.profile, s.score)
