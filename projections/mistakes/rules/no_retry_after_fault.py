"""A call that would have changed the world was refused by the service and not made again.

Judged from the agent's own order of work, not an oracle's: the retry is due once the agent
uses the same service again and gets through (it is back, and the agent chose other work on
it), or acts on work that depended on the refused call (submits a request). An agent
that had other work first, and ran out of budget before coming back, is not blamed; one that
idled to the end after a transient refusal is, at the step after it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from companyos.domain.model import normalize_ticket_id
from companyos.events.types import ApprovalSubmitted, FaultInjected

from ...replay import StepRecord
from ..context import EFFECTFUL, Episode, Suspect, describe, param, purpose, text

LABEL = "no_retry_after_fault"
ORDER = 50
DEFINITION = (
    "A call that would have changed the world was refused by the service (transient fault, "
    "rate limit, outage) and, in the agent's own order of work, was not made again when it "
    "came back to that service or went on to work that depended on it (a refused ticket "
    "change the task does not call for is owed nothing). Made good by a later call for the "
    "same purpose."
)


def _depends(t: StepRecord) -> bool:
    """``t`` submits a request of the task's kind: work that stands on the tickets and data
    (an access request does not)."""
    kind = text(param(t.call, "approval_type")).lower()
    return t.call.method == "submit_approval" and kind != "data_access"


def _faulted(s: StepRecord) -> bool:
    return any(isinstance(e, FaultInjected) for e in s.events)


def _uncalled_for(ep: Episode, i: int, call: Any) -> bool:
    """A ticket change the task does not call for (on another ticket, or taking a task
    ticket off its goal): refused, it is owed no retry."""
    if call.method != "update_ticket":
        return False
    tid = normalize_ticket_id(text(param(call, "ticket_id")))
    tg, t = ep.wanted.get(tid), ep.before[i].tickets.get(tid)
    if tg is None or t is None:
        return True
    field, value = text(param(call, "field")).lower(), param(call, "value")
    if field == "status":
        return t.status == tg.status and value != tg.status
    if field == "verified":
        return tg.verify and t.verified and str(value).lower() == "false"
    return False


def find(ep: Episode) -> Iterator[Suspect]:
    for i, s in enumerate(ep.steps):
        fault = next((e for e in s.events if isinstance(e, FaultInjected)), None)
        if fault is None or s.call.method not in EFFECTFUL or _uncalled_for(ep, i, s.call):
            continue
        aim = purpose(s.call)
        escalated = text(param(s.call, "approval_id")).upper()

        def retried(t: StepRecord, aim: tuple[Any, ...] = aim, a: str = escalated) -> bool:
            if purpose(t.call) == aim:
                return True
            if aim[0] != "escalate":
                return False
            old = ep.final.approvals.get(a)
            return old is not None and any(
                isinstance(e, ApprovalSubmitted) and e.approval_type == old.approval_type
                for e in t.events
            )

        due: tuple[int, StepRecord] | None = None
        for j, t in ep.later(i):
            if retried(t):
                break
            moved_on = (t.call.app == s.call.app and not _faulted(t)) or (
                _depends(t) and purpose(t.call) != aim
            )
            if moved_on:
                due = (j, t)
                break
        else:
            # Never retried nor moved on: a transient refusal could be retried at once, and
            # the agent idled to the end instead.
            if fault.kind == "unavailable" and ep.idle_after(i):
                t = ep.steps[i + 1]
                yield Suspect(
                    LABEL,
                    t.step,
                    f"{describe(s.call)} failed at step {s.step} ({fault.kind}) and was never "
                    "retried; nothing progressed after it",
                )
        if due is not None:
            j, t = due
            yield Suspect(
                LABEL,
                t.step,
                f"{describe(s.call)} failed at step {s.step} ({fault.kind}); at step {t.step} "
                f"the agent went on with {describe(t.call)} instead of retrying it",
                lambda j=j, retried=retried: ep.first_after(j, retried),
            )
