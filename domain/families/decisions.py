"""Decision tasks: the right outcome may be to decline or to flag, not to push an approval
through. Whether the request qualifies is only known from fresh data: the stale cache sits on
the other side of the line."""

from __future__ import annotations

from companyos.events.types import ApprovalGoal, Criterion, Goal, TicketGoal

from ..chaos import ChaosProfile
from ..company import Company, Draw, approval_type, metric, slug, ticket_id
from .base import Draft, away, missing, must, open_ticket, stale, task_ticket
from .originals import PURPOSES, VENDORS


class VendorRiskReview:
    """Onboard the vendor only if its current compliance score meets the policy; otherwise
    decline (set the ticket's resolution to declined) and request nothing."""

    name = "vendor_risk_review"
    hidden = "qualifies"
    """The draw that decides which way the task goes (keyed by the level too)."""
    title = "Vendor risk review (decide)"
    summary = "Onboard if the fresh compliance score meets policy; otherwise decline."
    original = False

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        vendor = draw.choice("vendor", VENDORS)
        tid = ticket_id(draw, "ticket", taken)
        owner = company.fresh_name(draw, "owner")
        threshold = float(draw.choice("threshold", (70, 75, 80, 85)))
        qualifies = draw.chance("qualifies", 0.5)
        gap = draw.integer("gap", 2, 12)
        score = threshold + gap if qualifies else threshold - gap
        served = threshold - gap - 3 if qualifies else threshold + gap + 3
        m = f"compliance.{slug(vendor)}"
        if qualifies:
            goal = Goal(
                tickets=(task_ticket(tid, "high", owner),),
                metrics=(m,),
                approvals=(
                    ApprovalGoal(approval_type="vendor_onboarding", data={"vendor": vendor}),
                ),
            )
        else:
            goal = Goal(
                tickets=(TicketGoal(ticket_id=tid, resolution="declined"),),
                metrics=(m,),
                decision="decline",
            )
        goal = goal.model_copy(
            update={
                "criterion": Criterion(metric=m, op=">=", threshold=threshold),
                "finish": ("vendor_onboarding",),
            }
        )
        text = (
            f"{vendor} wants to become a vendor (ticket {tid}). Policy: only vendors whose "
            f"current compliance score is at least {threshold:g} may be onboarded. If {vendor} "
            f"qualifies, ticket {tid} {must('high', owner, verify=True)}; then get a "
            "vendor_onboarding approval from the CFO, or whoever is covering for them, with the "
            "ticket id, the vendor's name and the compliance score, and see it through to "
            "approval. If it does not, decline: set the ticket's resolution to 'declined', "
            "change nothing else on it and ask for no vendor_onboarding approval."
        )
        return Draft(
            text=text,
            goal=goal,
            tickets=[
                open_ticket(
                    tid,
                    f"Vendor review: {vendor}",
                    f"{vendor} asks to be onboarded as a vendor.",
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
                    # No threshold in DataHub: the policy is the text's, and a threshold_pass
                    # flag would make the decision for the agent.
                )
            ],
            types=[approval_type("vendor_onboarding", {"compliance_score": m})],
            roles=("cfo",),
            original=[stale(m, served, 4), away(company, "cfo")],
            extra=[missing(tid, "priority")],
            stale_values={m: served},
            base_steps=18,
            hidden="qualifies",
        )


class ExpenseAudit:
    """Reimburse the expense if it is within the policy limit in DataHub; otherwise flag the
    ticket for a human to review."""

    name = "expense_audit"
    hidden = "within"
    """The draw that decides which way the task goes (keyed by the level too)."""
    title = "Expense audit (decide)"
    summary = "Approve the expense if within the policy limit; otherwise flag it."
    original = False

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        employee = company.fresh_name(draw, "employee")
        exp = f"EXP-{draw.integer('exp', 1000, 9999)}"
        purpose = draw.choice("purpose", PURPOSES)
        tid = ticket_id(draw, "ticket", taken)
        limit = float(draw.choice("limit", (1000, 2000, 5000)))
        within = draw.chance("within", 0.5)
        amount = round(
            limit * (draw.number("f", 0.4, 0.9, 3) if within else draw.number("f", 1.1, 1.8, 3)), 2
        )
        served = round(limit * (1.2 if within else 0.8), 2)
        m_amount, m_limit = f"expense.{slug(exp)}", "policy.expense_limit"
        if within:
            goal = Goal(
                tickets=(task_ticket(tid, "medium", employee),),
                metrics=(m_amount, m_limit),
                approvals=(
                    ApprovalGoal(approval_type="expense_report", data={"employee": employee}),
                ),
            )
        else:
            goal = Goal(
                tickets=(TicketGoal(ticket_id=tid, resolution="flagged"),),
                metrics=(m_amount, m_limit),
                decision="flag",
            )
        goal = goal.model_copy(
            update={
                "criterion": Criterion(metric=m_amount, op="<=", against=m_limit),
                "finish": ("expense_report",),
            }
        )
        text = (
            f"Audit expense report {exp} (ticket {tid}) from {employee}. If the claimed amount "
            "is within the expense policy limit in DataHub (at most the limit), ticket "
            f"{tid} {must('medium', employee, verify=True)}; then get an expense_report approval "
            "from the CFO, or whoever is covering for them, with the ticket id, the employee and "
            "the amount, and see it through to approval. If it is over the limit, flag it for "
            "review: set the ticket's resolution to 'flagged', change nothing else on it and "
            "ask for no expense_report approval."
        )
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
                    m_amount,
                    f"Amount claimed on expense report {exp}",
                    "USD",
                    "expense_system",
                    amount,
                ),
                metric(
                    m_limit,
                    "Largest expense report reimbursed without review",
                    "USD",
                    "policy_db",
                    limit,
                ),
            ],
            types=[approval_type("expense_report", {"amount": m_amount})],
            roles=("cfo",),
            original=[stale(m_amount, served, 3), away(company, "cfo")],
            extra=[missing(tid, "priority")],
            stale_values={m_amount: served},
            base_steps=18,
            hidden="within",
        )
