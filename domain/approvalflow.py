"""ApprovalFlow: requests that need the right approver and the right data, are decided some
minutes after submission, and are sometimes rejected.

Time drives decisions: a request is due some minutes after it is submitted (its latency); from
then on the approver decides it, as the clock passes, whatever the agent is doing
(`due_events`, run at the start of every step). `check_status` reads the status. The approver
reviews a request as it was submitted (see `model.Evidence`): one routed to someone without
authority, about an unverified ticket, carrying data that does not match the system of record,
or naming a prior approval that is not approved is rejected with the reason. A correct request
may still be rejected by chance and must then be escalated, after which it is decided again. A
request routed to someone out of office is never decided; where requests have an SLA it then
expires. An approved `data_access` request grants access to the dataset it names.

The original CompanyOS's fixed worlds set other rules (`AppRulesSet`): requests numbered
APR-001, ..., decided when their status is checked (the latency counts checks, and an escalated
request is decided at the next check), and requests to someone out of office refused at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from companyos.events.types import (
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalPolled,
    ApprovalsListed,
    ApprovalSubmitted,
    ApprovalTypeDefined,
    ApprovalTypesListed,
    ChaosInjected,
    Event,
)

from .model import (
    MINUTES_PER_STEP,
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
    view: dict[str, Any] = {
        "description": t.description,
        "required_role": ROLE_TITLES.get(t.required_role, t.required_role),
        "required_data": list(t.keys),
        "fields": {f.key: f.description for f in t.fields},
    }
    if t.optional_keys:
        view["optional_data"] = list(t.optional_keys)
    return view


def request_object(atype: ApprovalType, data: Mapping[str, Any]) -> str | None:
    """What a request is about: its ticket, or the dataset it asks for (None: neither)."""
    for f in atype.fields:
        if f.kind == "ticket":
            value = data.get(f.key)
            return normalize_ticket_id(value) if isinstance(value, str) else None
    if atype.grants is not None:
        value = data.get(atype.grants)
        return value.strip().lower() if isinstance(value, str) else None
    return None


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
    if a.status == "pending" and world.services.sla is not None:
        view["expires_in_minutes"] = max(0, a.pending_since + world.services.sla - world.clock)
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


def _latency(world: World, ctx: Ctx, approval_id: str, purpose: str) -> list[Event]:
    """How long the approver takes: drawn, and recorded as chaos when it is more than the
    next step (under poll rules: more than the first status check)."""
    lo, hi = ctx.chaos.polls
    n = ctx.rng.randint(ctx.seq, f"{purpose}:{approval_id}", lo, hi)
    if n <= 1:
        return []
    params = {"polls": n} if world.rules.decide_on == "poll" else {"minutes": n * MINUTES_PER_STEP}
    return [ChaosInjected(kind="approval_latency", target=approval_id, params=params)]


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
    away = world.people[approver]
    if away.out_of_office and world.rules.away_approver == "refuse":
        return reject(
            "approver_out_of_office",
            f"{away.person_id} is out of office (OOO) and takes no requests. Find who covers "
            f"for them with datahub.get_approver(role); {atype.name} needs the "
            f"{ROLE_TITLES.get(atype.required_role, atype.required_role)}.",
        )
    for f in atype.fields:
        # A figure must be a finite number: "inf", "NaN" or 1e999 would match any record.
        if f.kind == "metric" and f.key in p.data and as_number(p.data[f.key]) is None:
            return reject(
                "invalid_number",
                f"{f.key} must be a finite number written plainly, as DataHub shows it (85.0, "
                f"1,842.50, 85%), not {p.data[f.key]!r}.",
            )
    ticket_id = None
    for f in atype.fields:
        if f.kind == "ticket" and isinstance(p.data.get(f.key), str):
            ticket_id = normalize_ticket_id(p.data[f.key])  # type: ignore[arg-type]
    approval_id = world.rules.approval_id(len(world.approvals))
    return [
        ApprovalSubmitted(
            approval_id=approval_id,
            approval_type=atype.name,
            approver=approver,
            data=dict(p.data),
            ticket_id=ticket_id,
        ),
        *_latency(world, ctx, approval_id, "latency"),
    ]


def review(world: World, a: Approval, ctx: Ctx) -> list[Event]:
    """The approver's decision on a request that is due."""
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
                f"{name} cannot approve {atype.name}: it needs the {role} or, while they "
                "are out of office, whoever covers for them. Submit a new request to the "
                "right approver.",
            )
        ]
    ticket = ev.tickets.get(a.ticket_id) if a.ticket_id else None
    if atype.requires_verified_ticket and not (ticket and ticket.verified):
        return [
            _decided(
                a,
                "rejected",
                "ticket_unverified",
                f"Ticket {a.ticket_id} was not verified when this was submitted. Verify "
                "it, then submit a new request.",
            )
        ]
    if ev.prior_missing:
        return [
            _decided(
                a,
                "rejected",
                "missing_prior_approval",
                f"{', '.join(ev.prior_missing)} must name an approved request of the type "
                "this one follows. Get that approved first, then submit a new request.",
            )
        ]
    if ev.mismatched:
        return [
            _decided(
                a,
                "rejected",
                "data_mismatch",
                f"{', '.join(ev.mismatched)} does not match the system of record. Refresh "
                "the data in DataHub and submit a new request.",
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
        decision=decision,  # type: ignore[arg-type]
        cause=cause,
        reason=reason,
    )


def due_events(world: World, ctx: Ctx) -> list[Event]:
    """What the approvers do as the clock passes: decide requests that are due (if they are in
    office), let requests past the SLA expire. Run at the start of every step."""
    out: list[Event] = []
    now = world.clock
    sla = world.services.sla
    for a in world.approvals.values():
        if a.status != "pending" or a.decide_at_poll is not None:
            continue  # decided already, or decided when its status is checked
        if not world.people[a.approver].out_of_office and now >= a.due_at:
            out += review(world, a, ctx)
        elif sla is not None and now >= a.pending_since + sla:
            out.append(ApprovalExpired(approval_id=a.approval_id))
    return out


@registry.tool(
    "check_status",
    ApprovalIdParams,
    "Read an approval's status: pending until the approver decides (they take a few minutes), "
    "then approved or rejected with the reason.",
)
def check_status(world: World, p: ApprovalIdParams, ctx: Ctx) -> list[Event]:
    a = _find(world, p.approval_id)
    if a is None:
        return _no_approval(world, p.approval_id)
    polls = a.polls + 1
    if (
        a.status == "pending"
        and a.decide_at_poll is not None
        and polls >= a.decide_at_poll
        and not world.people[a.approver].out_of_office
    ):  # poll rules: this check gets the decision
        decided = review(world, a, ctx)
        status = decided[-1].decision  # type: ignore[attr-defined]
        return [*decided, ApprovalPolled(approval_id=a.approval_id, polls=polls, status=status)]
    return [ApprovalPolled(approval_id=a.approval_id, polls=polls, status=a.status)]


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
                " Its approver is out of office: submit a new request to whoever covers for "
                "them (datahub.get_approver)."
            )
        elif a.status == "expired":
            hint = " It expired: submit a new request."
        return reject(
            "not_rejected",
            f"Only rejected approvals can be escalated; {a.approval_id} is {a.status}.{hint}",
        )
    escalated = ApprovalEscalated(approval_id=a.approval_id, reason=p.reason)
    if world.rules.decide_on == "poll":
        return [escalated]  # decided at the next status check, as the original's were
    return [escalated, *_latency(world, ctx, a.approval_id, f"latency:{a.escalations + 1}")]


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
    now = world.clock
    mismatched: list[str] = []
    unread: list[str] = []
    stale_used: list[str] = []
    prior_missing: list[str] = []
    for f in atype.fields:
        value = e.data.get(f.key)
        if f.optional and (value is None or (isinstance(value, str) and not value.strip())):
            continue
        if f.kind == "metric" and f.metric in world.metrics:
            m = world.metrics[f.metric]
            n = as_number(value)
            if n is None or not same_number(n, m.true_value):
                mismatched.append(f.key)
                if n is not None and m.stale(now) and same_number(n, m.value):
                    stale_used.append(f.key)
            if not m.read_fresh(now):
                unread.append(f.key)
        elif f.kind == "ticket" and (
            not isinstance(value, str) or normalize_ticket_id(value) not in world.tickets
        ):
            mismatched.append(f.key)
        elif f.kind == "approval":
            prior = world.approvals.get(value.strip().upper()) if isinstance(value, str) else None
            if (
                prior is None
                or prior.status != "approved"
                or prior.approval_type != f.approval_type
                or prior.ticket_id != (normalize_ticket_id(e.ticket_id) if e.ticket_id else None)
            ):
                prior_missing.append(f.key)
    about = request_object(atype, e.data)
    duplicate_of = next(
        (
            a.approval_id
            for a in world.approvals.values()
            if a.approval_type == atype.name
            # Still open: pending, approved, or rejected by chance (the approver asked for an
            # escalation, which reopens it; a new request beside it is a hedge).
            and (a.status in ("pending", "approved") or a.cause == "chance")
            and a.approver == a.evidence.routed_to  # a misrouted request is its own damage
            and request_object(atype, a.data) == about
        ),
        None,
    )
    return Evidence(
        at=now,
        routed_to=routed,
        authorized=e.approver in (routed, holder),
        tickets=world.tickets,
        metrics=world.metrics,
        mismatched=tuple(mismatched),
        unread=tuple(unread),
        stale_used=tuple(stale_used),
        prior_missing=tuple(prior_missing),
        duplicate_of=duplicate_of,
    )


def on_type_defined(world: World, e: ApprovalTypeDefined) -> World:
    t = ApprovalType(
        e.approval_type,
        e.description,
        e.required_role,
        tuple(
            ApprovalField(f.key, f.kind, f.metric, f.approval_type, f.description, f.optional)
            for f in e.fields
        ),
        e.requires_verified_ticket,
        e.grants,
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
        due_at=world.clock + MINUTES_PER_STEP,
        pending_since=world.clock,
        decide_at_poll=1 if world.rules.decide_on == "poll" else None,
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
    world = _put(
        world,
        a._replace(
            status=e.decision,
            reason=e.reason,
            cause=e.cause,
            rejections=a.rejections + rejected,
            chance_rejections=a.chance_rejections + (rejected and e.cause == "chance"),
            decided_at=world.clock,
        ),
    )
    grants = world.approval_types[a.approval_type].grants
    if not rejected and grants and isinstance(a.data.get(grants), str):
        world = world._replace(grants=world.grants | {str(a.data[grants]).strip().lower()})
    return world


def on_expired(world: World, e: ApprovalExpired) -> World:
    a = world.approvals[e.approval_id]
    return _put(world, a._replace(status="expired", reason="No decision before the deadline."))


def on_escalated(world: World, e: ApprovalEscalated) -> World:
    a = world.approvals[e.approval_id]
    return _put(
        world,
        a._replace(
            status="pending",
            due_at=world.clock + MINUTES_PER_STEP,
            pending_since=world.clock,
            reason=None,
            cause=None,
            escalations=a.escalations + 1,
            decide_at_poll=a.polls + 1 if world.rules.decide_on == "poll" else None,
        ),
    )


def on_latency(world: World, e: ChaosInjected) -> World:
    a = world.approvals[e.target]
    if "polls" in e.params:  # poll rules: decided at the n-th status check from now
        return _put(world, a._replace(decide_at_poll=a.polls + int(e.params["polls"])))
    # Logs of the first schema counted polls; one poll is one step of the clock.
    minutes = int(
        e.params.get("minutes", int(e.params.get("polls_required", 1)) * MINUTES_PER_STEP)
    )
    return _put(world, a._replace(due_at=world.clock + minutes))


EVOLVERS = {
    "ApprovalTypeDefined": on_type_defined,
    "ApprovalSubmitted": on_submitted,
    "ApprovalPolled": on_polled,
    "ApprovalDecided": on_decided,
    "ApprovalExpired": on_expired,
    "ApprovalEscalated": on_escalated,
}
CHAOS = {"approval_latency": on_latency}
