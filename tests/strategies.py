"""Hypothesis strategies for agent actions: plausible calls, the oracle's next move (to reach
deep states), and junk of every kind."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from companyos.agents.random_agent import METRIC_NAMES, NAMES, TEXTS, TICKET_IDS, TYPES
from companyos.domain import TOOLS
from companyos.domain.model import PRIORITIES, ROLE_TITLES, STATUSES, TICKET_FIELDS

ORACLE = "oracle"
"""A marker: at this point take the oracle's next call (keeps sequences reaching approvals)."""

_values: dict[str, st.SearchStrategy[Any]] = {
    "ticket_id": st.sampled_from((*TICKET_IDS, "TKT-0000", "tkt-1042 ")),
    "query": st.sampled_from(("vendor", "auth service", "licence", "zzz")),
    "field": st.sampled_from((*TICKET_FIELDS, "owner")),
    "metric_name": st.sampled_from((*METRIC_NAMES, "revenue")),
    "role": st.sampled_from((*ROLE_TITLES.values(), "cfo", "hr lead", "janitor")),
    "approval_type": st.sampled_from((*TYPES, "holiday")),
    "approver": st.sampled_from((*NAMES, "Nobody")),
    "approval_id": st.sampled_from(("APR-1001", "APR-1002", "APR-1003", "apr-1001", "APR-9")),
    "reason": st.sampled_from(("please", "urgent")),
}
_field_values = st.one_of(
    st.sampled_from(PRIORITIES + STATUSES + ("HIGH", "bogus")),
    st.booleans(),
    st.sampled_from((*NAMES, "APR-1001", "APR-1002")),
    st.none(),
)
_data = st.dictionaries(
    st.sampled_from(
        (
            "ticket_id",
            "vendor",
            "compliance_score",
            "amount",
            "employee",
            "section",
            "error_rate",
            "service",
            "license",
            "expiry_days",
        )
    ),
    st.one_of(
        st.sampled_from(TICKET_IDS + TEXTS),
        st.floats(0, 3000, allow_nan=False),
        st.integers(0, 100),
        st.sampled_from((85.0, 1842.5, 7.9, 12.0, 72.0)),
    ),
    max_size=5,
)


@st.composite
def valid_call(draw: st.DrawFn) -> dict[str, Any]:
    app, method = draw(st.sampled_from(sorted(TOOLS)))
    params: dict[str, Any] = {}
    for name in TOOLS[(app, method)].params.model_fields:
        if name == "value":
            params[name] = draw(_field_values)
        elif name == "data":
            params[name] = draw(_data)
        else:
            params[name] = draw(_values[name])
    return {"app": app, "method": method, "params": params}


junk_call = st.one_of(
    st.fixed_dictionaries(
        {
            "app": st.text(max_size=12),
            "method": st.text(max_size=12),
            "params": st.dictionaries(st.text(max_size=5), st.integers()),
        }
    ),
    st.fixed_dictionaries(
        {
            "app": st.just("ticketdesk"),
            "method": st.just("get_ticket"),
            "params": st.one_of(
                st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=3), st.none()
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "app": st.just("ticketdesk"),
            "method": st.just("get_ticket"),
            "params": st.fixed_dictionaries(
                {
                    "ticket_id": st.one_of(
                        st.integers(), st.floats(allow_nan=True), st.none(), st.just("x" * 5000)
                    )
                }
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "app": st.just("approvalflow"),
            "method": st.just("submit_approval"),
            "params": st.fixed_dictionaries(
                {
                    "approval_type": st.just("vendor_onboarding"),
                    "approver": st.just("Marcus Lee"),
                    "data": st.one_of(
                        st.just("a string"),
                        st.just({"compliance_score": float("nan")}),
                        st.just({"nested": {"a": 1}}),
                    ),
                }
            ),
        }
    ),
)

action = st.one_of(st.just(ORACLE), st.just(ORACLE), valid_call(), junk_call)
