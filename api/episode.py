"""One episode as an aggregate: its folded world, stream version and score, and the operations
that extend its stream (start, step, abandon) or start another from it (fork).

Each step is decided, folded and scored in memory, then appended in one atomic append with the
stream version it was decided on. If the append fails nothing changes here; the in-memory state
is only ever the fold of what the store accepted.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from companyos.domain import (
    DEFAULT_LIMITS,
    Limits,
    World,
    build_episode,
)
from companyos.domain.chaos import LEVELS
from companyos.domain.decider import decide_and_fold
from companyos.domain.instances import UnknownScenario, start_world
from companyos.domain.model import (
    Approval,
    ApprovalField,
    ApprovalType,
    AppRules,
    ChaosLedger,
    EpisodeInfo,
    Evidence,
    Metric,
    Person,
    Services,
    Task,
    Ticket,
)
from companyos.domain.rng import episode_rng
from companyos.events import NEW_STREAM, ConcurrencyConflict, EventStore, RecordedEvent
from companyos.events.snapshots import Snapshot as StoredSnapshot
from companyos.events.store import Head
from companyos.events.types import (
    EpisodeEnded,
    EpisodeStarted,
    Event,
    ForkRef,
    InvalidAction,
    StepScored,
    ToolCalled,
)
from companyos.projections import (
    MilestoneGraph,
    RewardProfile,
    ScoreState,
    get_profile,
    graph_for,
    initial_score,
    replay,
    resume,
    score_step,
)

SNAPSHOT_EVERY = 128
"""Events between two snapshots of an episode's fold: a load folds at most this many."""


def _fold_tag() -> str:
    """Names the code that folds: the package version and the shape of the folded state. A
    snapshot taken by other code is ignored (folded again), never trusted."""
    shapes = [
        World, Ticket, Metric, Person, Approval, Evidence, ApprovalType, ApprovalField,
        EpisodeInfo, Task, ChaosLedger, Services, AppRules, ScoreState,
    ]  # fmt: skip
    shape = hashlib.sha256(repr([(t.__name__, t._fields) for t in shapes]).encode()).hexdigest()
    try:
        version = importlib.metadata.version("companyos")
    except importlib.metadata.PackageNotFoundError:
        version = "0"
    return f"fold/1:{version}:{shape[:16]}"


FOLD_TAG = _fold_tag()
EPISODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
MAX_SEED = 2**63 - 1
MAX_EPISODE_STEPS = 1000
"""The default cap on a reset's ``max_steps`` (a server may set another)."""


class ResetError(ValueError):
    """The reset arguments are wrong; the message says what to send instead."""


class EpisodeNotFound(LookupError):
    pass


class EpisodeExists(ResetError):
    """The id asked for is taken (a conflict, not a malformed request)."""


@dataclass(frozen=True, slots=True)
class StepResult:
    head: Head
    """The stream's last event after the step."""
    caused: list[Event]
    reward: float
    outcome: str | None


def check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ResetError(f"seed must be an integer from 0 to 2**63-1, not {seed!r}")
    return seed


def check_difficulty(difficulty: Any) -> int:
    if isinstance(difficulty, bool) or not isinstance(difficulty, int) or difficulty not in LEVELS:
        raise ResetError(f"difficulty must be one of {sorted(LEVELS)}, not {difficulty!r}")
    return difficulty


def check_agent(agent: Any) -> str | None:
    if agent is not None and (not isinstance(agent, str) or not 1 <= len(agent) <= 64):
        raise ResetError(f"agent must be a label of 1-64 characters, not {agent!r}")
    return agent


def check_episode_id(episode_id: Any) -> str:
    if not isinstance(episode_id, str) or not EPISODE_ID.match(episode_id):
        raise ResetError(
            "episode_id must be 1-128 characters of letters, digits and . _ : - "
            f"(starting with a letter or digit), not {episode_id!r}"
        )
    return episode_id


def _create(store: EventStore, episode_id: str, events: list[Event]) -> Head:
    """Append a new stream; another reset that took the same id first is a conflict on the id."""
    try:
        return store.extend(episode_id, events, NEW_STREAM)
    except ConcurrencyConflict:
        raise EpisodeExists(f"episode {episode_id!r} already exists: pick a new id") from None


class Snapshot(NamedTuple):
    """The episode as of one stream version: replaced whole, never edited, so a step decided
    on one snapshot is appended with that snapshot's version even if another thread has
    moved the episode on meanwhile (and then fails with a conflict, as it should)."""

    world: World
    score: ScoreState
    version: int


class Episode:
    def __init__(
        self,
        store: EventStore,
        episode_id: str,
        world: World,
        version: int,
        graph: MilestoneGraph,
        profile: RewardProfile,
        score: ScoreState,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        assert world.info is not None
        self.store = store
        self.id = episode_id
        self.graph = graph
        self.profile = profile
        self.limits = limits
        self.rng = episode_rng(world.info.seed, world.info.scenario, world.info.difficulty)
        self.snapshot = Snapshot(world, score, version)
        self.stored_at = -1
        """The version of the latest snapshot kept in the store (-1: none known)."""

    @property
    def world(self) -> World:
        return self.snapshot.world

    @property
    def score(self) -> ScoreState:
        return self.snapshot.score

    @property
    def version(self) -> int:
        return self.snapshot.version

    # ------------------------------------------------------------------ construction

    @classmethod
    def start(
        cls,
        store: EventStore,
        episode_id: str,
        *,
        seed: int,
        task_id: str | int | None,
        difficulty: int,
        reward_profile: str = "default",
        max_steps: int | None = None,
        agent: str | None = None,
        limits: Limits = DEFAULT_LIMITS,
        max_episode_steps: int = MAX_EPISODE_STEPS,
        show_progress: bool = False,
    ) -> Episode:
        check_seed(seed)
        if not isinstance(show_progress, bool):
            raise ResetError(f"show_progress must be true or false, not {show_progress!r}")
        check_agent(agent)
        check_difficulty(difficulty)
        check_episode_id(episode_id)
        if not isinstance(reward_profile, str):
            raise ResetError(f"reward_profile must be a profile's name, not {reward_profile!r}")
        try:
            profile = get_profile(reward_profile)
        except ValueError as exc:
            raise ResetError(str(exc)) from None
        if max_steps is not None and (
            isinstance(max_steps, bool)
            or not isinstance(max_steps, int)
            or not 1 <= max_steps <= max_episode_steps
        ):
            raise ResetError(
                f"max_steps must be an integer from 1 to {max_episode_steps} (this server's "
                f"cap), not {max_steps!r}"
            )
        if store.version(episode_id) != NEW_STREAM:
            raise EpisodeExists(
                f"episode {episode_id!r} already exists: pick a new id, or fork it with "
                "reset(fork_from=..., at_step=...)"
            )
        try:
            events = build_episode(
                task_id,
                seed,
                difficulty,
                reward_profile=profile.name,
                max_steps=max_steps,
                agent=agent,
                show_progress=show_progress,
            )
        except UnknownScenario as exc:
            raise ResetError(str(exc)) from None
        head = _create(store, episode_id, events)
        world = start_world(events)
        assert world.task is not None
        graph = graph_for(world.task.goal)  # shared by the instance's episodes
        return cls(
            store,
            episode_id,
            world,
            head.version,
            graph,
            profile,
            initial_score(world, graph, profile),
            limits,
        )

    @classmethod
    def from_records(
        cls, store: EventStore, records: list[RecordedEvent], limits: Limits = DEFAULT_LIMITS
    ) -> Episode:
        r = replay(records)
        return cls(
            store, records[0].stream, r.world, records[-1].seq, r.graph, r.profile, r.score, limits
        )

    @classmethod
    def load(cls, store: EventStore, episode_id: str, limits: Limits = DEFAULT_LIMITS) -> Episode:
        """The episode as stored: from its latest snapshot and the events after it when the
        snapshot still fits the stream (so a load folds at most `SNAPSHOT_EVERY` events,
        however long the episode), else by folding the whole stream."""
        resumed = cls._from_snapshot(store, episode_id, limits)
        if resumed is not None:
            return resumed
        records = store.read(episode_id)
        if not records or not isinstance(records[0].event, EpisodeStarted):
            raise EpisodeNotFound(f"no episode {episode_id!r} in the store")
        episode = cls.from_records(store, records, limits)
        if episode.version >= SNAPSHOT_EVERY:  # the next load need not fold it all again
            episode.keep_snapshot(records[-1].hash)
        return episode

    @classmethod
    def _from_snapshot(cls, store: EventStore, episode_id: str, limits: Limits) -> Episode | None:
        snap = store.load_snapshot(episode_id)
        if snap is None or snap.tag != FOLD_TAG:
            return None
        records = store.read(episode_id, from_seq=snap.version)
        if not records or records[0].seq != snap.version or records[0].hash != snap.hash:
            return None  # the stream is not the one the snapshot was folded from
        world, score = snap.state
        world, score, graph, profile = resume(world, score, records[1:])
        episode = cls(store, episode_id, world, records[-1].seq, graph, profile, score, limits)
        episode.stored_at = snap.version
        return episode

    def caught_up(self) -> Episode | None:
        """This episode moved on to the store's current version by folding only the events
        appended since its own (the fold continued, as from a snapshot: equal to a full load,
        `tests/test_snapshots.py`); None if the stream is not a continuation of it."""
        world, score, version = self.snapshot
        records = self.store.read(self.id, from_seq=version + 1)
        if not records:
            return self
        if records[0].seq != version + 1:
            return None
        world, score, graph, profile = resume(world, score, records)
        fresh = Episode(
            self.store, self.id, world, records[-1].seq, graph, profile, score, self.limits
        )
        fresh.stored_at = self.stored_at
        return fresh

    def keep_snapshot(self, head_hash: str) -> None:
        """Store the fold as of the current version (``head_hash``: its last event's hash)."""
        world, score, version = self.snapshot
        self.store.save_snapshot(
            StoredSnapshot(self.id, version, head_hash, FOLD_TAG, (world, score))
        )
        self.stored_at = version

    @classmethod
    def fork(
        cls,
        store: EventStore,
        source_id: str,
        at_step: int,
        episode_id: str,
        limits: Limits = DEFAULT_LIMITS,
        agent: str | None = None,
        show_progress: bool | None = None,
    ) -> Episode:
        """A new episode whose stream is the source's prefix up to the end of step ``at_step``,
        its first event marked ``forked_from`` (and relabelled with ``agent``, who plays on;
        ``show_progress``, if given, says whether its agent is shown the milestones); the
        source stream is not touched."""
        check_episode_id(episode_id)
        check_agent(agent)
        if show_progress is not None and not isinstance(show_progress, bool):
            raise ResetError(f"show_progress must be true or false, not {show_progress!r}")
        # Not an id at all (a number, an object): nothing to look up, and nothing the store
        # should be asked (a driver refuses to bind such a value).
        valid = isinstance(source_id, str) and EPISODE_ID.match(source_id)
        records = store.read(source_id) if valid else []
        if not records or not isinstance(records[0].event, EpisodeStarted):
            raise ResetError(f"cannot fork {source_id!r}: no such episode")
        calls = [i for i, r in enumerate(records) if isinstance(r.event, ToolCalled)]
        if (
            isinstance(at_step, bool)
            or not isinstance(at_step, int)
            or not 0 <= at_step <= len(calls)
        ):
            raise ResetError(
                f"at_step must be an integer from 0 to {len(calls)} (the steps of {source_id}), "
                f"not {at_step!r}"
            )
        end = calls[at_step] if at_step < len(calls) else len(records)
        prefix = [r.event for r in records[:end]]
        if any(isinstance(e, EpisodeEnded) and e.outcome != "abandoned" for e in prefix):
            raise ResetError(
                f"{source_id} had already ended by step {at_step}: fork at an earlier step"
            )
        prefix = [e for e in prefix if not isinstance(e, EpisodeEnded)]
        if store.version(episode_id) != NEW_STREAM:
            raise EpisodeExists(f"episode {episode_id!r} already exists: pick a new id")
        started = prefix[0]
        assert isinstance(started, EpisodeStarted)
        update: dict[str, Any] = {"forked_from": ForkRef(episode_id=source_id, at_step=at_step)}
        if agent is not None:
            update["agent"] = agent
        if show_progress is not None:
            update["show_progress"] = show_progress
        first = started.model_copy(update=update)
        _create(store, episode_id, [first, *prefix[1:]])
        return cls.load(store, episode_id, limits)

    # ------------------------------------------------------------------ play

    def step(
        self, app: Any, method: Any, params: Any, refuse: InvalidAction | None = None
    ) -> StepResult:
        """Decide, score and append one call (``refuse``: a refusal to record in its place).
        Raises `ConcurrencyConflict` (and changes nothing) if the stream moved on since the
        snapshot the step was decided on."""
        before = self.snapshot
        caused, world = decide_and_fold(
            before.world, app, method, params, before.version + 1, self.rng, self.limits, refuse
        )
        score, s = score_step(before.score, world, caused, self.graph, self.profile, before.world)
        tail: list[Event] = [
            StepScored(
                step=world.step,
                reward=s.reward,
                total=s.total,
                gained=s.gained,
                lost=s.lost,
                terms=s.terms,
            )
        ]
        if s.outcome is not None:
            tail.append(EpisodeEnded(outcome=s.outcome, step=world.step))  # type: ignore[arg-type]
            world = world._replace(outcome=s.outcome)
        head = self.store.extend(self.id, [*caused, *tail], before.version)
        self.snapshot = Snapshot(world, score, head.version)
        if head.version - self.stored_at >= SNAPSHOT_EVERY:
            self.keep_snapshot(head.hash)
        return StepResult(head, caused, s.reward, s.outcome)

    def abandon(self) -> None:
        """Close a live episode that its player left (a new reset in the same session)."""
        before = self.snapshot
        if before.world.ended:
            return
        head = self.store.extend(
            self.id, [EpisodeEnded(outcome="abandoned", step=before.world.step)], before.version
        )
        self.snapshot = before._replace(
            world=before.world._replace(outcome="abandoned"), version=head.version
        )
