"""The workflow families: tasks as data, each drawn anew from an instance's seed."""

from __future__ import annotations

from .base import ChaosItem, Draft, Family
from .decisions import ExpenseAudit, VendorRiskReview
from .originals import (
    BugEscalation,
    ExpenseReport,
    HandbookUpdate,
    LicenseRenewal,
    VendorOnboarding,
)
from .workflows import (
    ContractRenewal,
    DataAccessRequest,
    EmployeeOffboarding,
    IncidentEscalation,
    PurchaseOrder,
)

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        VendorOnboarding(),
        ExpenseReport(),
        BugEscalation(),
        LicenseRenewal(),
        HandbookUpdate(),
        PurchaseOrder(),
        DataAccessRequest(),
        IncidentEscalation(),
        ContractRenewal(),
        EmployeeOffboarding(),
        VendorRiskReview(),
        ExpenseAudit(),
    )
}
FAMILY_NAMES: tuple[str, ...] = tuple(FAMILIES)
ORIGINAL_FAMILIES: tuple[str, ...] = tuple(n for n, f in FAMILIES.items() if f.original)

__all__ = ["FAMILIES", "FAMILY_NAMES", "ORIGINAL_FAMILIES", "ChaosItem", "Draft", "Family"]
