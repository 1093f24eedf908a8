"""ApprovalFlow: requests that need the right approver and the right data, take several status
polls to be decided, and are sometimes rejected.

The approver reviews a request as it was submitted (see `model.Evidence`): a request routed to
someone without authority, about an unverified ticket, or carrying data that does not match the
system of record is rejected with the reason. A correct request may still be rejected by chance
and must then be escalated, after which it is decided again. A request routed to someone who is
out of office is never decided: their auto-reply says so.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from companyos.events.types import (
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalPolled,
    ApprovalsListed,
    ApprovalSubmitted,
    ApprovalTypeDefined,
    ApprovalTypesListed,
    ChaosInjected,
    Event,
)

from .model import (
    ROLE_TITLES,
    Approval,
    ApprovalField,
    ApprovalType,
    Evidence,
    World,
    as_number,
    effective_approver,
    normalize_ticket_id,
    resolve_person,
    same_number,
)
from .tooling import Ctx, Params, Registry, reject

APP = "approvalflow"
registry = Registry(APP)
Scalar = str | int | float | bool

CHANCE_REJECTION_REASONS = (
    "Budget review pending: escalate with a justification to proceed.",
    "Needs sign-off from the department head: escalate to request it.",
    "Business justification missing: escalate with the reason for the request.",
)


class NoParams(Params):
    pass


class SubmitApprovalParams(Params):
    approval_type: str = Field(
        min_length=1, max_length=64, description="A type from approvalflow.list_approval_types()."
    )
    approver: str = Field(
        min_length=1,
        max_length=120,
        description="The approver's name or e-mail (see datahub.get_approver(role)).",
    )
    data: dict[str, Scalar] = Field(
        description="The request's data: every required key of the approval type, each a "
        "string, number or boolean.",
        max_length=32,
    )


class ApprovalIdParams(Params):
    approval_id: str = Field(min_length=1, max_length=64, description="An id such as APR-1001.")


class EscalateParams(Params):
    approval_id: str = Field(min_length=1, max_length=64, description="A rejected approval's id.")
    reason: str = Field(min_length=1, max_length=500, description="Why it should be reconsidered.")


# ------------------------------------------------------------------ views


def approval_type_view(t: ApprovalType) -> dict[str, Any]:
    return {
        "description": t.description,
        "required_role": ROLE_TITLES.get(t.required_role, t.required_role),
        "required_data": list(t.keys),
        "fields": {f.key: f.description for f in t.fields},
    }


def approval_view(world: World, a: Approval) -> dict[str, Any]:
    approver = world.people.get(a.approver)
    view: dict[str, Any] = {
        "approval_id": a.approval_id,
        "approval_type": a.approval_type,
        "approver": approver.name if approver else a.approver,
        "status": a.status,
        "polls": a.polls,
        "data": dict(a.data),
    }
    if a.reason:
        view["reason"] = a.reason
    if a.status == "pending" and approver is not None and approver.out_of_office:
        view["auto_reply"] = approver.ooo_note or f"{approver.name} is out of office."
    return view


# ------------------------------------------------------------------ deciders


def _find(world: World, approval_id: str) -> Approval | None:
    return world.approvals.get(approval_id.strip().upper())


def _no_approval(world: World, approval_id: str) -> list[Event]:
    known = ", ".join(world.approvals) or "none yet"
    return reject(
        "approval_not_found",
        f"No approval {approval_id!r} (known: {known}). Submit one with "
        "approvalflow.submit_approval.",
    )


def _latency(ctx: Ctx, approval_id: str, purpose: str) -> list[Event]:
    lo, hi = ctx.chaos.polls
    n = ctx.rng.randint(ctx.seq, f"{purpose}:{approval_id}", lo, hi)
    if n <= 1:
        return []
    return [
        ChaosInjected(kind="approval_latency", target=approval_id, params={"polls_required": n})
    ]


@registry.tool(
    "list_approval_types",
    NoParams,
    "The approval types with the role that must approve each and the data each requires.",
    faultable=False,
)
def list_approval_types(world: World, p: NoParams, ctx: Ctx) -> list[Event]:
    return [ApprovalTypesListed(count=len(world.approval_types))]


@registry.tool(
    "submit_approval",
    SubmitApprovalParams,
    "Submit an approval request to an approver with the required data. Route it to whoever "
    "acts for the required role now (datahub.get_approver) and use freshly read data.",
)
def submit_approval(world: World, p: SubmitApprovalParams, ctx: Ctx) -> list[Event]:
    atype = world.approval_types.get(p.approval_type.strip().lower())
    if atype is None:
        return reject(
            "unknown_approval_type",
            f"No approval type {p.approval_type!r}. Types: {', '.join(world.approval_types)} "
            "(see approvalflow.list_approval_types()).",
        )
    approver = resolve_person(world, p.approver)
    if approver is None:
        return reject(
            "unknown_approver",
            f"Nobody called {p.approver!r} is in the directory. Find who approves with "
            f"datahub.get_approver(role); {atype.name} needs the "
            f"{ROLE_TITLES.get(atype.required_role, atype.required_role)}.",
        )
    missing = [k for k in atype.keys if k not in p.data]
    if missing:
        return reject(
            "missing_data",
            f"{atype.name} needs data keys {', '.join(atype.keys)}; missing: {', '.join(missing)}.",
        )
    ticket_id = None
    for f in atype.fields:
        if f.kind == "ticket" and isinstance(p.data.get(f.key), str):
            ticket_id = normalize_ticket_id(p.data[f.key])  # type: ignore[arg-type]
    approval_id = f"APR-{1001 + len(world.approvals)}"
    return [
        ApprovalSubmitted(
            approval_id=approval_id,
            approval_type=atype.name,
            approver=approver,
            data=dict(p.data),
            ticket_id=ticket_id,
        ),
        *_latency(ctx, approval_id, "latency"),
    ]


def review(world: World, a: Approval, ctx: Ctx) -> list[Event]:
    """The approver's decision on a request whose polls are done."""
    atype = world.approval_types[a.approval_type]
    ev = a.evidence
    role = ROLE_TITLES.get(atype.required_role, atype.required_role)
    name = world.people[a.approver].name
    if not ev.authorized:
        return [
            _decided(
                a,
                "rejected",
                "wrong_approver",
                f"{name} cannot approve {atype.name}: it needs the {role} or, while "
                "they are out of office, their delegate. Submit a new request to the "
                "right approver.",
            )
        ]
    if atype.requires_verified_ticket and not ev.ticket_verified:
        return [
            _decided(
                a,
                "rejected",
                "ticket_unverified",
                f"Ticket {a.ticket_id} was not verified when this was submitted. Verify "
                "it, then submit a new request.",
            )
        ]
    if ev.mismatched:
        return [
            _decided(
                a,
                "rejected",
                "data_mismatch",
                f"{', '.join(ev.mismatched)} does not match the system of record. "
                "Refresh the data in DataHub and submit a new request.",
            )
        ]
    if a.chance_rejections < ctx.chaos.max_chance_rejections and ctx.rng.chance(
        ctx.seq, f"rejection:{a.approval_id}", ctx.chaos.rejection_rate
    ):
        reason = ctx.rng.choice(ctx.seq, f"reason:{a.approval_id}", CHANCE_REJECTION_REASONS)
        return [
            ChaosInjected(
                kind="approval_rejection", target=a.approval_id, params={"reason": reason}
            ),
            _decided(a, "rejected", "chance", reason),
        ]
    return [_decided(a, "approved", "review", None)]


def _decided(a: Approval, decision: str, cause: str, reason: str | None) -> ApprovalDecided:
    return ApprovalDecided(
        approval_id=a.approval_id,
        decision=decision,
        cause=cause,
        reason=reason,  # type: ignore[arg-type]
    )


@registry.tool(
    "check_status",
    ApprovalIdParams,
    "Poll an approval. Decisions take a few polls; a rejection gives its reason.",
)
def check_status(world: World, p: ApprovalIdParams, ctx: Ctx) -> list[Event]:
    a = _find(world, p.approval_id)
    if a is None:
        return _no_approval(world, p.approval_id)
    if a.status != "pending":
        return [ApprovalPolled(approval_id=a.approval_id, polls=a.polls, status=a.status)]
    polls = a.polls + 1
    events: list[Event] = [ApprovalPolled(approval_id=a.approval_id, polls=polls, status="pending")]
    if world.people[a.approver].out_of_office or polls < a.polls_required:
        return events
    return events + review(world, a, ctx)


@registry.tool(
    "escalate",
    EscalateParams,
    "Escalate a rejected approval with a reason; it is then reviewed again.",
)
def escalate(world: World, p: EscalateParams, ctx: Ctx) -> list[Event]:
    a = _find(world, p.approval_id)
    if a is None:
        return _no_approval(world, p.approval_id)
    if a.status != "rejected":
        hint = ""
        if a.status == "pending" and world.people[a.approver].out_of_office:
            hint = (
                " Its approver is out of office: submit a new request to their delegate "
                "(datahub.get_approver)."
            )
        return reject(
            "not_rejected",
            f"Only rejected approvals can be escalated; {a.approval_id} is {a.status}.{hint}",
        )
    return [
        ApprovalEscalated(approval_id=a.approval_id, reason=p.reason),
        *_latency(ctx, a.approval_id, f"latency:{a.escalations + 1}"),
    ]


@registry.tool(
    "list_approvals", NoParams, "List the approval requests submitted so far.", faultable=False
)
def list_approvals(world: World, p: NoParams, ctx: Ctx) -> list[Event]:
    return [ApprovalsListed(count=len(world.approvals))]


# ------------------------------------------------------------------ evolve


def evidence(world: World, e: ApprovalSubmitted) -> Evidence:
    atype = world.approval_types[e.approval_type]
    routed = effective_approver(world, atype.required_role)
    holder = world.roles.get(atype.required_role)
    ticket = world.tickets.get(e.ticket_id) if e.ticket_id else None
    mismatched: list[str] = []
    unread: list[str] = []
    stale_used: list[str] = []
    for f in atype.fields:
        value = e.data.get(f.key)
        if f.kind == "metric" and f.metric in world.metrics:
            m = world.metrics[f.metric]
            n = as_number(value)
            if n is None or not same_number(n, m.true_value):
                mismatched.append(f.key)
                if n is not None and m.stale and same_number(n, m.value):
                    stale_used.append(f.key)
            if not m.read_fresh:
                unread.append(f.key)
        elif f.kind == "ticket" and (
            not isinstance(value, str) or normalize_ticket_id(value) not in world.tickets
        ):
            mismatched.append(f.key)
    return Evidence(
        routed_to=routed,
        authorized=e.approver in (routed, holder),
        ticket_verified=bool(ticket and ticket.verified),
        mismatched=tuple(mismatched),
        unread=tuple(unread),
        stale_used=tuple(stale_used),
    )


def on_type_defined(world: World, e: ApprovalTypeDefined) -> World:
    t = ApprovalType(
        e.approval_type,
        e.description,
        e.required_role,
        tuple(ApprovalField(f.key, f.kind, f.metric, f.description) for f in e.fields),
        e.requires_verified_ticket,
    )
    return world._replace(approval_types={**world.approval_types, e.approval_type: t})


def on_submitted(world: World, e: ApprovalSubmitted) -> World:
    a = Approval(
        e.approval_id,
        e.approval_type,
        e.approver,
        dict(e.data),
        e.ticket_id,
        world.step,
        evidence(world, e),
    )
    return world._replace(approvals={**world.approvals, e.approval_id: a})


def _put(world: World, a: Approval) -> World:
    return world._replace(approvals={**world.approvals, a.approval_id: a})


def on_polled(world: World, e: ApprovalPolled) -> World:
    a = world.approvals[e.approval_id]
    return world if a.polls == e.polls else _put(world, a._replace(polls=e.polls))


def on_decided(world: World, e: ApprovalDecided) -> World:
    a = world.approvals[e.approval_id]
    rejected = e.decision == "rejected"
    return _put(
        world,
        a._replace(
            status=e.decision,
            reason=e.reason,
            cause=e.cause,
            rejections=a.rejections + rejected,
            chance_rejections=a.chance_rejections + (rejected and e.cause == "chance"),
        ),
    )


def on_escalated(world: World, e: ApprovalEscalated) -> World:
    a = world.approvals[e.approval_id]
    return _put(
        world,
        a._replace(
            status="pending",
            polls=0,
            polls_required=1,
            reason=None,
            cause=None,
            escalations=a.escalations + 1,
        ),
    )


def on_latency(world: World, e: ChaosInjected) -> World:
    a = world.approvals[e.target]
    return _put(world, a._replace(polls_required=int(e.params["polls_required"])))


EVOLVERS = {
    "ApprovalTypeDefined": on_type_defined,
    "ApprovalSubmitted": on_submitted,
    "ApprovalPolled": on_polled,
    "ApprovalDecided": on_decided,
    "ApprovalEscalated": on_escalated,
}
CHAOS = {"approval_latency": on_latency}
