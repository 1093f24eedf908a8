"""What a person takes from a task's text before touching any app: the tickets and the values
they must end with, the approvals to get and in what order, the names the requests carry, which
figures matter and the rule a decision follows.

Only the text is read (and the family, which the observation names: a person knows what kind of
task they were handed). Each family's text is parsed by its own small reader; the sentences
about tickets share one grammar (`families.base.must`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

TICKET = r"TKT-\d+"
NAME = r"[A-Z][a-z]+ [A-Z][a-z]+"
_REQUIREMENT = re.compile(rf"[Tt]icket ({TICKET}) must ([^.;]+)")
_PRIORITY = re.compile(r"priority '(\w+)'")
_ASSIGNEE = re.compile(rf"assigned to ({NAME})")
_APPROVAL = re.compile(r"\ban? ([a-z]+(?:_[a-z]+)*) (?:approval|request)\b")


@dataclass(frozen=True, slots=True)
class TicketNeed:
    ticket_id: str
    priority: str | None = None
    assignee: str | None = None
    verify: bool = False
    resolve: bool = False
    conditional: bool = False
    """Asked only if the decision goes the approving way."""


@dataclass(frozen=True, slots=True)
class Rule:
    """A decision the text states: go ahead when ``subject op bound`` holds, where the bound is a
    number in the text or another figure in DataHub; otherwise set ``otherwise`` as the
    ticket's resolution."""

    op: str
    threshold: float | None = None
    bound: tuple[str, ...] = ()
    """Hints naming the figure to compare against, when the bound is a figure."""
    otherwise: str = "declined"


@dataclass(frozen=True, slots=True)
class Brief:
    family: str
    main: str
    """The task's ticket: requests name it."""
    tickets: tuple[TicketNeed, ...]
    chain: tuple[str, ...]
    """Approval types in the order the text asks for them."""
    entities: dict[str, str] = field(default_factory=dict)
    """Names the requests carry, by data key (vendor, employee, service, ...)."""
    subject: tuple[str, ...] = ()
    """Hints naming the figure the work stands on (its value goes into requests)."""
    rule: Rule | None = None
    above: tuple[str, ...] = ()
    """Hints naming a threshold figure: the first approval of the chain is needed only when the
    subject is above it (a purchase order's CFO sign-off)."""
    find: tuple[str, ...] = ()
    """When the text names no ticket: words of the title of the task's ticket, to find it."""
    fill: dict[str, str] = field(default_factory=dict)
    """Fields to fill in on the task's ticket if they are empty (the original's tasks ask for
    a missing priority or assignee to be set, to any value)."""
    verify_found: bool = True
    """Whether the ticket found by its title (``find``) must be verified, as the text says."""


def _tickets(text: str, conditional: bool = False) -> tuple[TicketNeed, ...]:
    out = []
    for tid, clause in _REQUIREMENT.findall(text):
        priority = _PRIORITY.search(clause)
        assignee = _ASSIGNEE.search(clause)
        out.append(
            TicketNeed(
                tid,
                priority.group(1) if priority else None,
                assignee.group(1) if assignee else None,
                verify="be verified" in clause,
                resolve="be resolved" in clause,
                conditional=conditional,
            )
        )
    return tuple(out)


def _chain(text: str) -> tuple[str, ...]:
    seen: list[str] = []
    for name in _APPROVAL.findall(text):
        if name not in seen:
            seen.append(name)
    return tuple(seen)


def _first(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    if match is None:
        raise ValueError(f"the task text does not say {pattern!r}")
    return match.group(1)


def _main(text: str) -> str:
    return _first(rf"\(ticket ({TICKET})\)", text)


def _vendor_onboarding(text: str) -> Brief:
    vendor = _first(r"Onboard the vendor (.+?) \(ticket", text)
    return Brief(
        "vendor_onboarding",
        _main(text),
        _tickets(text),
        _chain(text),
        {"vendor": vendor},
        subject=("compliance", vendor),
    )


def _expense_report(text: str) -> Brief:
    exp = _first(r"expense report (EXP-\d+)", text)
    return Brief(
        "expense_report",
        _main(text),
        _tickets(text),
        _chain(text),
        {"employee": _first(rf"\) for ({NAME})\.", text)},
        subject=(exp,),
    )


def _bug_escalation(text: str) -> Brief:
    service = _first(r"Escalate the (\S+) login outage", text)
    return Brief(
        "bug_escalation",
        _main(text),
        _tickets(text),
        _chain(text),
        {"service": service},
        subject=("error rate", service),
    )


def _license_renewal(text: str) -> Brief:
    product = _first(r"Renew the (.+?) licence \(ticket", text)
    return Brief(
        "license_renewal",
        _main(text),
        _tickets(text),
        _chain(text),
        {"license": product},
        subject=(product, "expire"),
    )


def _handbook_update(text: str) -> Brief:
    return Brief(
        "handbook_update",
        _main(text),
        _tickets(text),
        _chain(text),
        {"section": _first(r"Publish the revised (.+?) section", text)},
    )


def _purchase_order(text: str) -> Brief:
    po = _first(r"Raise purchase order (PO-\d+)", text)
    vendor = _first(r"Raise purchase order PO-\d+ to (.+?) \(ticket", text)
    return Brief(
        "purchase_order",
        _main(text),
        _tickets(text),
        _chain(text),
        {"vendor": vendor},
        subject=(po,),
        above=("cfo threshold",),
    )


def _data_access_request(text: str) -> Brief:
    report = _first(r"Prepare the (.+) \(ticket", text)
    dept = _first(r"\((\w+)\)$", report)
    return Brief(
        "data_access_request",
        _main(text),
        _tickets(text),
        _chain(text),
        {"report": report},
        subject=("payroll", dept),
    )


def _incident_escalation(text: str) -> Brief:
    service = _first(r"^(\S+) is failing", text)
    return Brief(
        "incident_escalation",
        _main(text),
        _tickets(text),
        _chain(text),
        {"service": service},
        subject=("error rate", service),
    )


def _contract_renewal(text: str) -> Brief:
    party = _first(r"Renew our contract with (.+?) \(ticket", text)
    return Brief(
        "contract_renewal",
        _main(text),
        _tickets(text),
        _chain(text),
        {"counterparty": party},
        subject=(party, "contract"),
    )


def _employee_offboarding(text: str) -> Brief:
    return Brief(
        "employee_offboarding",
        _main(text),
        _tickets(text),
        _chain(text),
        {"employee": _first(r"Offboard (.+?) \(ticket", text)},
    )


def _vendor_risk_review(text: str) -> Brief:
    vendor = _first(r"^(.+?) wants to become a vendor", text)
    return Brief(
        "vendor_risk_review",
        _main(text),
        _tickets(text, conditional=True),
        _chain(text),
        {"vendor": vendor},
        subject=("compliance", vendor),
        rule=Rule(">=", threshold=float(_first(r"at least ([\d.]+)", text)), otherwise="declined"),
    )


def _expense_audit(text: str) -> Brief:
    exp = _first(r"expense report (EXP-\d+)", text)
    return Brief(
        "expense_audit",
        _main(text),
        _tickets(text, conditional=True),
        _chain(text),
        {"employee": _first(rf"\) from ({NAME})\.", text)},
        subject=(exp,),
        rule=Rule("<=", bound=("expense limit",), otherwise="flagged"),
    )


# The original CompanyOS's five tasks in its fixed world (`domain.original`): terse texts that
# name the task but not every id; a person finds the ticket by its title, the request's type by
# the task, and does to the ticket what the text says (set a priority, assign it, verify it).

_ASSIGN_TO = re.compile(r"assign it to (?:the )?([^(,.]+?)\s*[(,.]")


def _original(
    family: str,
    find: tuple[str, ...],
    subject: tuple[str, ...],
    entities: dict[str, str],
    written: dict[str, str] | None = None,
) -> Callable[[str], Brief]:
    """``entities``: names the text gives (checked); ``written``: what the person writes in
    the request themselves (a change summary)."""

    def read(text: str) -> Brief:
        named = re.search(r"ticket (T-\d+)", text)
        main = named.group(1) if named else ""
        verify = re.search(r"\b[Vv]erify\b", text) is not None
        tickets = (TicketNeed(main, verify=verify),) if main else ()
        fill: dict[str, str] = {}
        if re.search(r"\b[Ss]et (?:a )?priority\b", text):
            fill["priority"] = "medium"  # the text asks for one, not for a particular one
        assign = _ASSIGN_TO.search(text)
        if assign:
            fill["assignee"] = assign.group(1)
        for value in entities.values():
            if value not in text:
                raise ValueError(f"the task text does not name {value!r}")
        return Brief(
            family,
            main,
            tickets,
            (family.removeprefix("task_"),),
            {**entities, **(written or {})},
            subject=subject,
            find=() if main else find,
            fill=fill,
            verify_found=verify,
        )

    return read


READERS: dict[str, Callable[[str], Brief]] = {
    "task_vendor_onboarding": _original(
        "task_vendor_onboarding", ("ACME",), ("compliance",), {"vendor_name": "ACME Corp"}
    ),
    "task_expense_report": _original(
        "task_expense_report",
        ("expense", "447"),
        ("expense", "447"),
        {"employee_id": "john.doe", "report_id": "447"},
    ),
    "task_bug_escalation": _original("task_bug_escalation", ("bug",), ("error rate",), {}),
    "task_license_renewal": _original(
        "task_license_renewal",
        ("license",),
        ("license", "expir"),
        {"license_name": "Q3 software license"},
    ),
    "task_handbook_update": _original(
        "task_handbook_update",
        ("handbook",),
        (),
        {"section": "4"},
        {"change_summary": "Revised section 4 of the employee handbook."},
    ),
    "vendor_onboarding": _vendor_onboarding,
    "expense_report": _expense_report,
    "bug_escalation": _bug_escalation,
    "license_renewal": _license_renewal,
    "handbook_update": _handbook_update,
    "purchase_order": _purchase_order,
    "data_access_request": _data_access_request,
    "incident_escalation": _incident_escalation,
    "contract_renewal": _contract_renewal,
    "employee_offboarding": _employee_offboarding,
    "vendor_risk_review": _vendor_risk_review,
    "expense_audit": _expense_audit,
}


def read_brief(text: str, family: str) -> Brief:
    """The brief of a task of ``family`` from its text (ValueError if the text does not say
    what the family's tasks say)."""
    reader = READERS.get(family)
    if reader is None:
        raise ValueError(f"no reader for tasks of the family {family!r}")
    return reader(text)


@lru_cache(maxsize=4096)
def slug(text: str) -> str:
    """Letters and digits only, lower case: how names are compared across apps. Cached: the
    same few names are compared at every step (failure analysis plays many forks)."""
    return "".join(c for c in text.lower() if c.isalnum())


@lru_cache(maxsize=4096)
def matches(hints: tuple[str, ...], *texts: str) -> bool:
    hay = slug(" ".join(texts))
    return all(slug(h) in hay for h in hints)
