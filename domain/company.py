"""The company every instance is set in, drawn from the instance's seed: its people and who
covers for whom, its approval types, and the unrelated tickets and metrics that make the apps
look like a real company's (distractors).

Everything here is data or a pure function of a `Draw`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from companyos.events.types import (
    ApprovalFieldSpec,
    ApprovalTypeDefined,
    ApproverRegistered,
    MetricRecorded,
    TicketCreated,
)

from .model import DAY, ROLE_TITLES
from .rng import KeyedRNG

FIRST = (
    "Dana",
    "Marcus",
    "Elena",
    "Raj",
    "Grace",
    "Tom",
    "Omar",
    "Lina",
    "Priya",
    "Sam",
    "Jordan",
    "Chris",
    "Ana",
    "Kofi",
    "Mei",
    "Lars",
    "Ines",
    "Tariq",
    "Zoe",
    "Hugo",
    "Nadia",
    "Felix",
    "Aisha",
    "Bruno",
    "Chloe",
    "Diego",
    "Eva",
    "Farid",
    "Greta",
    "Hana",
    "Ivan",
    "Julia",
    "Kenji",
    "Leila",
    "Mateo",
    "Nora",
    "Oscar",
    "Paula",
    "Quinn",
    "Rosa",
    "Stefan",
    "Tara",
    "Uma",
    "Victor",
    "Wen",
    "Xavier",
    "Yara",
    "Zane",
)
LAST = (
    "Whitfield",
    "Lee",
    "Petrova",
    "Malhotra",
    "Kim",
    "Becker",
    "Haddad",
    "Suarez",
    "Raman",
    "Okafor",
    "Ellis",
    "Novak",
    "Costa",
    "Mensah",
    "Zhang",
    "Nilsson",
    "Moreau",
    "Aziz",
    "Fischer",
    "Laurent",
    "Kowalski",
    "Brennan",
    "Sato",
    "Ortega",
    "Dubois",
    "Varga",
    "Rossi",
    "Jensen",
    "Alvarez",
    "Hoffmann",
    "Nakamura",
    "Okonkwo",
    "Lindqvist",
    "Romero",
    "Schulz",
    "Ivanova",
    "Park",
    "Silva",
    "Weber",
    "Morales",
)
COMPANIES = ("acme", "globex", "initech", "umbrella", "hooli", "vandelay", "stark", "wayne")
TITLES = {
    "cfo": ("Chief Financial Officer", "Deputy CFO", "Finance Director"),
    "cto": ("Chief Technology Officer", "VP Engineering", "Director of Engineering"),
    "hr_lead": ("Head of People", "HR Business Partner", "People Operations Manager"),
    "procurement": ("Procurement Manager", "Procurement Specialist", "Purchasing Officer"),
    "security": ("Head of Security", "Security Engineer", "Security Analyst"),
    "legal": ("General Counsel", "Senior Counsel", "Contracts Manager"),
    "eng_manager": ("Engineering Manager", "Tech Lead", "Staff Engineer"),
}


@dataclass(frozen=True, slots=True)
class Draw:
    """The instance's dice: every draw is keyed by what it is for, so adding a draw never
    shifts another."""

    rng: KeyedRNG
    prefix: str = "gen"
    forced: tuple[tuple[str, bool], ...] = ()
    """(key, outcome) of chances decided in advance: the other way of a task's hidden draw,
    built to size the step budget for both ways."""

    def _key(self, purpose: str) -> str:
        return f"{self.prefix}:{purpose}"

    def choice(self, purpose: str, options: Sequence[Any]) -> Any:
        return self.rng.choice(0, self._key(purpose), options)

    def sample(self, purpose: str, options: Sequence[Any], k: int) -> list[Any]:
        return self.rng.sample(0, self._key(purpose), options, k)

    def integer(self, purpose: str, lo: int, hi: int) -> int:
        return self.rng.randint(0, self._key(purpose), lo, hi)

    def number(self, purpose: str, lo: float, hi: float, digits: int = 1) -> float:
        return round(lo + (hi - lo) * self.rng.uniform(0, self._key(purpose)), digits)

    def chance(self, purpose: str, p: float) -> bool:
        key = self._key(purpose)
        for forced, outcome in self.forced:
            if forced == key:
                return outcome
        return self.rng.chance(0, key, p)

    def sub(self, prefix: str) -> Draw:
        return Draw(self.rng, f"{self.prefix}:{prefix}", self.forced)

    def force(self, purpose: str, outcome: bool) -> Draw:
        """This draw with the chance ``purpose`` decided in advance."""
        return Draw(self.rng, self.prefix, (*self.forced, (self._key(purpose), outcome)))


def slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")


# ------------------------------------------------------------------ approval types


@dataclass(frozen=True, slots=True)
class TypeSpec:
    role: str
    description: str
    fields: tuple[tuple[str, str, str], ...]
    """(key, kind, description); kind "metric" fields are bound to a metric per instance."""
    verified: bool = True
    grants: str | None = None
    prior: str | None = None
    """For "approval" fields: the type the referenced request must have."""
    optional: tuple[str, ...] = ()
    """Keys a request may leave out (a sign-off the policy asks for only sometimes)."""


APPROVAL_TYPES: dict[str, TypeSpec] = {
    "vendor_onboarding": TypeSpec(
        "cfo",
        "Onboard a new vendor.",
        (
            ("ticket_id", "ticket", "the onboarding ticket"),
            ("vendor", "text", "the vendor's name"),
            ("compliance_score", "metric", "the vendor's current compliance score from DataHub"),
        ),
    ),
    "expense_report": TypeSpec(
        "cfo",
        "Reimburse an expense report.",
        (
            ("ticket_id", "ticket", "the expense ticket"),
            ("employee", "text", "who claims the expense"),
            ("amount", "metric", "the claimed amount from DataHub"),
        ),
    ),
    "bug_escalation": TypeSpec(
        "cto",
        "Escalate a production bug to the CTO.",
        (
            ("ticket_id", "ticket", "the bug ticket"),
            ("service", "text", "the affected service"),
            ("error_rate", "metric", "the service's current error rate from DataHub"),
        ),
        verified=False,
    ),
    "license_renewal": TypeSpec(
        "procurement",
        "Renew a software licence.",
        (
            ("ticket_id", "ticket", "the renewal ticket"),
            ("license", "text", "the licence's product name"),
            ("expiry_days", "metric", "days to expiry from DataHub"),
        ),
    ),
    "handbook_update": TypeSpec(
        "hr_lead",
        "Publish a change to the employee handbook.",
        (
            ("ticket_id", "ticket", "the handbook ticket"),
            ("section", "text", "the handbook section changed"),
        ),
    ),
    "purchase_order": TypeSpec(
        "eng_manager",
        "Approve a purchase order (the Engineering Manager's sign-off, which releases it).",
        (
            ("ticket_id", "ticket", "the purchase ticket"),
            ("vendor", "text", "who is paid"),
            ("amount", "metric", "the order's amount from DataHub"),
            (
                "cfo_approval",
                "approval",
                "the CFO's approved purchase_order_cfo request, for orders above the CFO "
                "threshold only (leave it out otherwise)",
            ),
        ),
        prior="purchase_order_cfo",
        optional=("cfo_approval",),
    ),
    "purchase_order_cfo": TypeSpec(
        "cfo",
        "The CFO's sign-off for a purchase order above the policy threshold, obtained before "
        "the manager's.",
        (
            ("ticket_id", "ticket", "the purchase ticket"),
            ("vendor", "text", "who is paid"),
            ("amount", "metric", "the order's amount from DataHub"),
        ),
    ),
    "data_access": TypeSpec(
        "security",
        "Access to a restricted dataset in DataHub.",
        (("dataset", "text", "the dataset to open"), ("reason", "text", "why it is needed")),
        verified=False,
        grants="dataset",
    ),
    "finance_report": TypeSpec(
        "cfo",
        "Sign off a finance report.",
        (
            ("ticket_id", "ticket", "the report ticket"),
            ("report", "text", "the report's name"),
            ("payroll_cost", "metric", "the payroll cost from DataHub"),
        ),
    ),
    "incident_escalation": TypeSpec(
        "cto",
        "Escalate an incident to the CTO.",
        (
            ("ticket_id", "ticket", "the incident ticket"),
            ("service", "text", "the affected service"),
            ("error_rate", "metric", "the service's current error rate from DataHub"),
        ),
        verified=False,
    ),
    "contract_renewal": TypeSpec(
        "legal",
        "Renew a contract.",
        (
            ("ticket_id", "ticket", "the renewal ticket"),
            ("counterparty", "text", "the other party"),
            ("annual_value", "metric", "the contract's annual value from DataHub"),
        ),
    ),
    "offboarding": TypeSpec(
        "hr_lead",
        "Complete an employee's offboarding.",
        (("ticket_id", "ticket", "the offboarding ticket"), ("employee", "text", "who leaves")),
    ),
}


def approval_type(name: str, metrics: dict[str, str] | None = None) -> ApprovalTypeDefined:
    """The event defining a type, its metric fields bound to this instance's metrics (unbound
    fields are not checked against any system of record)."""
    return _approval_type(name, tuple(sorted((metrics or {}).items())))


@functools.lru_cache(maxsize=4096)
def _approval_type(name: str, bound: tuple[tuple[str, str], ...]) -> ApprovalTypeDefined:
    # Kept: every instance defines every type (validated models, a tenth of building one), and
    # events are frozen, so instances can share them.
    spec = APPROVAL_TYPES[name]
    metrics = dict(bound)
    return ApprovalTypeDefined(
        approval_type=name,
        description=spec.description,
        required_role=spec.role,
        fields=tuple(
            ApprovalFieldSpec(
                key=k,
                kind=kind,  # type: ignore[arg-type]
                metric=metrics.get(k) if kind == "metric" else None,
                approval_type=spec.prior if kind == "approval" else None,
                description=d,
                optional=k in spec.optional,
            )
            for k, kind, d in spec.fields
        ),
        requires_verified_ticket=spec.verified,
        grants=spec.grants,
    )


# ------------------------------------------------------------------ people


@dataclass(frozen=True, slots=True)
class Staff:
    """A role's holder, their delegate and the delegate's delegate (person ids)."""

    holder: str
    delegate: str
    second: str


@dataclass(slots=True)
class Company:
    name: str
    domain: str
    people: list[ApproverRegistered] = field(default_factory=list)
    staff: dict[str, Staff] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    """People's full names, in draw order: families take task people from the end."""

    def person(self, person_id: str) -> ApproverRegistered:
        return next(p for p in self.people if p.person_id == person_id)

    def name_of(self, person_id: str) -> str:
        return self.person(person_id).name

    def fresh_name(self, draw: Draw, purpose: str) -> str:
        """Someone not in the directory (an employee, an engineer)."""
        name: str = draw.choice(purpose, Untaken(self.names))
        self.names.append(name)
        return name


ALL_NAMES = tuple(f"{f} {last}" for f in FIRST for last in LAST)
_NAME_AT = {n: i for i, n in enumerate(ALL_NAMES)}


class Untaken(Sequence[str]):
    """`ALL_NAMES` less the names taken, in the same order, without listing them: a draw
    indexes it as it would the list (an instance draws a few names, and listing the 1,920
    possible ones for each was a fifth of building an instance)."""

    __slots__ = ("_gaps",)

    def __init__(self, taken: Iterable[str]) -> None:
        self._gaps = sorted({_NAME_AT[n] for n in taken if n in _NAME_AT})

    def __len__(self) -> int:
        return len(ALL_NAMES) - len(self._gaps)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        for gap in self._gaps:  # ascending: each taken name at or before i shifts it on
            if gap > i:
                break
            i += 1
        return ALL_NAMES[i]


def draw_company(draw: Draw) -> Company:
    name = draw.choice("company", COMPANIES)
    company = Company(name=name, domain=f"{name}.example")
    firsts = draw.sample("first", FIRST, 3 * len(ROLE_TITLES))
    lasts = draw.sample("last", LAST, 3 * len(ROLE_TITLES))
    i = 0
    for role, titles in TITLES.items():
        ids = []
        for rank in range(3):
            first, last = firsts[i], lasts[i]
            i += 1
            pid = f"u-{first.lower()}-{last.lower()}"
            ids.append(pid)
            company.names.append(f"{first} {last}")
            company.people.append(
                ApproverRegistered(
                    person_id=pid,
                    name=f"{first} {last}",
                    email=f"{first.lower()}.{last.lower()}@{company.domain}",
                    title=titles[rank]
                    if rank == 0
                    else f"{titles[rank]} ({ROLE_TITLES[role]} "
                    f"{'delegate' if rank == 1 else 'second delegate'})",
                    role=role if rank == 0 else None,
                )
            )
        company.staff[role] = Staff(*ids)
    # Who covers for whom: holder -> delegate -> second delegate.
    covered = []
    for p in company.people:
        for s in company.staff.values():
            if p.person_id == s.holder:
                p = p.model_copy(update={"delegate": s.delegate})
            elif p.person_id == s.delegate:
                p = p.model_copy(update={"delegate": s.second})
        covered.append(p)
    company.people = covered
    return company


def ticket_id(draw: Draw, purpose: str, taken: set[str]) -> str:
    for attempt in range(100):
        tid = f"TKT-{draw.integer(f'{purpose}:{attempt}', 1000, 9999)}"
        if tid not in taken:
            taken.add(tid)
            return tid
    raise RuntimeError("no free ticket id")  # pragma: no cover - 9000 ids, a dozen tickets


# ------------------------------------------------------------------ distractors

DISTRACTOR_TICKETS = (
    ("Laptop refresh for the design team", "Five MacBooks reached end of life."),
    ("Update the on-call rotation for Q{q}", "Swap two engineers between weeks."),
    ("Office move: floor {n} seating plan", "Finalise desks before the move."),
    ("Renew the SSL certificate for {svc}", "Expires at the end of the month."),
    ("Quarterly access review", "Review admin accounts in the identity provider."),
    ("Flaky integration test in {svc}", "Fails intermittently on CI."),
    ("Team offsite catering", "Dietary preferences for the offsite."),
    ("Migrate {svc} to the new cluster", "Plan the cut-over window."),
    ("Customer escalation: slow exports", "Exports take minutes for large accounts."),
    ("Update expense policy FAQ", "Clarify per-diem rules."),
)
DISTRACTOR_METRICS = (
    ("headcount.company", "Current employee head-count", "people", "hris", 120, 900),
    ("revenue.monthly", "Revenue this month", "USD", "finance_db", 200_000, 2_000_000),
    ("churn.rate", "Customer churn over 30 days", "%", "analytics", 0.5, 6.0),
    ("nps.score", "Net promoter score", "points", "surveys", 10, 70),
    ("tickets.open", "Open tickets", "tickets", "ticketdesk", 20, 200),
    ("uptime.api", "API uptime this month", "%", "observability", 99.0, 99.99),
)
SERVICES = (
    "auth-service",
    "payments-api",
    "search-indexer",
    "notifications",
    "billing-worker",
    "checkout-web",
    "reports-api",
    "identity-gateway",
)
STATUSES_FOR_DISTRACTORS = ("open", "in_progress", "resolved", "open", "in_progress")


def distractor_tickets(
    draw: Draw, company: Company, taken: set[str], n: int
) -> list[TicketCreated]:
    out = []
    for i, (title, desc) in enumerate(draw.sample("distractors", DISTRACTOR_TICKETS, n)):
        fill = {
            "q": draw.integer(f"d{i}:q", 1, 4),
            "n": draw.integer(f"d{i}:n", 2, 9),
            "svc": draw.choice(f"d{i}:svc", SERVICES),
        }
        out.append(
            TicketCreated(
                ticket_id=ticket_id(draw, f"d{i}:id", taken),
                title=title.format(**fill),
                description=desc,
                priority=draw.choice(f"d{i}:prio", ("low", "medium", "high")),
                assignee=company.fresh_name(draw, f"d{i}:assignee"),
                status=draw.choice(f"d{i}:status", STATUSES_FOR_DISTRACTORS),
            )
        )
    return out


def distractor_metrics(draw: Draw, n: int) -> list[MetricRecorded]:
    out = []
    for i, (name, desc, unit, source, lo, hi) in enumerate(
        draw.sample("distractor_metrics", DISTRACTOR_METRICS, n)
    ):
        digits = 0 if unit in ("people", "USD", "tickets", "points") else 2
        out.append(
            MetricRecorded(
                name=name,
                description=desc,
                unit=unit,
                source=source,
                value=draw.number(f"dm{i}", lo, hi, digits),
                age_minutes=draw.integer(f"dm{i}:age", 0, 6) * 60,
            )
        )
    return out


def metric(
    name: str,
    description: str,
    unit: str,
    source: str,
    value: float,
    *,
    threshold: tuple[str, float] | None = None,
    dataset: str | None = None,
    age_minutes: int = 30,
) -> MetricRecorded:
    """A metric as its system of record holds it, fresh (chaos may make the served copy old)."""
    return MetricRecorded(
        name=name,
        description=description,
        unit=unit,
        source=source,
        value=value,
        age_minutes=age_minutes,
        max_age_minutes=DAY,
        threshold_op=threshold[0] if threshold else None,  # type: ignore[arg-type]
        threshold=threshold[1] if threshold else None,
        dataset=dataset,
    )
