"""The original CompanyOS's five tasks in its one fixed world, under its own task ids.

Everything the original fixed is fixed here: the tickets T-001 to T-005 with their titles,
statuses and missing fields, the metrics with their values, units, sources and ages (the vendor
compliance score 4 days stale, 72 until a refresh brings 85), the approver directory (the CFO
sarah.chen out of office, david.kim acting for her), the approval types and the data keys each
requires, requests numbered APR-001, ..., and each task's step budget. The seed decides only
what the original left to chance: which task a reset without a task id gets, transient faults,
how many status checks an approver takes, chance rejections and their reasons (at the rates of
the episode's difficulty; 2, the default, is the original's).

Three conventions of the original's apps differ from the generated worlds' and come with the
world as an `AppRulesSet`: the request ids, approvers deciding when a request's status is
checked (not as the clock passes), and a request to someone out of office refused at once.

Success is graded as for every other world, on the final state (`domain.goals`): the task's
ticket as the task needs it, the data read fresh before it was used, the request made to whoever
acts for the role with the system of record's values, approved, and nothing else changed. Where
the original asked only that a missing priority or assignee be set, any value will do.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from companyos.events.types import (
    ApprovalFieldSpec,
    ApprovalGoal,
    ApprovalTypeDefined,
    ApproverRegistered,
    AppRulesSet,
    ChaosInjected,
    EpisodeStarted,
    Event,
    ForkRef,
    Goal,
    MetricRecorded,
    TaskAssigned,
    TicketCreated,
    TicketGoal,
)

from ..goals import ANY_VALUE
from ..model import DAY
from ..rng import KeyedRNG

DIRECTORY_NOTE = "sarah.chen (CFO) is out of office: david.kim acts as CFO until she is back."


@dataclass(frozen=True, slots=True)
class OriginalTask:
    task_id: str
    text: str
    ticket_id: str
    approval_type: str
    metric: str
    """The DataHub metric the task is about (for handbook_update the original named one its
    success never needed: the goal does not ask for it)."""
    approver_role: str
    """The role as the original's policies ask `get_approver` for it."""
    flags: tuple[str, ...]
    """The original's progress flags, in its order (`projections.original` evaluates them)."""
    goal: Goal
    max_steps: int


def _task(
    task_id: str,
    text: str,
    ticket: TicketGoal,
    approval_type: str,
    metric: str,
    role: str,
    flags: tuple[str, ...],
    max_steps: int,
    *,
    about: dict[str, str],
    needs_metric: bool = True,
) -> OriginalTask:
    goal = Goal(
        tickets=(ticket,),
        metrics=(metric,) if needs_metric else (),
        approvals=(ApprovalGoal(approval_type=approval_type, mentions=about),),
    )
    return OriginalTask(
        task_id, text, ticket.ticket_id, approval_type, metric, role, flags, goal, max_steps
    )


TASKS: dict[str, OriginalTask] = {
    t.task_id: t
    for t in (
        _task(
            "task_vendor_onboarding",
            "Complete vendor onboarding for ACME Corp. Set a priority on its ticket (it has "
            "none), verify the ticket, check compliance data, and submit CFO approval.",
            TicketGoal(ticket_id="T-001", fields={"priority": ANY_VALUE}, verify=True),
            "vendor_onboarding",
            "vendor_compliance_score",
            "CFO_DELEGATE",
            (
                "ticket_verified",
                "ticket_priority_set",
                "metric_refreshed",
                "approval_submitted",
                "approval_approved",
            ),
            20,
            about={"vendor_name": "ACME"},
        ),
        _task(
            "task_expense_report",
            "Process expense report #447 for employee john.doe. Verify the ticket, confirm the "
            "amount from DataHub, and get CFO approval.",
            TicketGoal(ticket_id="T-002", verify=True),
            "expense_report",
            "expense_report_447_amount",
            "CFO_DELEGATE",
            ("ticket_verified", "metric_queried", "approval_submitted", "approval_approved"),
            18,
            about={"employee_id": "john.doe", "report_id": "447"},
        ),
        _task(
            "task_bug_escalation",
            "Escalate critical bug ticket T-003 to engineering. Unblock the ticket, assign it "
            "to the engineering team (it has no assignee), pull error rate from monitoring, "
            "submit CTO escalation.",
            TicketGoal(ticket_id="T-003", fields={"assignee": ANY_VALUE}, unblock=True),
            "bug_escalation",
            "auth_service_error_rate",
            "CTO",
            (
                "ticket_unblocked",
                "ticket_assignee_set",
                "metric_queried",
                "approval_submitted",
                "approval_approved",
            ),
            18,
            about={},  # its request names the ticket: that is what it is about
        ),
        _task(
            "task_license_renewal",
            "Renew the Q3 software license before it expires. Verify its ticket, check expiry "
            "days from DataHub and get Procurement approval.",
            TicketGoal(ticket_id="T-004", verify=True),
            "license_renewal",
            "software_license_expiry_days",
            "PROCUREMENT",
            ("ticket_verified", "metric_queried", "approval_submitted", "approval_approved"),
            16,
            about={"license_name": "Q3"},
        ),
        _task(
            "task_handbook_update",
            "Process the HR handbook update for section 4. Set priority on the ticket, verify "
            "it, and get HR Lead approval.",
            TicketGoal(ticket_id="T-005", fields={"priority": ANY_VALUE}, verify=True),
            "handbook_update",
            "employee_count_hr_dept",
            "HR_LEAD",
            ("ticket_priority_set", "ticket_verified", "approval_submitted", "approval_approved"),
            16,
            about={"section": "4"},
            needs_metric=False,
        ),
    )
}
TASK_IDS: tuple[str, ...] = tuple(TASKS)


# ------------------------------------------------------------------ the one world


@dataclass(frozen=True, slots=True)
class OriginalTicket:
    ticket_id: str
    title: str
    tags: tuple[str, ...]
    status: str
    priority: str | None
    assignee: str | None
    missing: tuple[str, ...] = ()
    """Fields the world takes away (`missing_field` chaos)."""
    blocked: str | None = None
    """Why it is blocked (`blocked_ticket` chaos)."""


TICKETS: tuple[OriginalTicket, ...] = (
    OriginalTicket(
        "T-001",
        "Onboard vendor ACME Corp",
        ("vendor", "compliance"),
        "open",
        "high",
        "unknown",
        missing=("priority",),
    ),
    OriginalTicket(
        "T-002", "Process expense report #447", ("finance", "expense"), "open", "high", "john.doe"
    ),
    OriginalTicket(
        "T-003",
        "Escalate critical bug in auth service",
        ("engineering", "bug"),
        "open",
        "critical",
        "mike.ross",
        missing=("assignee",),
        blocked="Blocked pending triage.",
    ),
    OriginalTicket(
        "T-004",
        "Renew software license for Q3",
        ("procurement", "license"),
        "open",
        "medium",
        "jane.smith",
    ),
    OriginalTicket(
        "T-005",
        "Update employee handbook section 4",
        ("hr", "documentation"),
        "open",
        "medium",
        "hr.team",
        missing=("priority",),
    ),
)
TAGS: dict[str, tuple[str, ...]] = {t.ticket_id: t.tags for t in TICKETS}


@dataclass(frozen=True, slots=True)
class OriginalMetric:
    name: str
    description: str
    value: float
    """The system of record (what a refresh brings)."""
    unit: str
    source: str
    days_old: int
    threshold: tuple[str, float] | None = None
    served: float | None = None
    """What the stale cache serves until a refresh, if it differs."""


STALE_AFTER_DAYS = 2
"""The original trusted data up to 2 days old."""

METRICS: tuple[OriginalMetric, ...] = (
    OriginalMetric(
        "vendor_compliance_score",
        "ACME Corp's vendor compliance score (80 passes).",
        85.0,
        "percent",
        "compliance_db",
        4,
        (">=", 80.0),
        served=72.0,
    ),
    OriginalMetric(
        "expense_report_447_amount",
        "Amount claimed on expense report #447.",
        4350.0,
        "USD",
        "finance_system",
        0,
    ),
    OriginalMetric(
        "auth_service_error_rate",
        "Error rate of the auth service (the SLA allows 5).",
        18.5,
        "percent",
        "monitoring",
        0,
        ("<=", 5.0),
    ),
    OriginalMetric(
        "software_license_expiry_days",
        "Days until the Q3 software license expires.",
        12.0,
        "days",
        "procurement_db",
        1,
    ),
    OriginalMetric(
        "employee_count_hr_dept",
        "Head count of the HR department.",
        31.0,
        "headcount",
        "hr_system",
        7,
        served=24.0,
    ),
)
METRIC_BY_NAME = {m.name: m for m in METRICS}

# (person id, name, title, role, delegate)
PEOPLE: tuple[tuple[str, str, str, str | None, str | None], ...] = (
    ("sarah.chen", "Sarah Chen", "Chief Financial Officer", "cfo", "david.kim"),
    ("david.kim", "David Kim", "CFO delegate", "cfo_delegate", None),
    ("mike.ross", "Mike Ross", "Chief Technology Officer", "cto", None),
    ("priya.nair", "Priya Nair", "HR Lead", "hr_lead", None),
    ("tom.baker", "Tom Baker", "Procurement", "procurement", None),
    ("john.doe", "John Doe", "Account Executive", None, None),
    ("jane.smith", "Jane Smith", "IT Asset Manager", None, None),
)
ROLE_NAMES = {
    "cfo": "CFO",
    "cfo_delegate": "CFO_DELEGATE",
    "cto": "CTO",
    "hr_lead": "HR_LEAD",
    "procurement": "PROCUREMENT",
}
"""The directory's role names as the original spelt them."""

# approval type -> (required role, description, ((key, kind, metric or None), ...))
APPROVAL_TYPES: dict[str, tuple[str, str, tuple[tuple[str, str, str | None], ...]]] = {
    "vendor_onboarding": (
        "cfo",
        "Onboard a new vendor.",
        (("vendor_name", "text", None), ("compliance_score", "metric", "vendor_compliance_score")),
    ),
    "expense_report": (
        "cfo",
        "Reimburse an expense report.",
        (
            ("amount", "metric", "expense_report_447_amount"),
            ("employee_id", "text", None),
            ("report_id", "text", None),
        ),
    ),
    "bug_escalation": (
        "cto",
        "Escalate a production bug to the CTO.",
        (("ticket_id", "ticket", None), ("error_rate", "metric", "auth_service_error_rate")),
    ),
    "license_renewal": (
        "procurement",
        "Renew a software licence.",
        (
            ("license_name", "text", None),
            ("expiry_days", "metric", "software_license_expiry_days"),
        ),
    ),
    "handbook_update": (
        "hr_lead",
        "Publish a change to the employee handbook.",
        (("section", "text", None), ("change_summary", "text", None)),
    ),
}

RULES = AppRulesSet(
    first_approval_number=1,
    approval_number_digits=3,
    decide_on="poll",
    away_approver="refuse",
    closed_read_only=False,
    link_needs_approval=False,
)


def _world_events() -> list[Event]:
    """The fixed world, clean, then the original's chaos laid on it as events."""
    events: list[Event] = [RULES]
    for name, (role, description, fields) in APPROVAL_TYPES.items():
        events.append(
            ApprovalTypeDefined(
                approval_type=name,
                description=description,
                required_role=role,
                fields=tuple(
                    ApprovalFieldSpec(key=k, kind=kind, metric=m)  # type: ignore[arg-type]
                    for k, kind, m in fields
                ),
                requires_verified_ticket=False,  # the original's requests named no ticket
            )
        )
    for pid, name, title, role, delegate in PEOPLE:
        events.append(
            ApproverRegistered(
                person_id=pid,
                name=name,
                email=f"{pid}@companyos.example",
                title=title,
                role=role,
                delegate=delegate,
            )
        )
    for t in TICKETS:
        events.append(
            TicketCreated(
                ticket_id=t.ticket_id,
                title=t.title,
                description=f"Tags: {', '.join(t.tags)}.",
                priority=t.priority,
                assignee=t.assignee,
                status=t.status,
            )
        )
    for m in METRICS:
        op, bound = m.threshold if m.threshold else (None, None)
        events.append(
            MetricRecorded(
                name=m.name,
                description=m.description,
                value=m.value,
                unit=m.unit,
                source=m.source,
                age_minutes=0 if m.served is not None else m.days_old * DAY,
                max_age_minutes=STALE_AFTER_DAYS * DAY,
                threshold_op=op,  # type: ignore[arg-type]
                threshold=bound,
            )
        )
    for t in TICKETS:
        events += [
            ChaosInjected(kind="missing_field", target=t.ticket_id, params={"field": f})
            for f in t.missing
        ]
        if t.blocked:
            events.append(
                ChaosInjected(
                    kind="blocked_ticket", target=t.ticket_id, params={"reason": t.blocked}
                )
            )
    for m in METRICS:
        if m.served is not None:
            events.append(
                ChaosInjected(
                    kind="stale_metric",
                    target=m.name,
                    params={"served_value": m.served, "age_minutes": m.days_old * DAY},
                )
            )
    events.append(
        ChaosInjected(kind="out_of_office", target="sarah.chen", params={"note": DIRECTORY_NOTE})
    )
    return events


# ------------------------------------------------------------------ episodes


def resolve_task(task_id: object) -> str | None:
    """The original task id ``task_id`` names, or None (case, spaces and dashes ignored)."""
    if not isinstance(task_id, str):
        return None
    key = task_id.strip().lower().replace("-", "_").replace(" ", "_").replace("licence", "license")
    return key if key in TASKS else None


def draw_task(seed: int) -> str:
    """The task a reset without one gets: the original drew one of its five at random."""
    return KeyedRNG(seed).choice(0, "original:task", TASK_IDS)


def instance_id(task_id: str, difficulty: int, seed: int) -> str:
    return f"{task_id}-d{difficulty}-s{seed}"


@functools.lru_cache(maxsize=32)
def budget(task_id: str, difficulty: int) -> int:
    """The task's step budget: the original's own up to its chaos level (difficulty 2); above
    it, where the original never went, at least the honest solver's worst case plus the level's
    fault slack, as for every generated instance."""
    own = TASKS[task_id].max_steps
    if difficulty <= 2:
        return own
    from ..chaos import profile

    _, worst = setup(task_id, difficulty)
    return max(own, worst + profile(difficulty).min_fault_slack)


@functools.lru_cache(maxsize=32)
def setup(task_id: str, difficulty: int) -> tuple[tuple[Event, ...], int]:
    """Every opening event but `EpisodeStarted` (they do not depend on the seed), and the
    honest solver's worst case, which the transient faults are capped against: the budget less
    that worst case (the original's own budget, up to its chaos level) is how many may strike."""
    task = TASKS[task_id]
    assigned = TaskAssigned(
        text=task.text,
        goal=task.goal,
        family=task_id,
        instance_id=instance_id(task_id, difficulty, 0),
    )
    events = (assigned, *_world_events())
    from ..instances import honest_worst_case, oracle_worst_case

    oracle_worst_case(task_id, 0, difficulty, events)  # it must finish too
    return events, honest_worst_case(task_id, 0, difficulty, events)


def episode_events(
    task_id: str,
    seed: int,
    difficulty: int,
    *,
    generator: str,
    reward_profile: str = "default",
    max_steps: int | None = None,
    forked_from: ForkRef | None = None,
    agent: str | None = None,
    show_progress: bool = False,
) -> list[Event]:
    """The opening events of an episode of an original task (``task_id`` as `resolve_task`
    returns it)."""
    events, worst = setup(task_id, difficulty)
    steps = budget(task_id, difficulty) if max_steps is None else max_steps
    started = EpisodeStarted(
        seed=seed,
        scenario=task_id,
        difficulty=difficulty,
        max_steps=steps,
        reward_profile=reward_profile,
        fault_budget=max(0, steps - worst),
        forked_from=forked_from,
        generator=generator,
        agent=agent,
        show_progress=show_progress,
    )
    return [started, _assigned(task_id, difficulty, seed), *events[1:]]


@functools.lru_cache(maxsize=256)
def _assigned(task_id: str, difficulty: int, seed: int) -> TaskAssigned:
    """The task event naming its instance: kept, so that an instance played again opens with
    the very same event objects (the store keeps the JSON and hashes of those)."""
    assigned = setup(task_id, difficulty)[0][0]
    assert isinstance(assigned, TaskAssigned)
    return assigned.model_copy(update={"instance_id": instance_id(task_id, difficulty, seed)})
