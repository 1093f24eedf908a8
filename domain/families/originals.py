"""The original CompanyOS's five workflows, made procedural: names, ids and values come from
the instance's seed, so nothing can be memorised; at difficulty 2 their chaos is the
original's (a missing priority, a stale compliance score, the CFO away, a blocked ticket
missing its assignee)."""

from __future__ import annotations

from companyos.events.types import ApprovalGoal, Goal, TicketGoal

from ..chaos import ChaosProfile
from ..company import SERVICES, Company, Draw, approval_type, metric, slug, ticket_id
from .base import Draft, away, blocked, missing, must, open_ticket, stale, task_ticket

VENDORS = (
    "Northwind Analytics",
    "Contoso Cloud",
    "Fabrikam Data",
    "Tailspin Logistics",
    "Litware Security",
    "Proseware",
    "Adatum Systems",
    "Wingtip Payments",
    "Lucerne Labs",
    "Humongous Media",
    "Blue Yonder Air",
    "Coho Vineyard",
    "Trey Research",
    "Alpine Ski House",
)
PURPOSES = (
    "Q3 sales offsite",
    "customer visit in Berlin",
    "conference travel to Lisbon",
    "team training course",
    "client dinner",
    "hardware for the new hire",
    "trade fair booth",
)
PRODUCTS = (
    "DesignSuite Enterprise",
    "CodeHub Pro",
    "DataViz Cloud",
    "ChatOps Team",
    "SecureVault",
    "BuildFarm CI",
    "DocuSign-ish Plus",
    "Mapster Maps API",
)
SECTIONS = (
    "Remote work",
    "Parental leave",
    "Travel policy",
    "Code of conduct",
    "Equipment allowance",
    "On-call compensation",
    "Learning budget",
    "Security awareness",
)


class VendorOnboarding:
    name = "vendor_onboarding"
    hidden = None
    title = "Vendor onboarding"
    summary = "Fix and verify the ticket, make sure the compliance score is current, CFO approval."
    original = True

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        vendor = draw.choice("vendor", VENDORS)
        tid = ticket_id(draw, "ticket", taken)
        owner = company.fresh_name(draw, "owner")
        score = draw.number("score", 81, 97, 0)
        m = f"compliance.{slug(vendor)}"
        goal = Goal(
            tickets=(task_ticket(tid, "high", owner),),
            metrics=(m,),
            approvals=(ApprovalGoal(approval_type="vendor_onboarding", data={"vendor": vendor}),),
        )
        text = (
            f"Onboard the vendor {vendor} (ticket {tid}). Ticket {tid} "
            f"{must('high', owner, verify=True)}. Confirm the vendor's compliance score in "
            "DataHub is current, then get a vendor_onboarding approval from the CFO, or whoever "
            "is covering for them, with the ticket id, the vendor's name and the compliance "
            "score, and see it through to approval."
        )
        return Draft(
            text=text,
            goal=goal,
            tickets=[
                open_ticket(
                    tid,
                    f"Onboard vendor {vendor}",
                    f"New vendor {vendor}: needs a security compliance check and CFO sign-off.",
                    "high",
                    owner,
                )
            ],
            metrics=[
                metric(
                    m,
                    f"{vendor}'s security compliance score",
                    "%",
                    "compliance_db",
                    score,
                    threshold=(">=", 80.0),
                )
            ],
            types=[approval_type("vendor_onboarding", {"compliance_score": m})],
            roles=("cfo",),
            original=[
                missing(tid, "priority"),
                stale(m, score - draw.integer("drop", 9, 16), 4),
                away(company, "cfo"),
            ],
            extra=[missing(tid, "assignee")],
            stale_values={m: score - draw.integer("drop", 9, 16)},
            base_steps=20,
        )


class ExpenseReport:
    name = "expense_report"
    hidden = None
    title = "Expense report"
    summary = "Verify the ticket, confirm the claimed amount in DataHub, CFO approval."
    original = True

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        employee = company.fresh_name(draw, "employee")
        exp = f"EXP-{draw.integer('exp', 1000, 9999)}"
        purpose = draw.choice("purpose", PURPOSES)
        tid = ticket_id(draw, "ticket", taken)
        amount = draw.number("amount", 150, 4800, 2)
        m = f"expense.{slug(exp)}"
        goal = Goal(
            tickets=(task_ticket(tid, "medium", employee),),
            metrics=(m,),
            approvals=(ApprovalGoal(approval_type="expense_report", data={"employee": employee}),),
        )
        text = (
            f"Process expense report {exp} (ticket {tid}) for {employee}. Ticket {tid} "
            f"{must('medium', employee, verify=True)}. Confirm the claimed amount in DataHub, "
            "then get an expense_report approval from the CFO, or whoever is covering for them, "
            "with the ticket id, the employee and the amount, and see it through to approval."
        )
        served = round(amount * draw.number("served", 0.7, 0.9, 3), 2)
        return Draft(
            text=text,
            goal=goal,
            tickets=[
                open_ticket(
                    tid,
                    f"Expense report {exp}: {purpose}",
                    f"{employee}'s expenses for the {purpose}.",
                    "medium",
                    employee,
                )
            ],
            metrics=[
                metric(
                    m, f"Amount claimed on expense report {exp}", "USD", "expense_system", amount
                )
            ],
            types=[approval_type("expense_report", {"amount": m})],
            roles=("cfo",),
            original=[away(company, "cfo")],
            extra=[stale(m, served, 3), missing(tid, "priority")],
            stale_values={m: served},
            base_steps=18,
        )


class BugEscalation:
    name = "bug_escalation"
    hidden = None
    title = "Bug escalation"
    summary = "Unblock and assign the bug, check the current error rate, CTO approval."
    original = True

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        service = draw.choice("service", SERVICES)
        oncall = company.fresh_name(draw, "oncall")
        tid = ticket_id(draw, "ticket", taken)
        rate = draw.number("rate", 3.0, 15.0, 1)
        m = f"error_rate.{slug(service)}"
        goal = Goal(
            tickets=(
                TicketGoal(
                    ticket_id=tid, fields={"priority": "critical", "assignee": oncall}, unblock=True
                ),
            ),
            metrics=(m,),
            approvals=(ApprovalGoal(approval_type="bug_escalation", data={"service": service}),),
        )
        text = (
            f"Escalate the {service} login outage (ticket {tid}) to the CTO. Ticket {tid} "
            f"{must('critical', oncall, unblocked=True)} ({oncall} is the on-call engineer). "
            f"Check the current {service} error rate in DataHub, then get a bug_escalation "
            "approval from the CTO, or whoever is covering for them, with the ticket id, the "
            "service and the error rate, and see it through to approval."
        )
        served = draw.number("served", 0.5, 2.5, 1)
        return Draft(
            text=text,
            goal=goal,
            tickets=[
                open_ticket(
                    tid,
                    f"{service} returning 5xx on login",
                    f"Failures spiking since the last deploy of {service}.",
                    "critical",
                    oncall,
                )
            ],
            metrics=[
                metric(
                    m,
                    f"{service} 5xx error rate over the last hour",
                    "%",
                    "observability",
                    rate,
                    threshold=("<=", 1.0),
                )
            ],
            types=[approval_type("bug_escalation", {"error_rate": m})],
            roles=("cto",),
            original=[
                blocked(tid, "Waiting on infra access for the on-call engineer (since granted)."),
                missing(tid, "assignee"),
            ],
            extra=[stale(m, served, 2), away(company, "cto"), missing(tid, "priority")],
            stale_values={m: served},
            base_steps=18,
        )


class LicenseRenewal:
    name = "license_renewal"
    hidden = None
    title = "Licence renewal"
    summary = "Verify the ticket, check the days to expiry, Procurement approval."
    original = True

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        product = draw.choice("product", PRODUCTS)
        owner = company.fresh_name(draw, "owner")
        tid = ticket_id(draw, "ticket", taken)
        days = float(draw.integer("days", 5, 40))
        m = f"license_expiry.{slug(product)}"
        goal = Goal(
            tickets=(task_ticket(tid, "medium", owner),),
            metrics=(m,),
            approvals=(ApprovalGoal(approval_type="license_renewal", data={"license": product}),),
        )
        text = (
            f"Renew the {product} licence (ticket {tid}). Ticket {tid} "
            f"{must('medium', owner, verify=True)}. Check how many days remain before the "
            "licence expires in DataHub, then get a license_renewal approval from Procurement, "
            "or whoever is covering for them, with the ticket id, the licence and the days to "
            "expiry, and see it through to approval."
        )
        return Draft(
            text=text,
            goal=goal,
            tickets=[
                open_ticket(
                    tid,
                    f"Renew {product} licence",
                    f"Annual renewal for the {product} seats.",
                    "medium",
                    owner,
                )
            ],
            metrics=[
                metric(
                    m, f"Days until the {product} licence expires", "days", "license_manager", days
                )
            ],
            types=[approval_type("license_renewal", {"expiry_days": m})],
            roles=("procurement",),
            extra=[stale(m, days + 7, 7), away(company, "procurement"), missing(tid, "priority")],
            stale_values={m: days + 7},
            base_steps=16,
        )


class HandbookUpdate:
    name = "handbook_update"
    hidden = None
    title = "Handbook update"
    summary = "Fix the priority, verify the ticket, HR Lead approval."
    original = True

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        section = draw.choice("section", SECTIONS)
        owner = company.fresh_name(draw, "owner")
        tid = ticket_id(draw, "ticket", taken)
        goal = Goal(
            tickets=(task_ticket(tid, "medium", owner),),
            approvals=(ApprovalGoal(approval_type="handbook_update", data={"section": section}),),
        )
        text = (
            f"Publish the revised {section} section of the employee handbook (ticket {tid}). "
            f"Ticket {tid} {must('medium', owner, verify=True)}; then get a handbook_update "
            "approval from the HR Lead, or whoever is covering for them, with the ticket id and "
            f"the section ({section}), and see it through to approval."
        )
        return Draft(
            text=text,
            goal=goal,
            tickets=[
                open_ticket(
                    tid,
                    f"Handbook: update {section} policy",
                    f"Publish the revised {section} section of the handbook.",
                    "medium",
                    owner,
                )
            ],
            metrics=[],
            types=[approval_type("handbook_update")],
            roles=("hr_lead",),
            apps=("ticketdesk", "approvalflow"),
            original=[missing(tid, "priority")],
            extra=[away(company, "hr_lead"), missing(tid, "assignee")],
            base_steps=16,
        )
