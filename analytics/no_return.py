"""The point of no return of a failed episode: the last step after which a player taking
over, with the budget left, still succeeds.

The player is the honest solver by default (`projections.forks`): it reads the transcript of the
steps so far and plays on from observations only, so the point of no return says when the agent
went wrong, not when a full-knowledge oracle ran out of budget. ``player="oracle"`` keeps the
privileged planner for comparisons. The forks are simulated in memory, with the same outcome as
a real fork played on by the same player (`projections.forks` says why). If the honest solver
cannot win even from the start, the instance is unsolvable (with that budget): the answer is
None and failure analysis labels the instance, never the agent.

Why a scan from the end and not a bisection: whether the player wins from step k is not monotone
in k (each continuation draws its chaos at other seqs, and an agent's step may help), so the
largest winning k is found by trying k = n-1, n-2, ... and stopping at the first win."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from companyos.domain import DEFAULT_LIMITS, Limits
from companyos.events.store import RecordedEvent
from companyos.events.types import Event
from companyos.projections.forks import FAILED, LOOK, PLAYERS, Continuation, SimulatedForks
from companyos.projections.replay import Replay, events_of


def point_of_no_return(
    records: Sequence[RecordedEvent | Event],
    limits: Limits = DEFAULT_LIMITS,
    replayed: Replay | None = None,
    player: str = "honest",
) -> int | None:
    """The last step k after which the player (the honest solver unless ``player`` says
    "oracle"), playing on from a fork at k, still succeeds within the episode's
    ``max_steps``: the episode was lost at step k + 1.

    Defined for an ended, failed episode (outcome timeout or abandoned); a success or a running
    episode gives None. k ranges over the steps a fork may be taken at: 0..n-1 for a timeout
    (n = steps played; a fork at n would start already timed out), 0..n for an abandonment (the
    player walked away from a state the oracle may still win from: then k = n, and no step lost
    the episode, see `lost_at`). None also if the player loses even from step 0: an unsolvable
    instance (which should not happen with the episode's own budget, but can with a
    ``max_steps`` chosen smaller at reset).

    ``limits`` are the environment's (`domain.Limits`): they shape how a call's params are
    cleaned, so pass the ones the real environment would use if they are not the defaults.
    """
    return SimulatedForks(records, limits, replayed, player).point_of_no_return()


def lost_at(
    records: Sequence[RecordedEvent | Event],
    limits: Limits = DEFAULT_LIMITS,
    player: str = "honest",
) -> int | None:
    """The step that lost the episode: the point of no return + 1. None when no step did: a
    success, a running episode, no winning fork at all, or an abandonment that walked away
    from a state the oracle still wins from."""
    forks = SimulatedForks(records, limits, player=player)
    k = forks.point_of_no_return()
    return None if k is None or k >= forks.steps else k + 1


def points_of_no_return(
    streams: Iterable[Sequence[RecordedEvent | Event]],
    workers: int = 1,
    limits: Limits = DEFAULT_LIMITS,
    player: str = "honest",
) -> list[int | None]:
    """`point_of_no_return` of each stream, in order. With ``workers`` > 1 the streams are
    spread over that many processes (each episode is independent and CPU-bound, so threads
    would only take turns). An episode costs a few milliseconds (median about 2.5 ms over
    naive and random failures), so shipping it to a worker costs about as much as solving it:
    on a busy two-core machine the pool measured slower than the loop. Use it with many idle
    cores and many episodes; the default is the plain loop."""
    one = partial(point_of_no_return, limits=limits, player=player)
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
    "PLAYERS",
    "Continuation",
    "SimulatedForks",
    "lost_at",
    "point_of_no_return",
    "points_of_no_return",
]
