"""The reward projection: potential-based shaping over milestones, penalties, terminal terms.

    r = step_cost + Phi(s') - Phi(s) + penalties + terminal

Phi is the weight of the milestones that count (in order) in the world after the step. Undo and
redo net zero, repeating an action pays nothing, and the return of any finished episode that
does not succeed is below the return of every one that does: penalties are clipped to a budget
per episode chosen so that `dominance_margin` stays positive (a test checks every task).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from companyos.domain.model import World
from companyos.events.types import Event

from .milestones import MilestoneGraph


class RewardProfile(BaseModel):
    """Weights of the reward projection. The defaults are the original CompanyOS's values."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "default"
    scheme: Literal["potential", "per_action"] = "potential"
    """"per_action": the original's farmable scheme (`projections.original`), for comparison."""
    step_cost: float = -0.1
    set_priority: float = 1.0
    set_assignee: float = 1.0
    fix_field: float = 1.0
    unblock: float = 1.0
    verify: float = 1.5
    refresh_stale: float = 1.0
    fresh_read: float = 0.5
    valid_submission: float = 2.0
    approved: float = 3.0
    resolve_ticket: float = 1.0
    """A ticket brought to the status the task asks for (e.g. resolved)."""
    access: float = 1.0
    """Access to a restricted dataset granted."""
    decision: float = 5.0
    """A decision task's right decision, made on fresh data (worth a submission and an
    approval)."""
    clean: float = 0.0
    """No collateral damage: a gate on the last milestone, worth nothing by itself."""
    collateral: float = -1.0
    """Each thing changed or requested that the task did not call for (`goals.collateral`),
    as a term of the potential: undoing a reversible change gives it back, a request cannot be
    withdrawn. A successful episode ends with none, so this never touches a success; it makes
    damage cost something in an episode that fails."""
    failed_call: float = -0.3
    hallucinated_tool: float = -1.0
    rejection: float = -0.5
    """An approval rejected because of the agent's request (wrong approver, stale data, ...)."""
    irreversible: float = -2.0
    """Trying to close a blocked ticket, or closing the task's ticket before the task is done."""
    fault: float = 0.0
    """A transient fault is bad luck, not a mistake; the original charged it as a failed call."""
    chance_rejection: float = 0.0
    """A correct request rejected by chance; the original charged -0.5 for every rejection."""
    success: float = 15.0
    failure: float = -5.0
    """The work finished but not right (a wrong decision, an approval that does not count)."""
    timeout: float = -5.0
    abandon: float = -5.0
    penalty_budget: float = 15.0
    forfeit: bool = True
    """An episode that ends without success before its budget runs out (finished wrong, or
    abandoned) is also charged the step cost of the steps it leaves, as a timeout pays them:
    no early exit beats working on, whatever the step budget (`dominance_margin` then does
    not depend on it)."""

    def forfeited(self, step: int, max_steps: int) -> float:
        """The charge for the ``max_steps - step`` steps an unsuccessful end leaves unused."""
        return self.step_cost * max(0, max_steps - step) if self.forfeit else 0.0

    def abandoned(self, step: int, max_steps: int) -> float:
        """What quitting after ``step`` of ``max_steps`` adds to the return."""
        return self.abandon + self.forfeited(step, max_steps)

    def weight(self, kind: str) -> float:
        return float(getattr(self, kind))


PROFILES: dict[str, RewardProfile] = {
    "default": RewardProfile(),
    # The original's scheme for comparison: every failed call and every rejection charged, no
    # budget on penalties (so failing can, with enough penalties, out-score nothing at all).
    "original": RewardProfile(
        name="original", fault=-0.3, chance_rejection=-0.5, penalty_budget=1e9, forfeit=False
    ),
    # The original's own per-action scheme, which pays a repeated call again: only to reproduce
    # its figures on the compatibility surface (`api.original`).
    "original_per_action": RewardProfile(
        name="original_per_action",
        scheme="per_action",
        fault=-0.3,
        chance_rejection=-0.5,
        abandon=0.0,
        penalty_budget=1e9,
        forfeit=False,
    ),
}


def get_profile(name: str) -> RewardProfile:
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(PROFILES)
        raise ValueError(f"unknown reward profile {name!r}: use one of {known}") from None


class ScoreState(NamedTuple):
    """What the reward projection carries from step to step."""

    phi: float = 0.0
    achieved: frozenset[str] = frozenset()
    total: float = 0.0
    penalties: float = 0.0
    shortcut_attempts: int = 0
    damage: int = 0
    """Collateral damage standing after the step (`MilestoneGraph.damage`)."""


class StepScore(NamedTuple):
    reward: float
    total: float
    terms: dict[str, float]
    gained: list[str]
    lost: list[str]
    outcome: str | None
    achieved: frozenset[str]


SHORTCUT_CODES = frozenset({"ticket_not_verified", "blocked_ticket_close"})
SHORTCUT_CAUSES = frozenset({"ticket_unverified", "data_mismatch", "wrong_approver"})


def potential(done: frozenset[str], graph: MilestoneGraph, profile: RewardProfile) -> float:
    return graph.potential(done, profile)


def initial_score(world: World, graph: MilestoneGraph, profile: RewardProfile) -> ScoreState:
    done = graph.achieved(world)
    return ScoreState(phi=graph.potential(done, profile), achieved=done)


# Each returns (penalty kind or None, whether the event is a shortcut attempt).
Verdict = tuple[str | None, bool]


def _invalid(e: Any, goal_ticket: str | None) -> Verdict:
    return ("hallucinated_tool" if e.code == "unknown_tool" else "failed_call"), False


def _rejected(e: Any, goal_ticket: str | None) -> Verdict:
    kind = "irreversible" if e.code == "blocked_ticket_close" else "failed_call"
    return kind, e.code in SHORTCUT_CODES


def _fault(e: Any, goal_ticket: str | None) -> Verdict:
    return "fault", False


def _decided(e: Any, goal_ticket: str | None) -> Verdict:
    if e.decision != "rejected":
        return None, False
    return ("chance_rejection" if e.cause == "chance" else "rejection"), e.cause in SHORTCUT_CAUSES


def _updated(e: Any, goal_ticket: str | None) -> Verdict:
    closed_early = (
        e.field == "status"
        and e.new == "closed"
        and e.old != "closed"
        and e.ticket_id == goal_ticket
    )
    return ("irreversible" if closed_early else None), False


_CLASSIFY = {
    "InvalidAction": _invalid,
    "ActionRejected": _rejected,
    "FaultInjected": _fault,
    "ApprovalDecided": _decided,
    "TicketUpdated": _updated,
}


def penalty_terms(
    events: Iterable[Event], world: World, profile: RewardProfile
) -> tuple[dict[str, float], int]:
    """The penalties a step's events earn, by kind, and how many were shortcut attempts."""
    terms: dict[str, float] = {}
    shortcuts = 0
    goal_ticket = world.task.goal.ticket_id if world.task else None
    for e in events:
        classify = _CLASSIFY.get(e.type)
        if classify is None:
            continue
        kind, shortcut = classify(e, goal_ticket)
        shortcuts += shortcut
        if kind is not None:
            value = profile.weight(kind)
            if value:
                terms[kind] = terms.get(kind, 0.0) + value
    return terms, shortcuts


def step_outcome(
    world: World, done: frozenset[str], graph: MilestoneGraph, profile: RewardProfile
) -> str | None:
    """How the step that left ``world``, with the milestones ``done``, ends the episode (None:
    it goes on), as `score_step` decides it: success, a finished wrong answer ("failure"; not
    in the per-action scheme, `projections.original`), or the step budget spent. Alone, for
    callers that need the outcome and not the reward (a simulated fork plays on until it)."""
    if graph.success_id in done:
        return "success"
    if profile.scheme != "per_action" and world.task is not None and graph.finished(world):
        return "failure"
    if world.info is not None and world.step >= world.info.max_steps:
        return "timeout"
    return None


def fork_outcome(world: World, graph: MilestoneGraph, profile: RewardProfile) -> str | None:
    """`step_outcome` of ``world`` with its milestones as `score_step` finds them, asking only
    whether the task's end counts (`MilestoneGraph.reached`) rather than for every milestone:
    what a simulated fork needs after each of its steps."""
    if graph.reached(world):
        return "success"
    # `step_outcome` reads the milestones only to tell success, which is settled above.
    return step_outcome(world, frozenset(), graph, profile)


def score_step(
    prev: ScoreState,
    world: World,
    events: Sequence[Event],
    graph: MilestoneGraph,
    profile: RewardProfile,
    before: World | None = None,
) -> tuple[ScoreState, StepScore]:
    """Score one step given the world after it and the events it caused. Every step
    re-evaluates the milestones, a read included: time passes on every step, and data that has
    gone stale no longer counts as read fresh (``before`` is accepted for callers that pass
    it; it no longer lets a step skip anything)."""
    if profile.scheme == "per_action":
        from .original import score_step as per_action

        return per_action(prev, world, events, graph, profile)
    done = graph.achieved(world)
    if done == prev.achieved:
        done, phi = prev.achieved, prev.phi
    else:
        phi = graph.potential(done, profile)
    damage = graph.damage(world)
    terms: dict[str, float] = {"step": profile.step_cost}
    if phi != prev.phi:
        terms["progress"] = phi - prev.phi
    if damage != prev.damage and profile.collateral:
        terms["collateral"] = profile.collateral * (damage - prev.damage)
    penalties, shortcuts = penalty_terms(events, world, profile)
    spent = 0.0
    if penalties:
        spent = sum(penalties.values())
        room = -(profile.penalty_budget + prev.penalties)  # most negative still allowed
        if spent < room:
            penalties["budget_clip"] = room - spent
            spent = room
        terms.update(penalties)
    outcome = step_outcome(world, done, graph, profile)
    if outcome == "success":
        terms["success"] = profile.success
    elif outcome == "failure":
        # The work is over but not right: charged like running out of time, so that ending
        # early on a wrong answer never beats working on.
        terms["failure"] = profile.failure
        if world.info is not None and profile.forfeit:
            terms["forfeit"] = profile.forfeited(world.step, world.info.max_steps)
    elif outcome == "timeout":
        terms["timeout"] = profile.timeout
    reward = round6(sum(terms.values()))
    total = round6(prev.total + reward)
    state = ScoreState(
        phi, done, total, prev.penalties + spent, prev.shortcut_attempts + shortcuts, damage
    )
    if done is prev.achieved:
        return state, StepScore(reward, total, terms, [], [], outcome, done)
    # The differences as sets first (in C): most changes gain or lose, not both.
    new, gone = done - prev.achieved, prev.achieved - done
    gained = [i for i in graph.ids if i in new] if new else []
    lost = [i for i in graph.ids if i in gone] if gone else []
    return state, StepScore(reward, total, terms, gained, lost, outcome, done)


_ROUNDED: dict[float, float] = {}
_ROUNDED_MAX = 65_536


def round6(x: float) -> float:
    """``round(x, 6)``, kept per value. A float's round to given digits is correctly rounded
    through its decimal digits (half a microsecond), and a step's reward and total come from a
    small set of values: an episode ends in a few dozen totals, its rewards in fewer. Only
    floats are kept (``round`` keeps an int an int, and 1 == 1.0), and no zero (-0.0 and 0.0
    are one key, and ``round`` keeps the sign)."""
    if type(x) is not float or not x:
        return round(x, 6)
    hit = _ROUNDED.get(x)
    if hit is not None:
        return hit
    out = round(x, 6)
    if out == out:  # a NaN never finds itself: nothing to keep
        if len(_ROUNDED) >= _ROUNDED_MAX:
            _ROUNDED.clear()
        _ROUNDED[x] = out
    return out


def dominance_margin(
    graph: MilestoneGraph, profile: RewardProfile, max_steps: int, initial_phi: float = 0.0
) -> float:
    """Lowest possible successful return minus highest possible failed one (> 0 is safe).

    Success: every milestone, the success bonus, every step paid, the whole penalty budget
    spent. Failure: every milestone but the last, no penalties, no damage, and the mildest of a
    timeout after all steps, an abandonment at once or a wrong finish after one step (which,
    with ``forfeit``, pay the steps they leave as well)."""
    phi_all = graph.potential(frozenset(graph.ids), profile)
    phi_fail = phi_all - profile.weight(graph[-1].kind)
    worst_success = (
        phi_all
        - initial_phi
        + profile.success
        + max_steps * profile.step_cost
        - profile.penalty_budget
    )
    best_failure = (
        phi_fail
        - initial_phi
        + max(
            profile.timeout + max_steps * profile.step_cost,
            profile.abandoned(0, max_steps),
            profile.failure + profile.step_cost + profile.forfeited(1, max_steps),
        )
    )
    return worst_success - best_failure
