"""The five original CompanyOS workflows as scenario templates, and the builder that turns a
(scenario, seed, difficulty) into the events of an initial world.

The world is built clean (every field set, every metric fresh, everyone in office) and chaos is
then layered on as `ChaosInjected` events, so the log says exactly what was broken and the goal
is simply the clean state plus the approval. Tasks are data: a template is its text, its goal,
its own chaos items and its step budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from companyos.events.types import (
    ApprovalFieldSpec,
    ApprovalTypeDefined,
    ApproverRegistered,
    ChaosInjected,
    EpisodeStarted,
    Event,
    ForkRef,
    Goal,
    MetricRecorded,
    TaskAssigned,
    TicketCreated,
)

from .chaos import ChaosProfile, profile
from .rng import KeyedRNG

GENERATOR = "companyos/1"

# ------------------------------------------------------------------ the company (clean state)

PEOPLE: tuple[ApproverRegistered, ...] = (
    ApproverRegistered(
        person_id="u-dana",
        name="Dana Whitfield",
        email="dana.whitfield@acme.example",
        title="Chief Financial Officer",
        role="cfo",
        delegate="u-marcus",
    ),
    ApproverRegistered(
        person_id="u-marcus",
        name="Marcus Lee",
        email="marcus.lee@acme.example",
        title="Deputy CFO (CFO delegate)",
    ),
    ApproverRegistered(
        person_id="u-elena",
        name="Elena Petrova",
        email="elena.petrova@acme.example",
        title="Chief Technology Officer",
        role="cto",
        delegate="u-raj",
    ),
    ApproverRegistered(
        person_id="u-raj",
        name="Raj Malhotra",
        email="raj.malhotra@acme.example",
        title="VP Engineering (CTO delegate)",
    ),
    ApproverRegistered(
        person_id="u-grace",
        name="Grace Kim",
        email="grace.kim@acme.example",
        title="Head of People",
        role="hr_lead",
        delegate="u-tom",
    ),
    ApproverRegistered(
        person_id="u-tom",
        name="Tom Becker",
        email="tom.becker@acme.example",
        title="HR Business Partner (HR Lead delegate)",
    ),
    ApproverRegistered(
        person_id="u-omar",
        name="Omar Haddad",
        email="omar.haddad@acme.example",
        title="Procurement Manager",
        role="procurement",
        delegate="u-lina",
    ),
    ApproverRegistered(
        person_id="u-lina",
        name="Lina Suarez",
        email="lina.suarez@acme.example",
        title="Procurement Specialist (Procurement delegate)",
    ),
)


@dataclass(frozen=True, slots=True)
class MetricSeed:
    event: MetricRecorded
    stale_value: float
    stale_days: int


METRICS: tuple[MetricSeed, ...] = (
    MetricSeed(
        MetricRecorded(
            name="vendor_compliance_score",
            value=85.0,
            unit="%",
            source="compliance_db",
            threshold_op=">=",
            threshold=80.0,
            description="Vendor Northwind Analytics' security compliance score",
        ),
        stale_value=72.0,
        stale_days=4,
    ),
    MetricSeed(
        MetricRecorded(
            name="expense_amount",
            value=1842.5,
            unit="USD",
            source="expense_system",
            description="Amount claimed on expense report EXP-2077",
        ),
        stale_value=1650.0,
        stale_days=3,
    ),
    MetricSeed(
        MetricRecorded(
            name="auth_service_error_rate",
            value=7.9,
            unit="%",
            source="observability",
            threshold_op="<=",
            threshold=1.0,
            description="auth-service 5xx error rate over the last hour",
        ),
        stale_value=2.1,
        stale_days=2,
    ),
    MetricSeed(
        MetricRecorded(
            name="license_expiry_days",
            value=12.0,
            unit="days",
            source="license_manager",
            description="Days until the DesignSuite Enterprise licence expires",
        ),
        stale_value=19.0,
        stale_days=7,
    ),
    MetricSeed(
        MetricRecorded(
            name="hr_headcount",
            value=148.0,
            unit="people",
            source="hris",
            description="Current employee head-count",
        ),
        stale_value=142.0,
        stale_days=7,
    ),
)


def _type(
    name: str,
    role: str,
    description: str,
    fields: list[tuple[str, str, str | None, str]],
    verified: bool = True,
) -> ApprovalTypeDefined:
    return ApprovalTypeDefined(
        approval_type=name,
        description=description,
        required_role=role,
        fields=tuple(
            ApprovalFieldSpec(key=k, kind=kind, metric=m, description=d)  # type: ignore[arg-type]
            for k, kind, m, d in fields
        ),
        requires_verified_ticket=verified,
    )


APPROVAL_TYPES: tuple[ApprovalTypeDefined, ...] = (
    _type(
        "vendor_onboarding",
        "cfo",
        "Onboard a new vendor.",
        [
            ("ticket_id", "ticket", None, "the onboarding ticket"),
            ("vendor", "text", None, "the vendor's name"),
            (
                "compliance_score",
                "metric",
                "vendor_compliance_score",
                "current compliance score from DataHub (vendor_compliance_score)",
            ),
        ],
    ),
    _type(
        "expense_report",
        "cfo",
        "Reimburse an expense report.",
        [
            ("ticket_id", "ticket", None, "the expense ticket"),
            ("employee", "text", None, "who claims the expense"),
            ("amount", "metric", "expense_amount", "the amount from DataHub (expense_amount)"),
        ],
    ),
    _type(
        "bug_escalation",
        "cto",
        "Escalate a production bug to the CTO.",
        [
            ("ticket_id", "ticket", None, "the bug ticket"),
            ("service", "text", None, "the affected service"),
            (
                "error_rate",
                "metric",
                "auth_service_error_rate",
                "current error rate from DataHub (auth_service_error_rate)",
            ),
        ],
        verified=False,
    ),
    _type(
        "license_renewal",
        "procurement",
        "Renew a software licence.",
        [
            ("ticket_id", "ticket", None, "the renewal ticket"),
            ("license", "text", None, "the licence's product name"),
            (
                "expiry_days",
                "metric",
                "license_expiry_days",
                "days to expiry from DataHub (license_expiry_days)",
            ),
        ],
    ),
    _type(
        "handbook_update",
        "hr_lead",
        "Publish a change to the employee handbook.",
        [
            ("ticket_id", "ticket", None, "the handbook ticket"),
            ("section", "text", None, "the handbook section changed"),
        ],
    ),
)

TICKETS: tuple[TicketCreated, ...] = (
    TicketCreated(
        ticket_id="TKT-1042",
        title="Onboard vendor Northwind Analytics",
        description="New analytics vendor for the marketing team; needs security "
        "compliance check and CFO sign-off.",
        priority="high",
        assignee="Priya Raman",
        status="open",
    ),
    TicketCreated(
        ticket_id="TKT-2077",
        title="Expense report EXP-2077: Q3 sales offsite",
        description="Jordan Ellis' offsite expenses (venue and travel).",
        priority="medium",
        assignee="Jordan Ellis",
        status="open",
    ),
    TicketCreated(
        ticket_id="TKT-3191",
        title="auth-service returning 5xx on login",
        description="Login failures spiking since the 09:40 deploy of auth-service.",
        priority="critical",
        assignee="Sam Okafor",
        status="open",
    ),
    TicketCreated(
        ticket_id="TKT-4410",
        title="Renew DesignSuite Enterprise licence",
        description="Annual renewal for the design team's DesignSuite seats.",
        priority="medium",
        assignee="Chris Novak",
        status="open",
    ),
    TicketCreated(
        ticket_id="TKT-5120",
        title="Handbook: update Remote work policy",
        description="Publish the revised Remote work section of the employee handbook.",
        priority="medium",
        assignee="Ana Costa",
        status="open",
    ),
    # Distractors: plausible work that no task asks about.
    TicketCreated(
        ticket_id="TKT-1043",
        title="Vendor Northwind Analytics: kickoff meeting",
        description="Schedule the kickoff once onboarding is approved.",
        priority="low",
        assignee="Priya Raman",
        status="open",
    ),
    TicketCreated(
        ticket_id="TKT-3188",
        title="auth-service: flaky integration test",
        description="test_refresh_token fails intermittently on CI.",
        priority="low",
        assignee="Sam Okafor",
        status="in_progress",
    ),
    TicketCreated(
        ticket_id="TKT-4402",
        title="Cancel unused DesignSuite seats",
        description="Five seats unused for 90 days.",
        priority="low",
        assignee="Chris Novak",
        status="resolved",
    ),
)


# ------------------------------------------------------------------ templates


@dataclass(frozen=True, slots=True)
class ChaosItem:
    kind: str
    target: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Template:
    scenario_id: str
    title: str
    text: str
    goal: Goal
    max_steps: int


def _stale(metric: str) -> ChaosItem:
    seed = next(m for m in METRICS if m.event.name == metric)
    return ChaosItem(
        "stale_metric", metric, {"served_value": seed.stale_value, "stale_days": seed.stale_days}
    )


def _away(person_id: str) -> ChaosItem:
    person = next(p for p in PEOPLE if p.person_id == person_id)
    return ChaosItem(
        "out_of_office",
        person_id,
        {"note": f"Auto-reply: {person.name} is out of office this week."},
    )


TEMPLATES: tuple[Template, ...] = (
    Template(
        "vendor_onboarding",
        "Vendor onboarding",
        "Onboard the vendor Northwind Analytics (ticket TKT-1042). The ticket must have priority "
        "'high' and be verified. Confirm the vendor's compliance score in DataHub is current, then "
        "get a vendor_onboarding approval from the CFO, or whoever is covering for them, with the "
        "ticket id, the vendor's name and the compliance score, and see it through to approval.",
        Goal(
            ticket_id="TKT-1042",
            ticket_fields={"priority": "high", "assignee": "Priya Raman"},
            unblock=True,
            verify=True,
            metrics=("vendor_compliance_score",),
            approval_type="vendor_onboarding",
            approval_data={"vendor": "Northwind Analytics"},
        ),
        20,
    ),
    Template(
        "expense_report",
        "Expense report",
        "Process expense report EXP-2077 (ticket TKT-2077) for Jordan Ellis. Verify the ticket, "
        "confirm the claimed amount in DataHub, then get an expense_report approval from the CFO, "
        "or whoever is covering for them, with the ticket id, the employee and the amount, and "
        "see it through to approval.",
        Goal(
            ticket_id="TKT-2077",
            ticket_fields={"priority": "medium", "assignee": "Jordan Ellis"},
            unblock=True,
            verify=True,
            metrics=("expense_amount",),
            approval_type="expense_report",
            approval_data={"employee": "Jordan Ellis"},
        ),
        18,
    ),
    Template(
        "bug_escalation",
        "Bug escalation",
        "Escalate the auth-service login outage (ticket TKT-3191) to the CTO. The ticket must not "
        "be blocked and must be assigned to Sam Okafor, the on-call engineer. Check the current "
        "auth-service error rate in DataHub, then get a bug_escalation approval from the CTO, or "
        "whoever is covering for them, with the ticket id, the service (auth-service) and the "
        "error rate, and see it through to approval.",
        Goal(
            ticket_id="TKT-3191",
            ticket_fields={"priority": "critical", "assignee": "Sam Okafor"},
            unblock=True,
            verify=False,
            metrics=("auth_service_error_rate",),
            approval_type="bug_escalation",
            approval_data={"service": "auth-service"},
        ),
        18,
    ),
    Template(
        "license_renewal",
        "Licence renewal",
        "Renew the DesignSuite Enterprise licence (ticket TKT-4410). Verify the ticket, check how "
        "many days remain before the licence expires in DataHub, then get a license_renewal "
        "approval from Procurement, or whoever is covering for them, with the ticket id, the "
        "licence (DesignSuite Enterprise) and the days to expiry, and see it through to approval.",
        Goal(
            ticket_id="TKT-4410",
            ticket_fields={"priority": "medium", "assignee": "Chris Novak"},
            unblock=True,
            verify=True,
            metrics=("license_expiry_days",),
            approval_type="license_renewal",
            approval_data={"license": "DesignSuite Enterprise"},
        ),
        16,
    ),
    Template(
        "handbook_update",
        "Handbook update",
        "Publish the revised Remote work section of the employee handbook (ticket TKT-5120). The "
        "ticket must have priority 'medium' and be verified; then get a handbook_update approval "
        "from the HR Lead, or whoever is covering for them, with the ticket id and the section "
        "(Remote work), and see it through to approval.",
        Goal(
            ticket_id="TKT-5120",
            ticket_fields={"priority": "medium", "assignee": "Ana Costa"},
            unblock=True,
            verify=True,
            metrics=(),
            approval_type="handbook_update",
            approval_data={"section": "Remote work"},
        ),
        16,
    ),
)
SCENARIOS: dict[str, Template] = {t.scenario_id: t for t in TEMPLATES}

ORIGINAL_CHAOS: tuple[ChaosItem, ...] = (
    ChaosItem("missing_field", "TKT-1042", {"field": "priority"}),
    ChaosItem(
        "blocked_ticket",
        "TKT-3191",
        {"reason": "Waiting on infra access for the on-call engineer (since granted)."},
    ),
    ChaosItem("missing_field", "TKT-3191", {"field": "assignee"}),
    ChaosItem("missing_field", "TKT-5120", {"field": "priority"}),
    _stale("vendor_compliance_score"),
    _stale("hr_headcount"),
    _away("u-dana"),
)
"""The original CompanyOS's world as it always was: a ticket missing its priority, a blocked
ticket missing its assignee, stale compliance and head-count data, the CFO out of office. It is
difficulty 2; difficulty 1 keeps each item with probability one half."""
SCENARIO_IDS: tuple[str, ...] = tuple(SCENARIOS)


class UnknownScenario(ValueError):
    pass


def resolve_scenario(task_id: str | int | None, rng: KeyedRNG) -> Template:
    """A template from a name (case and separators ignored), an index 0-4, or the seed."""
    if task_id is None:
        return SCENARIOS[rng.choice(0, "scenario", SCENARIO_IDS)]
    if isinstance(task_id, int) and not isinstance(task_id, bool):
        if 0 <= task_id < len(TEMPLATES):
            return TEMPLATES[task_id]
    elif isinstance(task_id, str):
        key = task_id.strip().lower().replace("-", "_").replace(" ", "_")
        if key.isdigit() and int(key) < len(TEMPLATES):
            return TEMPLATES[int(key)]
        key = key.replace("licence", "license")
        if key in SCENARIOS:
            return SCENARIOS[key]
    names = ", ".join(SCENARIO_IDS)
    raise UnknownScenario(
        f"unknown task {task_id!r}: use one of {names} (or 0-{len(TEMPLATES) - 1})"
    )


# ------------------------------------------------------------------ building an instance


def _chaos_items(t: Template, chaos: ChaosProfile, rng: KeyedRNG) -> list[ChaosItem]:
    items = [
        c
        for i, c in enumerate(ORIGINAL_CHAOS)
        if chaos.setup_chaos >= 1.0 or rng.chance(0, f"setup:{i}:{c.kind}", chaos.setup_chaos)
    ]
    if chaos.extra_chaos:
        role = next(
            a.required_role for a in APPROVAL_TYPES if a.approval_type == t.goal.approval_type
        )
        holder = next(p.person_id for p in PEOPLE if p.role == role)
        extra = [_stale(m) for m in t.goal.metrics]
        extra.append(_away(holder))
        if "priority" in t.goal.ticket_fields:
            extra.append(ChaosItem("missing_field", t.goal.ticket_id, {"field": "priority"}))
        have = {(c.kind, c.target, tuple(sorted(c.params.items()))) for c in items}
        items += [
            c for c in extra if (c.kind, c.target, tuple(sorted(c.params.items()))) not in have
        ]
    return items


def worst_case_steps(t: Template, items: list[ChaosItem], chaos: ChaosProfile) -> int:
    """Steps the oracle needs when every draw goes against it, faults aside."""
    broken = {(c.kind, c.params.get("field")) for c in items if c.target == t.goal.ticket_id}
    fixes = sum(("missing_field", f) in broken for f in t.goal.ticket_fields)
    fixes += ("blocked_ticket", None) in broken and t.goal.unblock
    hi = chaos.polls[1]
    return (
        fixes
        + int(t.goal.verify)
        + len(t.goal.metrics)
        + 1  # submit
        + hi
        + chaos.max_chance_rejections * (1 + hi)
    )


def build_episode(
    task_id: str | int | None,
    seed: int,
    difficulty: int,
    *,
    reward_profile: str = "default",
    max_steps: int | None = None,
    forked_from: ForkRef | None = None,
    agent: str | None = None,
) -> list[Event]:
    """The opening events of an episode: lifecycle, task, clean world, then chaos."""
    rng = KeyedRNG(seed)
    chaos = profile(difficulty)
    t = resolve_scenario(task_id, rng)
    items = _chaos_items(t, chaos, rng)
    worst = worst_case_steps(t, items, chaos)
    budget = max(t.max_steps, worst + chaos.min_fault_slack) if max_steps is None else max_steps
    events: list[Event] = [
        EpisodeStarted(
            seed=seed,
            scenario=t.scenario_id,
            difficulty=difficulty,
            max_steps=budget,
            reward_profile=reward_profile,
            fault_budget=max(0, budget - worst),
            forked_from=forked_from,
            generator=GENERATOR,
            agent=agent,
        ),
        TaskAssigned(text=t.text, goal=t.goal),
        *APPROVAL_TYPES,
        *PEOPLE,
        *TICKETS,
        *(m.event for m in METRICS),
        *(ChaosInjected(kind=c.kind, target=c.target, params=c.params) for c in items),
    ]
    return events
