"""Folding a stored stream: the world at any step, per-step scores, re-scoring under another
reward profile. Replay needs only the log (the initial world is in it), never the generator
or the RNG."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from companyos.domain.model import World
from companyos.domain.world import fold
from companyos.events.store import RecordedEvent
from companyos.events.types import EpisodeEnded, Event, StepScored, ToolCalled

from .milestones import MilestoneGraph, milestones_for
from .reward import RewardProfile, ScoreState, StepScore, get_profile, initial_score, score_step


def events_of(records: Sequence[RecordedEvent | Event]) -> list[Event]:
    return [r.event if isinstance(r, RecordedEvent) else r for r in records]


@dataclass(frozen=True, slots=True)
class StepRecord:
    step: int
    call: ToolCalled
    events: tuple[Event, ...]
    """What the call caused, without the reward cache and the end marker."""
    world: World
    """The world after the step."""
    score: StepScore
    first_index: int
    """Index of the step's `ToolCalled` in the stream (its seq for a whole stream)."""


@dataclass(slots=True)
class Replay:
    setup: World
    graph: MilestoneGraph
    profile: RewardProfile
    steps: list[StepRecord] = field(default_factory=list)
    outcome: str | None = None
    total: float = 0.0
    score: ScoreState = field(default_factory=ScoreState)

    @property
    def world(self) -> World:
        return self.steps[-1].world if self.steps else self.setup

    def world_at(self, step: int) -> World:
        """The world after ``step`` tool calls (0: the initial world)."""
        if step <= 0 or not self.steps:
            return self.setup
        return self.steps[min(step, len(self.steps)) - 1].world


def setup_length(events: Sequence[Event]) -> int:
    for i, e in enumerate(events):
        if isinstance(e, ToolCalled):
            return i
    return len(events)


def replay(
    records: Sequence[RecordedEvent | Event], profile: RewardProfile | str | None = None
) -> Replay:
    """Fold a whole stream step by step, scoring each step with ``profile`` (default: the
    profile the episode was started with)."""
    events = events_of(records)
    n_setup = setup_length(events)
    setup = fold(events[:n_setup])
    if setup.info is None or setup.task is None:
        raise ValueError(
            "not an episode stream: it does not start with EpisodeStarted/TaskAssigned"
        )
    if profile is None:
        profile = setup.info.reward_profile
    prof = get_profile(profile) if isinstance(profile, str) else profile
    graph = milestones_for(setup.task.goal)
    return replay_after_setup(
        events, n_setup, setup, graph, prof, initial_score(setup, graph, prof)
    )


def replay_after_setup(
    events: Sequence[Event],
    n_setup: int,
    setup: World,
    graph: MilestoneGraph,
    prof: RewardProfile,
    score: ScoreState,
) -> Replay:
    """`replay` from a set-up already folded and scored (``events[:n_setup]`` gave ``setup``,
    its graph and opening ``score``): callers that fold one set-up for many streams share it."""
    r = Replay(setup, graph, prof, score=score)
    # An episode quit before its first call has its end inside what is read as set-up.
    r.outcome = setup.outcome
    world, score = setup, r.score
    for i, e, caused, after, scored, s in _steps(events, n_setup, setup, r.score, graph, prof):
        world, score = after, scored
        if e is None:
            r.outcome = world.outcome
        else:
            assert s is not None
            r.steps.append(StepRecord(e.step, e, caused, world, s, i))
    r.score = score
    r.total = score.total
    if r.outcome == "abandoned":
        assert world.info is not None
        r.total = round(r.total + prof.abandoned(world.step, world.info.max_steps), 6)
    if r.steps and r.outcome is not None:
        last = r.steps[-1]
        r.steps[-1] = StepRecord(
            last.step, last.call, last.events, world, last.score, last.first_index
        )
    return r


Stepped = tuple[int, ToolCalled | None, tuple[Event, ...], World, ScoreState, StepScore | None]


def _steps(
    events: Sequence[Event],
    start: int,
    world: World,
    score: ScoreState,
    graph: MilestoneGraph,
    prof: RewardProfile,
) -> Iterator[Stepped]:
    """Fold and score ``events[start:]`` from (``world``, ``score``): yields each step (its
    index, call, caused events, the world and score after it) and each end marker (call
    None). Replay and a load from a snapshot go through this one loop."""
    i = start
    while i < len(events):
        e = events[i]
        if isinstance(e, EpisodeEnded):
            world = fold([e], world)
            yield i, None, (), world, score, None
            i += 1
            continue
        if not isinstance(e, ToolCalled):
            i += 1  # only caches and markers sit outside a step
            continue
        j = i + 1
        while j < len(events) and not isinstance(events[j], ToolCalled | StepScored | EpisodeEnded):
            j += 1
        caused = tuple(events[i + 1 : j])
        before, world = world, fold((e, *caused), world)
        score, s = score_step(score, world, caused, graph, prof, before)
        yield i, e, caused, world, score, s
        i = j


def resume(
    world: World, score: ScoreState, records: Sequence[RecordedEvent | Event]
) -> tuple[World, ScoreState, MilestoneGraph, RewardProfile]:
    """The fold continued: the world and score after ``records``, from the world and score
    before them (a snapshot's), scored with the episode's own profile. Equal to folding the
    whole stream (`tests/test_snapshots.py`)."""
    assert world.info is not None and world.task is not None
    prof = get_profile(world.info.reward_profile)
    graph = milestones_for(world.task.goal)
    for _, _, _, after, scored, _ in _steps(events_of(records), 0, world, score, graph, prof):
        world, score = after, scored
    return world, score, graph, prof


def cached_rewards(records: Sequence[RecordedEvent | Event]) -> list[float]:
    return [e.reward for e in events_of(records) if isinstance(e, StepScored)]
