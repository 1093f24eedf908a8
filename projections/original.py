"""The original CompanyOS's scoring and progress, as projections of the log: what the
compatibility surface (`api.original`) reports, so that the original's clients and its
published figures can be compared like with like.

**Per-action reward** (the profile ``original_per_action``). The original paid each call by
what it did, every time it did it: -0.1 a step; a failed call -0.3 (a transient fault too), an
unknown tool -1.0 more, parameters that do not fit the method -0.5 more; setting a priority
+1.0, verifying +1.5, setting a status to open +1.0, linking an approval +1.0 (on any ticket);
a refresh +1.0; reading a metric that is not stale +0.5; an accepted request +2.0; a status
check that finds it approved +3.0, rejected -0.5; +15 on success, -5 at the step limit. So
repeating a rewarded call pays again: this profile is farmable by design, kept only to
reproduce the original's numbers (the default profile is potential-based and is not).
Success itself is graded as in every profile, on the final world (`milestones`).

**Progress flags**: the original's flag names for each task (`ticket_verified`,
`metric_refreshed`, ...), each a fact about the current world (the task's ticket verified, its
metric fresh, a valid request made, ...), so a flag holds only while its fact does. They are
the grader's view: trainers get them in ``info``; an agent sees them only on the curriculum
mount, which asks for them as the original's observation carried them.
"""

from __future__ import annotations

from collections.abc import Sequence

from companyos.domain import goals
from companyos.domain.model import World
from companyos.domain.original import TASKS
from companyos.events.types import Event

from .milestones import MilestoneGraph
from .reward import (
    RewardProfile,
    ScoreState,
    StepScore,
    get_profile,
    penalty_terms,
    round6,
    step_outcome,
)

PROFILE = get_profile("original_per_action")
"""No abandonment cost: the original had no such thing (a reset simply replaced the episode)."""
BAD_PARAMS = -0.5
"""The original's cost of parameters that do not fit the method (on top of the failed call)."""
_BAD_PARAMS_CODES = frozenset({"invalid_params", "params_not_object"})
_ERRORS = frozenset({"InvalidAction", "ActionRejected", "FaultInjected"})


def _ticket_terms(e: Event, profile: RewardProfile, terms: dict[str, float]) -> None:
    field, new = e.field, e.new  # type: ignore[attr-defined]
    kind = None
    if field == "priority" and new is not None:
        kind = "set_priority"
    elif field == "verified" and new is True:
        kind = "verify"
    elif field == "status" and new == "open":
        kind = "unblock"
    elif field == "linked_approval":
        kind = "fix_field"
    if kind is not None:
        terms[kind] = terms.get(kind, 0.0) + profile.weight(kind)


def action_terms(world: World, events: Sequence[Event], profile: RewardProfile) -> dict[str, float]:
    """What one call earns under the per-action scheme, by kind (step cost and terminal terms
    aside)."""
    terms: dict[str, float] = {}
    errors = [e for e in events if e.type in _ERRORS]
    if errors:
        e = errors[-1]
        terms["fault" if e.type == "FaultInjected" else "failed_call"] = (
            profile.fault if e.type == "FaultInjected" else profile.failed_call
        )
        code = getattr(e, "code", None)
        if code == "unknown_tool":
            terms["hallucinated_tool"] = profile.hallucinated_tool
        elif code in _BAD_PARAMS_CODES:
            terms["bad_params"] = BAD_PARAMS
        return terms
    for e in events:
        if e.type == "TicketUpdated":
            _ticket_terms(e, profile, terms)
        elif e.type == "MetricRefreshed":
            terms["refresh_stale"] = profile.refresh_stale
        elif e.type == "MetricQueried" and not e.stale:  # type: ignore[attr-defined]
            terms["fresh_read"] = profile.fresh_read
        elif e.type == "ApprovalSubmitted":
            terms["valid_submission"] = profile.valid_submission
        elif e.type == "ApprovalPolled":
            status = e.status  # type: ignore[attr-defined]
            if status == "approved":
                terms["approved"] = profile.approved
            elif status == "rejected":
                a = world.approvals.get(e.approval_id)  # type: ignore[attr-defined]
                chance = a is not None and a.cause == "chance"
                kind = "chance_rejection" if chance else "rejection"
                terms[kind] = profile.weight(kind)
    return terms


def score_step(
    prev: ScoreState,
    world: World,
    events: Sequence[Event],
    graph: MilestoneGraph,
    profile: RewardProfile,
) -> tuple[ScoreState, StepScore]:
    """`reward.score_step` for a per-action profile: same outcome and milestones, the
    original's terms."""
    done = graph.achieved(world)
    terms: dict[str, float] = {"step": profile.step_cost, **action_terms(world, events, profile)}
    _, shortcuts = penalty_terms(events, world, profile)
    outcome = step_outcome(world, done, graph, profile)
    if outcome == "success":
        terms["success"] = profile.success
    elif outcome == "timeout":
        terms["timeout"] = profile.timeout
    reward = round6(sum(terms.values()))
    total = round6(prev.total + reward)
    state = ScoreState(
        prev.phi, done, total, prev.penalties, prev.shortcut_attempts + shortcuts, prev.damage
    )
    gained = [i for i in graph.ids if i in done and i not in prev.achieved]
    lost = [i for i in graph.ids if i in prev.achieved and i not in done]
    return state, StepScore(reward, total, terms, gained, lost, outcome, done)


# ------------------------------------------------------------------ progress flags


def flags(world: World) -> dict[str, bool]:
    """The original's progress flags for the world's task ({} for a task it did not have)."""
    info, task = world.info, world.task
    original = TASKS.get(info.scenario) if info is not None else None
    if original is None or task is None:
        return {}
    g = task.goal
    tg = g.tickets[0]
    t = world.tickets.get(tg.ticket_id)
    facts = {
        "ticket_verified": lambda: goals.verified(t),
        "ticket_priority_set": lambda: t is not None and t.priority is not None,
        "ticket_unblocked": lambda: goals.unblocked(t),
        "ticket_assignee_set": lambda: (
            goals.field_ok(t, tg, "assignee") if "assignee" in tg.fields else bool(t and t.assignee)
        ),
        "metric_refreshed": lambda: goals.metric_fresh(world, original.metric),
        "metric_queried": lambda: goals.metric_read(world, original.metric) or submitted(),
        "approval_submitted": lambda: submitted(),
        "approval_approved": lambda: goals.approved(world, g, 0),
    }

    def submitted() -> bool:
        return bool(goals.valid_submissions(world, g, 0))

    return {name: bool(facts[name]()) for name in original.flags}
