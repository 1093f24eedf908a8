"""Five workflows beyond the original's, using the three apps in new combinations."""

from __future__ import annotations

from companyos.events.types import ApprovalGoal, Goal, TicketGoal

from ..chaos import ChaosProfile
from ..company import SERVICES, Company, Draw, approval_type, metric, slug, ticket_id
from .base import (
    ChaosItem,
    Draft,
    away,
    blocked,
    missing,
    must,
    open_ticket,
    stale,
    task_ticket,
)
from .originals import VENDORS


class PurchaseOrder:
    """The approval chain depends on a threshold read from DataHub: an order above it needs
    the CFO's sign-off first, and the engineering manager's approval, which every order needs
    and which releases it, then names the CFO's. Either way the manager's approval ends the
    work, so the episode's end says nothing of which way the threshold fell."""

    name = "purchase_order"
    hidden = "above"
    """The draw that decides which way the task goes (keyed by the level too)."""
    title = "Purchase order"
    summary = "Manager approval; above the policy threshold, the CFO's sign-off first."
    original = False

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        vendor = draw.choice("vendor", VENDORS)
        po = f"PO-{draw.integer('po', 10000, 99999)}"
        tid = ticket_id(draw, "ticket", taken)
        owner = company.fresh_name(draw, "owner")
        threshold = float(draw.choice("threshold", (5000, 10000, 25000)))
        above = draw.chance("above", 0.5)
        factor = draw.number("factor", 1.1, 3.0, 3) if above else draw.number("factor", 0.2, 0.9, 3)
        amount = round(threshold * factor, 2)
        m_amount, m_policy = f"po_amount.{slug(po)}", "policy.po_cfo_threshold"
        manager = ApprovalGoal(approval_type="purchase_order", data={"vendor": vendor})
        approvals = [manager]
        if above:
            approvals.insert(
                0, ApprovalGoal(approval_type="purchase_order_cfo", data={"vendor": vendor})
            )
        goal = Goal(
            tickets=(task_ticket(tid, "medium", owner),),
            metrics=(m_amount, m_policy),
            approvals=tuple(approvals),
            finish=("purchase_order",),
        )
        text = (
            f"Raise purchase order {po} to {vendor} (ticket {tid}). Ticket {tid} "
            f"{must('medium', owner, verify=True)}. Under the purchase policy, an order whose "
            "amount is above the CFO threshold in DataHub first needs a purchase_order_cfo "
            "approval from the CFO, or whoever is covering for them, with the ticket id, the "
            "vendor and the amount. Every order then needs a purchase_order approval from the "
            "Engineering Manager, or whoever is covering for them, with the ticket id, the "
            "vendor, the amount and, only for an order above the threshold, the CFO's approved "
            "request. Do not ask for approvals the policy does not require. See it through to "
            "the manager's approval."
        )
        # A stale cache of the policy still shows last year's threshold: on the other side of
        # this order's amount.
        old_policy = round(amount * (0.8 if not above else 1.25), -2)
        return Draft(
            text=text,
            goal=goal,
            tickets=[
                open_ticket(
                    tid,
                    f"Purchase order {po}: {vendor}",
                    f"Order {po} to {vendor}.",
                    "medium",
                    owner,
                )
            ],
            metrics=[
                metric(m_amount, f"Amount of purchase order {po}", "USD", "erp", amount),
                metric(
                    m_policy,
                    "Purchase orders above this amount also need the CFO's sign-off",
                    "USD",
                    "policy_db",
                    threshold,
                ),
            ],
            types=[
                approval_type("purchase_order", {"amount": m_amount}),
                approval_type("purchase_order_cfo", {"amount": m_amount}),
            ],
            roles=("eng_manager", "cfo"),
            original=[stale(m_policy, old_policy, 30), away(company, "eng_manager")],
            extra=[missing(tid, "priority"), away(company, "cfo")],
            stale_values={m_policy: old_policy, m_amount: round(amount * 0.9, 2)},
            base_steps=22,
            hidden="above",
        )


class DataAccessRequest:
    """The figure the report needs is in a restricted dataset: the agent is refused, must ask
    Security for access, wait for the grant, and only then read it."""

    name = "data_access_request"
    hidden = None
    title = "Access request"
    summary = "Read restricted data: request access from Security first, then CFO sign-off."
    original = False

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        dept = draw.choice("dept", ("Engineering", "Sales", "Support", "Marketing", "Finance"))
        quarter = draw.integer("quarter", 1, 4)
        report = f"Q{quarter} payroll cost report ({dept})"
        tid = ticket_id(draw, "ticket", taken)
        owner = company.fresh_name(draw, "owner")
        cost = draw.number("cost", 150_000, 900_000, 2)
        m = f"payroll.{slug(dept)}"
        restricted = level.inherent
        goal = Goal(
            tickets=(task_ticket(tid, "medium", owner),),
            metrics=(m,),
            access=("finance",) if restricted else (),
            approvals=(ApprovalGoal(approval_type="finance_report", data={"report": report}),),
        )
        text = (
            f"Prepare the {report} (ticket {tid}). Ticket {tid} "
            f"{must('medium', owner, verify=True)}. Take the payroll cost from DataHub and get "
            "a finance_report approval from the CFO, or whoever is covering for them, with the "
            "ticket id, the report's name and the payroll cost. See it through to approval."
        )
        return Draft(
            text=text,
            goal=goal,
            tickets=[
                open_ticket(
                    tid,
                    f"Prepare {report}",
                    f"Quarterly payroll cost for {dept}, for the CFO.",
                    "medium",
                    owner,
                )
            ],
            metrics=[metric(m, f"Payroll cost of {dept} this quarter", "USD", "payroll", cost)],
            types=[
                approval_type("finance_report", {"payroll_cost": m}),
                approval_type("data_access"),
            ],
            roles=("cfo", "security") if restricted else ("cfo",),
            original=[away(company, "cfo")],
            extra=[stale(m, round(cost * 0.93, 2), 9), away(company, "security")],
            inherent=[ChaosItem("permission_denied", m, {"dataset": "finance"})],
            stale_values={m: round(cost * 0.93, 2)},
            base_steps=22,
        )


class IncidentEscalation:
    """The CTO is away and so is the VP who covers for them: the request must go one further
    down the delegation chain."""

    name = "incident_escalation"
    hidden = None
    title = "Incident escalation"
    summary = "Declare an incident; the CTO's delegate is away too (a delegation chain)."
    original = False

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        service = draw.choice("service", SERVICES)
        commander = company.fresh_name(draw, "commander")
        tid = ticket_id(draw, "ticket", taken)
        rate = draw.number("rate", 5.0, 30.0, 1)
        m = f"error_rate.{slug(service)}"
        goal = Goal(
            tickets=(task_ticket(tid, "critical", commander, verify=False),),
            metrics=(m,),
            approvals=(
                ApprovalGoal(approval_type="incident_escalation", data={"service": service}),
            ),
        )
        text = (
            f"{service} is failing for most customers (ticket {tid}). Ticket {tid} "
            f"{must('critical', commander)} ({commander} is the incident commander). Check the "
            f"current {service} error rate in DataHub, and escalate to the CTO, or whoever is "
            "covering for them, with an incident_escalation request carrying the ticket id, the "
            "service and the error rate. See it through to approval."
        )
        staff = company.staff["cto"]
        return Draft(
            text=text,
            goal=goal,
            tickets=[
                open_ticket(
                    tid,
                    f"SEV-1: {service} outage",
                    f"Most requests to {service} are failing.",
                    "critical",
                    commander,
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
            types=[approval_type("incident_escalation", {"error_rate": m})],
            roles=("cto",),
            original=[missing(tid, "assignee")],
            extra=[stale(m, round(rate / 4, 1), 2), missing(tid, "priority")],
            inherent=[
                away(company, "cto"),
                ChaosItem(
                    "delegate_chain",
                    staff.delegate,
                    {
                        "note": f"Auto-reply: {company.name_of(staff.delegate)} is on "
                        "leave; please contact my delegate."
                    },
                ),
            ],
            stale_values={m: round(rate / 4, 1)},
            base_steps=18,
        )


class ContractRenewal:
    """The ticket states an annual value, DataHub's cached figure says another, and only the
    fresh read from the system of record counts."""

    name = "contract_renewal"
    hidden = None
    title = "Contract renewal"
    summary = "Renew a contract when the ticket and DataHub disagree: the fresh read decides."
    original = False

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        party = draw.choice("party", VENDORS)
        tid = ticket_id(draw, "ticket", taken)
        owner = company.fresh_name(draw, "owner")
        value = round(draw.number("value", 20_000, 200_000, 0), 2)
        served = round(value * draw.number("served", 0.80, 0.92, 3), 0)
        stated = round(value * draw.number("stated", 1.05, 1.2, 3), 0)
        m = f"contract_value.{slug(party)}"
        goal = Goal(
            tickets=(task_ticket(tid, "medium", owner),),
            metrics=(m,),
            approvals=(
                ApprovalGoal(approval_type="contract_renewal", data={"counterparty": party}),
            ),
        )
        text = (
            f"Renew our contract with {party} (ticket {tid}). Ticket {tid} "
            f"{must('medium', owner, verify=True)}. Get a contract_renewal approval from Legal, "
            "or whoever is covering for them, with the ticket id, the counterparty and the "
            "contract's annual value as DataHub's system of record has it now. See it through "
            "to approval."
        )
        description = f"Renewal of the {party} agreement at ${{value:,.0f}} a year."
        return Draft(
            text=text,
            goal=goal,
            tickets=[
                open_ticket(
                    tid,
                    f"Renew contract: {party}",
                    description.format(value=value),
                    "medium",
                    owner,
                )
            ],
            metrics=[
                metric(m, f"Annual value of the {party} contract", "USD", "contracts_db", value)
            ],
            types=[approval_type("contract_renewal", {"annual_value": m})],
            roles=("legal",),
            original=[away(company, "legal")],
            extra=[missing(tid, "priority")],
            inherent=[
                ChaosItem(
                    "conflicting_values",
                    tid,
                    {
                        "metric": m,
                        "stated": stated,
                        "description": description.format(value=stated),
                    },
                ),
                stale(m, served, 5),
            ],
            stale_values={m: served},
            base_steps=18,
        )


class EmployeeOffboarding:
    """Several tickets: access, equipment and pay must each be resolved and verified before HR
    signs the offboarding off."""

    name = "employee_offboarding"
    hidden = None
    title = "Employee offboarding"
    summary = "Resolve and verify three offboarding tickets, then HR Lead approval."
    original = False

    def draft(self, draw: Draw, company: Company, taken: set[str], level: ChaosProfile) -> Draft:
        employee = company.fresh_name(draw, "employee")
        main = ticket_id(draw, "main", taken)
        owner = company.fresh_name(draw, "owner")
        parts = [
            (f"Revoke {employee}'s system access", "Remove accounts and keys.", "it"),
            (f"Collect {employee}'s laptop", "Arrange the return of equipment.", "facilities"),
            (f"Final payroll for {employee}", "Settle the last salary and leave.", "payroll"),
        ]
        subs = []
        for i, (title, desc, team) in enumerate(parts):
            sub = ticket_id(draw, f"sub{i}", taken)
            who = company.fresh_name(draw, f"sub{i}:owner")
            subs.append((sub, title, desc, who, team))
        goal = Goal(
            tickets=(
                task_ticket(main, "medium", owner),
                *(
                    TicketGoal(
                        ticket_id=s,
                        fields={"assignee": who},
                        unblock=True,
                        verify=True,
                        status="resolved",
                    )
                    for s, _, _, who, _ in subs
                ),
            ),
            approvals=(ApprovalGoal(approval_type="offboarding", data={"employee": employee}),),
        )
        subs_text = " ".join(
            f"Ticket {s} {must(None, who, resolved=True, verify=True)}." for s, _, _, who, _ in subs
        )
        text = (
            f"Offboard {employee} (ticket {main}). Ticket {main} "
            f"{must('medium', owner, verify=True)}. The offboarding tickets: {subs_text} Then "
            "get an offboarding approval from the HR Lead, or whoever is covering for them, with "
            "the main ticket's id and the employee. See it through to approval."
        )
        blocked_sub = subs[draw.integer("blocked", 0, 2)][0]
        unassigned = subs[draw.integer("unassigned", 0, 2)][0]
        return Draft(
            text=text,
            goal=goal,
            tickets=[
                open_ticket(
                    main,
                    f"Offboard {employee}",
                    f"{employee} leaves at the end of the month.",
                    "medium",
                    owner,
                ),
                *(
                    open_ticket(s, title, f"{desc} ({team})", "medium", who)
                    for s, title, desc, who, team in subs
                ),
            ],
            metrics=[],
            types=[approval_type("offboarding")],
            roles=("hr_lead",),
            apps=("ticketdesk", "approvalflow"),
            original=[
                blocked(blocked_sub, "Waiting on the exit interview (done since)."),
                missing(unassigned, "assignee"),
            ],
            extra=[away(company, "hr_lead"), missing(main, "priority")],
            base_steps=26,
        )
