"""The point of no return of a failed episode: the last step after which the oracle, taking
over, still succeeds within the episode's step budget.

For each step k the question is the one a real fork answers
(``CompanyOSEnvironment.reset(fork_from=episode, at_step=k)`` and the in-process oracle agent
playing until the fork ends), but asked in memory: the world after k steps is a fold of the log,
and the oracle's continuation is played by calling the step decider directly, the way
``api.episode.Episode.step`` does, with nothing written to any store. The answer is the same as
a real fork's, step for step, because everything a continuation depends on is rebuilt exactly:

* the world: the fold of the source's first k steps (a fork's stream is that prefix; its
  lineage mark changes nothing that a decider or the oracle reads);
* the chance during play (transient faults, approval latency, chance rejections, outages...):
  every draw is keyed on ``(episode seed, seq, purpose)``, the seed is the source's, and the
  ``seq`` of each continuation call is the fork's stream version + 1. A fork's stream is the
  source's events before its (k+1)-th call minus any ``EpisodeEnded`` (only an abandonment can
  sit there), so its first call gets the seq the source's (k+1)-th call had; after that each
  step appends what it caused, a ``StepScored`` and, last, an ``EpisodeEnded``, and the
  simulation counts the same. Same seq, same draws;
* success and timeout: decided by ``projections.score_step`` from the milestones carried over
  from the prefix, exactly as the environment decides them (the reward numbers themselves do not
  matter here and are not kept);
* the oracle: ``domain.plan`` on the live world, and when it has nothing to do the call the
  oracle agent makes instead (`LOOK`, the agent's harmless listing).

Why a scan from the end and not a bisection: whether the oracle wins from step k is not monotone
in k. The continuation from k draws its chaos at other seqs than the one from k-1 (a fault or a
chance rejection may strike one and spare the other), and an agent's step may help (a poll that
collects a decision, a needed fix), so "wins from k" can be false while "wins from k+1" is true.
The largest winning k is found by trying k = n-1, n-2, ... and stopping at the first win. That
is also cheap: the answer is usually near the end, and a continuation from a late k has few
steps left to play.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import NamedTuple

from companyos.domain import DEFAULT_LIMITS, Call, Limits, World, decide_step, fold, plan
from companyos.domain.rng import episode_rng
from companyos.events.store import RecordedEvent
from companyos.events.types import EpisodeEnded, Event, ToolCalled
from companyos.projections import ScoreState, replay, score_step
from companyos.projections.replay import Replay, events_of

LOOK = Call("approvalflow", "list_approvals", {})
"""What the oracle agent (`agents.oracle.LOOK`) calls when the planner has nothing to do: a
listing that changes nothing. The agents layer is out of reach from here; a test checks that
the two are the same call."""

FAILED = frozenset({"timeout", "abandoned", "failure"})


class Continuation(NamedTuple):
    """How the oracle's play from a fork point ended."""

    outcome: str
    """"success" or "timeout"."""
    steps: int
    """The step the continuation ended at (counted from the episode's start, like a fork)."""
    world: World
    """The world it ended in (marked with the outcome, as a fork's would be)."""
    version: int
    """The stream version the fork would end at (its last event's seq)."""


class SimulatedForks:
    """Every fork of one stored episode, simulated in memory. Folds the stream once; each
    `continue_from` then only plays the oracle's steps."""

    def __init__(
        self,
        records: Sequence[RecordedEvent | Event],
        limits: Limits = DEFAULT_LIMITS,
        replayed: Replay | None = None,
    ) -> None:
        self.limits = limits
        self.replay: Replay = replayed if replayed is not None else replay(records)
        events = events_of(records)
        setup = self.replay.setup
        assert setup.info is not None  # replay refuses a stream without EpisodeStarted
        info = setup.info
        self.rng = episode_rng(info.seed, info.scenario, info.difficulty)
        self.outcome: str | None = self.replay.outcome
        self.steps = len(self.replay.steps)
        # The stream version a fork at k starts from: the events before the (k+1)-th call (all
        # of them for k = n), less the end markers a fork drops, minus one.
        self._versions: list[int] = []
        kept = 0  # events before this one that a fork would copy
        for e in events:
            if isinstance(e, ToolCalled):
                self._versions.append(kept - 1)
            kept += not isinstance(e, EpisodeEnded)
        self._versions.append(kept - 1)
        # Only an abandonment may sit inside a fork's prefix: a fork after a success or a
        # timeout is refused (and there is nothing left to play).
        self.forkable = range(
            0, self.steps + 1 if self.outcome in (None, "abandoned") else self.steps
        )

    def _score_at(self, k: int) -> ScoreState:
        """The reward projection's state after k steps, as far as the outcome depends on it:
        the milestones achieved (and their potential). Totals and penalty budgets only change
        reward numbers, never whether a step succeeds or times out."""
        r = self.replay
        achieved = r.graph.achieved(r.setup) if k == 0 else r.steps[k - 1].score.achieved
        return ScoreState(phi=r.graph.potential(achieved, r.profile), achieved=achieved)

    def continue_from(self, k: int) -> Continuation:
        """Fork at step k (0: the start) and let the oracle play until the fork ends."""
        if k not in self.forkable:
            raise ValueError(
                f"cannot fork at step {k}: the forkable steps are {self.forkable.start}.."
                f"{self.forkable.stop - 1}"
            )
        r, rng, limits = self.replay, self.rng, self.limits
        world = r.world_at(k)
        if world.outcome == "abandoned":  # the fork drops the marker and plays on
            world = world._replace(outcome=None)
        score = self._score_at(k)
        version = self._versions[k]
        while True:
            call = plan(world) or LOOK
            caused = decide_step(
                world, call.app, call.method, call.params, version + 1, rng, limits
            )
            after = fold(caused, world)
            score, s = score_step(score, after, caused, r.graph, r.profile, world)
            version += len(caused) + 1  # what the step caused, then its StepScored
            world = after
            if s.outcome is not None:
                return Continuation(
                    s.outcome, world.step, world._replace(outcome=s.outcome), version + 1
                )

    def oracle_wins_from(self, k: int) -> bool:
        return self.continue_from(k).outcome == "success"

    def point_of_no_return(self) -> int | None:
        if self.outcome not in FAILED:
            return None
        for k in reversed(self.forkable):  # not monotone in k: see the module's docstring
            if self.oracle_wins_from(k):
                return k
        return None


def point_of_no_return(
    records: Sequence[RecordedEvent | Event],
    limits: Limits = DEFAULT_LIMITS,
    replayed: Replay | None = None,
) -> int | None:
    """The last step k after which the oracle, playing on from a fork at k, still succeeds
    within the episode's ``max_steps``: the episode was lost at step k + 1.

    Defined for an ended, failed episode (outcome timeout or abandoned); a success or a running
    episode gives None. k ranges over the steps a fork may be taken at: 0..n-1 for a timeout
    (n = steps played; a fork at n would start already timed out), 0..n for an abandonment (the
    player walked away from a state the oracle may still win from: then k = n, and no step lost
    the episode, see `lost_at`). None also if the oracle loses even from step 0, which should
    not happen with the episode's own budget (every instance's budget covers the oracle's worst
    case), but can with a ``max_steps`` chosen smaller at reset.

    ``limits`` are the environment's (`domain.Limits`): they shape how a call's params are
    cleaned, so pass the ones the real environment would use if they are not the defaults.
    """
    return SimulatedForks(records, limits, replayed).point_of_no_return()


def lost_at(
    records: Sequence[RecordedEvent | Event], limits: Limits = DEFAULT_LIMITS
) -> int | None:
    """The step that lost the episode: the point of no return + 1. None when no step did: a
    success, a running episode, no winning fork at all, or an abandonment that walked away
    from a state the oracle still wins from."""
    forks = SimulatedForks(records, limits)
    k = forks.point_of_no_return()
    return None if k is None or k >= forks.steps else k + 1


def points_of_no_return(
    streams: Iterable[Sequence[RecordedEvent | Event]],
    workers: int = 1,
    limits: Limits = DEFAULT_LIMITS,
) -> list[int | None]:
    """`point_of_no_return` of each stream, in order. With ``workers`` > 1 the streams are
    spread over that many processes (each episode is independent and CPU-bound, so threads
    would only take turns). An episode costs a few milliseconds (median about 2.5 ms over
    naive and random failures), so shipping it to a worker costs about as much as solving it:
    on a busy two-core machine the pool measured slower than the loop. Use it with many idle
    cores and many episodes; the default is the plain loop."""
    one = partial(point_of_no_return, limits=limits)
    if workers <= 1:
        return [one(s) for s in streams]
    # Plain events pickle in half the bytes of stored records and fold the same.
    batch = [events_of(s) for s in streams]
    if not batch:
        return []
    chunk = max(1, len(batch) // (workers * 4))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, batch, chunksize=chunk))


__all__ = [
    "FAILED",
    "LOOK",
    "Continuation",
    "SimulatedForks",
    "lost_at",
    "point_of_no_return",
    "points_of_no_return",
]
