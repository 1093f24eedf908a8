"""Labels about a whole failed episode (or its instance) rather than one wrong call: a mistake
made good too late, how the last steps were idled away, and the fallbacks that name no mistake.
`analysis` gives one of these only when no step rule's mistake explains the failure (or, for
``fixed_too_late``, when the mistake that lost it had been made good, after the point of no
return)."""

from __future__ import annotations

from collections.abc import Iterator

from companyos.domain.oracle import WAIT, Call, plan
from companyos.events.types import FaultInjected

from .context import Episode, Suspect, purpose, tool

DEFINITIONS: dict[str, str] = {
    "fixed_too_late": "A mistake that was made good, but only after the point where the "
    "remaining budget could still finish the task: the honest solver, taking over right after "
    "the mistake, no longer succeeds. Named with the mistake it fixed.",
    "timed_out_while_polling": "Ran out of steps polling approval requests (at least every "
    "other step, only looking in between) while polling was not what the task needed (the "
    "request was decided, or work was waiting).",
    "stalled": "Ran out of steps only looking (listings, lookups, polls with no request to "
    "wait on) while work was waiting to be done.",
    "looped": "Ran out of steps repeating or undoing calls that brought no new progress "
    "(redoing what it undid, re-reading what it had) while other work was waiting to be done.",
    "unsolvable_instance": "A label of the instance, never of the agent: the honest solver, "
    "playing from the start with the episode's step budget, does not succeed either.",
    "ran_out_of_steps": "No mistake found: the step budget ran out while the agent was still "
    "making progress.",
    "abandoned": "No mistake found: the agent quit the episode before finishing.",
    "finished_wrong": "No specific mistake found: the work was finished (a decision recorded, "
    "the last approval approved) but did not meet the task.",
}
IDLING = ("timed_out_while_polling", "stalled", "looped")
FALLBACKS = ("ran_out_of_steps", "abandoned", "finished_wrong")

POLLS = frozenset({("approvalflow", "check_status"), ("approvalflow", "list_approvals")})
LOOKS = POLLS | {
    ("ticketdesk", "list_tickets"),
    ("ticketdesk", "search_tickets"),
    ("ticketdesk", "get_ticket"),
    ("datahub", "list_metrics"),
    ("datahub", "get_approver"),
    ("approvalflow", "list_approval_types"),
}
READS_DATA = frozenset({"query_metric", "refresh_data"})
IDLE_RUN = 3
"""Looks, from the first made while work was waiting to the end, that make "ran out of steps
idling" (fewer are just the last few steps of an episode cut short)."""


def _waits(call: Call) -> bool:
    return call.method == "check_status" or call in WAIT.values()


def idling(ep: Episode) -> Iterator[Suspect]:
    """The steps ran out in a stretch without new progress that began with the agent doing
    something other than work waiting to be done (the planner names the work). Named by what
    the agent kept doing in it: polling, looking, or other calls."""
    if ep.outcome != "timeout":
        return
    held, start = set(ep.r.graph.achieved(ep.r.setup)), 0
    for j, s in enumerate(ep.steps):
        if not s.score.achieved <= held:
            held |= s.score.achieved
            start = j + 1
    for i in range(start, len(ep.steps) - IDLE_RUN + 1):
        wanted = plan(ep.before[i])
        s = ep.steps[i]
        if wanted is None or _waits(wanted) or purpose(wanted) == purpose(s.call):
            continue
        tools = [tool(t) for t in ep.steps[i:]]
        # Named by what it kept doing: the calls from the first one it came back to (one-off
        # calls before, such as a lookup or a figure read again before a request it never
        # sends, are not how it idled): polling (at least every other step; a look to wait out
        # a limit on the app it polls), only looking, or other calls.
        purposes = [  # a call a fault refused did not happen: its retry is no return to it;
            # a figure read again (queried, then refreshed) is work, not a return either
            None
            if t.call.method in READS_DATA or any(isinstance(e, FaultInjected) for e in t.events)
            else purpose(t.call)
            for t in ep.steps[i:]
        ]
        k = next((j for j, p in enumerate(purposes) if p and p in purposes[j + 1 :]), 0)
        kept = tools[k:]
        polls = sum(t in POLLS for t in kept)
        looks = all(t in LOOKS for t in kept)
        if looks and 2 * polls >= len(kept) and ep.before[i].approvals:
            label, did = "timed_out_while_polling", "polled requests"
        elif looks:
            label, did = "stalled", "only looked"
        else:
            label, did = "looped", "made no new progress"
        yield Suspect(
            label,
            s.step,
            f"{did} from step {s.step} until the budget ran out while "
            f"{wanted.app}.{wanted.method} was waiting to be done",
        )
        return


def fallback(ep: Episode) -> Suspect:
    done, total, n = ep.r.score.achieved, len(ep.r.graph), len(ep.steps)
    if ep.outcome == "abandoned":
        return Suspect(
            "abandoned", n, f"quit after {n} steps with {len(done)} of {total} milestones"
        )
    if ep.outcome == "failure":
        return Suspect(
            "finished_wrong", n, f"finished at step {n} with {len(done)} of {total} milestones"
        )
    gained = [s.step for s in ep.steps if s.score.gained]
    last = f"; last progress at step {gained[-1]}" if gained else "; no progress yet"
    return Suspect(
        "ran_out_of_steps", n, f"{len(done)} of {total} milestones after {n} steps{last}"
    )
