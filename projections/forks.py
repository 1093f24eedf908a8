"""Forks of a stored episode, simulated in memory: "could a player taking over at step k still
win with the budget left?".

A real fork (``CompanyOSEnvironment.reset(fork_from=episode, at_step=k)``) copies the stream's
first k steps and plays on. Here the same continuation is computed without any store: the world
after k steps is a fold of the log and each continuation call goes through the step decider the
way ``api.episode.Episode.step`` does. The answer is a real fork's, step for step:

* the world: the fold of the source's first k steps (a fork's stream is that prefix);
* chance: every draw is keyed on ``(episode seed, seq, purpose)`` and the ``seq`` of each
  continuation call is the fork's stream version + 1 (the source's events before its (k+1)-th
  call minus any ``EpisodeEnded``; then each step appends what it caused and a ``StepScored``);
* success and timeout: `score_step` from the milestones carried over from the prefix.

Two players can take over:

* ``honest`` (the default): the honest solver (`domain.honest`), which sees only observations.
  It first reads the transcript of the k steps played so far (each call the agent made and what
  it was shown, as a person taking over a colleague's session would), then plays on. This is
  the question failure analysis asks: from here, could someone who sees what the agent saw
  still succeed?
* ``oracle``: the privileged planner (`domain.plan`), which reads the world. Kept for
  comparisons; it measures when a full-knowledge player runs out of budget, not when the agent
  went wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from companyos.domain import DEFAULT_LIMITS, Call, Limits, World, plan
from companyos.domain.decider import decide_and_fold
from companyos.domain.honest import HonestSolver, Seen
from companyos.domain.rendering import render_result
from companyos.domain.rng import episode_rng
from companyos.events.store import RecordedEvent
from companyos.events.types import EpisodeEnded, Event, ToolCalled

from .replay import Replay, events_of, replay
from .reward import fork_outcome

LOOK = Call("approvalflow", "list_approvals", {})
"""What the oracle agent (`agents.oracle.LOOK`) calls when the planner has nothing to do: a
listing that changes nothing. A test checks that the two are the same call."""

FAILED = frozenset({"timeout", "abandoned", "failure"})
PLAYERS = ("honest", "oracle")
_SOLVABLE: dict[tuple[object, ...], bool] = {}
"""Whether an instance is solved from the start, by (instance, budget, player, limits)."""


class Continuation(NamedTuple):
    """How the player's continuation from a fork point ended."""

    outcome: str
    """"success", "timeout" or "failure"."""
    steps: int
    """The step the continuation ended at (counted from the episode's start, like a fork)."""
    world: World
    """The world it ended in (marked with the outcome, as a fork's would be)."""
    version: int
    """The stream version the fork would end at (its last event's seq)."""


def _seen(world: World, caused: Sequence[Event]) -> Seen:
    shown, message, error = render_result(world, caused)
    return Seen(world.clock, shown, message, error)


class SimulatedForks:
    """Every fork of one stored episode, simulated in memory. Folds the stream once; each
    `continue_from` then only plays the continuation."""

    def __init__(
        self,
        records: Sequence[RecordedEvent | Event],
        limits: Limits = DEFAULT_LIMITS,
        replayed: Replay | None = None,
        player: str = "honest",
    ) -> None:
        if player not in PLAYERS:
            raise ValueError(f"player must be one of {', '.join(PLAYERS)}, not {player!r}")
        self.player = player
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
        kept = 0
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
        self._wins: dict[int, bool] = {}
        self._shown: list[Seen] = []
        """What each step of the transcript showed, rendered once for all the forks."""

    def _honest(self, k: int) -> HonestSolver:
        """The honest solver having read the transcript of the first k steps."""
        setup = self.replay.setup
        assert setup.task is not None and setup.info is not None
        solver = HonestSolver(setup.task.text, setup.info.scenario)
        shown = self._shown
        for i, s in enumerate(self.replay.steps[:k]):
            if i == len(shown):
                shown.append(_seen(s.world, s.events))
            params = s.call.params if isinstance(s.call.params, dict) else {}
            call = (str(s.call.app), str(s.call.method), params)
            solver.last = call
            solver.calls.setdefault(call[0], []).append(s.world.clock)
            try:
                solver.observe(shown[i])
            except Exception:
                solver.last = None
                solver.retry = False
        return solver

    def continue_from(self, k: int) -> Continuation:
        """Fork at step k (0: the start) and let the player play until the fork ends."""
        if k not in self.forkable:
            raise ValueError(
                f"cannot fork at step {k}: the forkable steps are {self.forkable.start}.."
                f"{self.forkable.stop - 1}"
            )
        r, rng, limits = self.replay, self.rng, self.limits
        world = r.world_at(k)
        if world.outcome == "abandoned":  # the fork drops the marker and plays on
            world = world._replace(outcome=None)
        version = self._versions[k]
        solver = self._honest(k) if self.player == "honest" else None
        seen: Seen | None = None
        while True:
            app: Any
            if solver is not None:
                app, method, params = solver.act(seen)
            else:
                call = plan(world) or LOOK
                app, method, params = call.app, call.method, call.params
            # The world after, as a live step gets it (folded while deciding, tested equal to
            # the fold of the log).
            caused, after = decide_and_fold(world, app, method, params, version + 1, rng, limits)
            # Only the outcome matters here, not the reward: `score_step` decides it this way.
            outcome = fork_outcome(after, r.graph, r.profile)
            version += len(caused) + 1  # what the step caused, then its StepScored
            world = after
            if outcome is not None:
                return Continuation(
                    outcome, world.step, world._replace(outcome=outcome), version + 1
                )
            if solver is not None:
                seen = _seen(world, caused)

    def wins_from(self, k: int) -> bool:
        """Whether the player, taking over after step k, succeeds (cached)."""
        won = self._wins.get(k)
        if won is None:
            won = self._wins[k] = self.continue_from(k).outcome == "success"
        return won

    oracle_wins_from = wins_from  # the name callers of the oracle-only version used

    def solvable(self) -> bool:
        """Whether the player solves the instance from the start with the episode's budget.
        The same for every episode of the instance (same seed, same draws, nothing read yet),
        so it is remembered per instance and budget."""
        info = self.replay.setup.info
        assert info is not None
        key = (
            info.scenario,
            info.seed,
            info.difficulty,
            info.max_steps,
            self._versions[0],
            self.player,
            self.limits,
        )
        won = _SOLVABLE.get(key)
        if won is None:
            if len(_SOLVABLE) >= 65_536:
                _SOLVABLE.clear()
            won = _SOLVABLE[key] = self.wins_from(0)
        self._wins[0] = won
        return won

    def point_of_no_return(self) -> int | None:
        """The last step k from which the player still wins; None for an episode that did not
        fail, or when it cannot win even from the start (an unsolvable instance)."""
        if self.outcome not in FAILED:
            return None
        # Whether the player wins from k is not monotone in k (each continuation draws its
        # chaos at other seqs, and an agent's step may help), so scan from the end.
        for k in reversed(self.forkable):
            if self.wins_from(k):
                return k
        return None


__all__ = ["FAILED", "LOOK", "PLAYERS", "Continuation", "SimulatedForks"]
