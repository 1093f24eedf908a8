"""The label rules, in tie-break order (the workflow: the call itself, tickets, access, data,
routing, outcomes), and the taxonomy: every label with its definition. Adding a label is adding
a module to `rules/` and its name here."""

from __future__ import annotations

from types import ModuleType

from . import verdicts
from .rules import (
    closed_blocked_ticket,
    collateral_damage,
    gave_up_after_rejection,
    hallucinated_tool,
    ignored_rate_limit,
    invalid_params,
    missing_access,
    no_retry_after_fault,
    no_tool_call,
    premature_request,
    pushed_infeasible_through,
    routed_to_out_of_office,
    skipped_data_read,
    skipped_verification,
    submitted_wrong_data,
    undid_progress,
    used_stale_data,
    wrong_approver,
    wrong_decision,
    wrong_object,
)

RULES: tuple[ModuleType, ...] = (
    no_tool_call,
    hallucinated_tool,
    invalid_params,
    ignored_rate_limit,
    no_retry_after_fault,
    closed_blocked_ticket,
    wrong_object,
    collateral_damage,
    undid_progress,
    premature_request,
    skipped_verification,
    missing_access,
    used_stale_data,
    skipped_data_read,
    submitted_wrong_data,
    routed_to_out_of_office,
    wrong_approver,
    wrong_decision,
    pushed_infeasible_through,
    gave_up_after_rejection,
)
"""Rules that find mistakes at steps, each one label."""

LABELS: dict[str, str] = {
    **{rule.LABEL: rule.DEFINITION for rule in RULES},
    **verdicts.DEFINITIONS,
}
"""Every label with its definition (docs/failure_taxonomy.md), in tie-break order: the step
rules, then the verdicts about a whole episode or its instance."""

RANK = {label: i for i, label in enumerate(LABELS)}
