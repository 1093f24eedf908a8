"""Leaving a rejected request standing.

Judged from the agent's own order: the agent saw the rejection (a poll of that request, or a
listing, after it was decided) and then polled it again, went on to request something else as
if it were approved, stopped (a reply with no tool call), or idled to the end; other work first
is not a mistake."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from companyos.domain.model import Approval
from companyos.events.types import (
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalSubmitted,
    FaultInjected,
)

from ...replay import StepRecord
from ..context import PSEUDO_APP, Episode, Suspect, param, text

LABEL = "gave_up_after_rejection"
ORDER = 200
DEFINITION = (
    "A correct request was rejected by the approver (who asked for it to be escalated); the "
    "agent saw the rejection and polled it again, requested something else as if it were "
    "approved, stopped, or idled to the end, instead of escalating or resubmitting it. Made "
    "good by a later escalation or resubmission (or an attempt a fault refused)."
)


def _answers(ep: Episode, call: Any, a: Approval) -> bool:
    if call.method == "escalate":
        return text(param(call, "approval_id")).upper() == a.approval_id
    if call.method != "submit_approval":
        return False
    if text(param(call, "approval_type")).lower() != a.approval_type:
        return False
    data = param(call, "data")
    dataset = text(data.get("dataset")).lower() if isinstance(data, dict) else ""
    return a.approval_type != "data_access" or dataset == ep.dataset(a)


def _sees(t: StepRecord, a: Approval) -> bool:
    """The call showed the request's status (a call a fault refused showed nothing)."""
    call = t.call
    if any(isinstance(x, FaultInjected) for x in t.events):
        return False
    if call.method == "list_approvals":
        return True
    return call.method == "check_status" and text(param(call, "approval_id")).upper() == (
        a.approval_id
    )


def _watches(call: Any, a: Approval) -> bool:
    """Polls the rejected request again (watching the rejection instead of answering it)."""
    return call.method == "check_status" and text(param(call, "approval_id")).upper() == (
        a.approval_id
    )


def _moves_on(call: Any, a: Approval) -> bool:
    """Submits a request for something else, as if this one had been approved."""
    kind = text(param(call, "approval_type")).lower()
    return call.method == "submit_approval" and kind not in ("", a.approval_type)


def _made(t: StepRecord) -> bool:
    return any(
        isinstance(x, FaultInjected | ApprovalEscalated | ApprovalSubmitted) for x in t.events
    )


def find(ep: Episode) -> Iterator[Suspect]:
    for i, s in enumerate(ep.steps):
        for e in s.events:
            if not (
                isinstance(e, ApprovalDecided) and e.decision == "rejected" and e.cause == "chance"
            ):
                continue
            a = s.world.approvals.get(e.approval_id)
            if a is None:
                continue
            seen_at = i if _sees(s, a) else None
            due: int | None = None
            for j, t in ep.later(i):
                if _answers(ep, t.call, a):
                    break
                if seen_at is None:
                    seen_at = j if _sees(t, a) else None
                    continue
                if _watches(t.call, a) or _moves_on(t.call, a) or t.call.app == PSEUDO_APP:
                    due = j
                    break
            else:
                if seen_at is not None and ep.idle_after(seen_at):
                    due = seen_at + 1
            if due is None or due >= len(ep.steps):
                continue
            t = ep.steps[due]
            yield Suspect(
                LABEL,
                t.step,
                f"{a.approval_id} ({a.approval_type}) was rejected at step {s.step} "
                f"({e.reason}); at step {t.step} the agent, having seen it, did "
                f"{t.call.app}.{t.call.method} instead of escalating it",
                lambda due=due, a=a: ep.first_after(
                    due, lambda u: _answers(ep, u.call, a) and _made(u)
                ),
            )
