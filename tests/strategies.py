"""Hypothesis strategies for agent actions: plausible calls, the oracle's next move (to reach
deep states), and junk of every kind.

Worlds are drawn from a seed, so plausible calls name things by reference (`Ref`): the i-th
ticket, metric, person or approval of whatever world the action meets, resolved by `resolve`
when the action is taken. Unknown names are mixed in on purpose."""

from __future__ import annotations

from typing import Any, NamedTuple

from hypothesis import strategies as st

from companyos.agents.random_agent import DATA_KEYS, TYPES
from companyos.domain import TOOLS, plan
from companyos.domain.model import (
    PRIORITIES,
    RESOLUTIONS,
    ROLE_TITLES,
    STATUSES,
    TICKET_FIELDS,
    World,
)

ORACLE = "oracle"
"""A marker: at this point take the oracle's next call (keeps sequences reaching approvals)."""


class Ref(NamedTuple):
    """The ``i``-th thing of a kind in the world the action meets (modulo how many there are)."""

    kind: str
    i: int


def _ref(kind: str) -> st.SearchStrategy[Ref]:
    return st.builds(Ref, st.just(kind), st.integers(0, 50))


def _things(world: World, kind: str) -> list[Any]:
    if kind == "ticket":
        return sorted(world.tickets)
    if kind == "metric":
        return sorted(world.metrics)
    if kind == "person":
        return sorted(p.name for p in world.people.values())
    if kind == "approval":
        return sorted(world.approvals) or ["APR-1001"]
    if kind == "value":  # a value some metric has: submissions quote them
        return [m.value for _, m in sorted(world.metrics.items())]
    raise ValueError(kind)


def call_for(value: Any, world: World) -> Any:
    """The call a drawn action stands for in ``world``: for `ORACLE` the oracle's next call (a
    harmless read when it has none), else the action with its references resolved."""
    if value == ORACLE:
        call = plan(world)
        return call.as_action() if call else {"app": "ticketdesk", "method": "list_tickets"}
    return resolve(value, world)


def resolve(value: Any, world: World) -> Any:
    if isinstance(value, Ref):
        things = _things(world, value.kind)
        return things[value.i % len(things)] if things else "nothing"
    if isinstance(value, dict):
        return {k: resolve(v, world) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, world) for v in value]
    return value


_values: dict[str, st.SearchStrategy[Any]] = {
    "ticket_id": st.one_of(_ref("ticket"), st.sampled_from(("TKT-0000", "tkt-1042 "))),
    "query": st.one_of(
        st.sampled_from(("vendor", "auth service", "licence", "expense", "zzz")), _ref("ticket")
    ),
    "field": st.sampled_from((*TICKET_FIELDS, "owner")),
    "metric_name": st.one_of(_ref("metric"), st.just("revenue")),
    "role": st.sampled_from((*ROLE_TITLES, *ROLE_TITLES.values(), "CFO ", "janitor")),
    "approval_type": st.sampled_from((*TYPES, "holiday")),
    "approver": st.one_of(_ref("person"), st.just("Nobody")),
    "approval_id": st.one_of(_ref("approval"), st.sampled_from(("apr-1001", "APR-9"))),
    "reason": st.sampled_from(("please", "urgent")),
}
_field_values = st.one_of(
    st.sampled_from(PRIORITIES + STATUSES + RESOLUTIONS + ("HIGH", "bogus")),
    st.booleans(),
    _ref("person"),
    _ref("approval"),
    st.none(),
)
_data = st.dictionaries(
    st.sampled_from(DATA_KEYS),
    st.one_of(
        _ref("ticket"),
        _ref("person"),
        _ref("value"),
        st.floats(0, 3000, allow_nan=False),
        st.integers(0, 100),
        st.text(max_size=8),
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
                    "approval_type": st.sampled_from(TYPES),
                    "approver": _ref("person"),
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

json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_value = st.recursive(
    json_scalar,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
"""Anything JSON can carry (what a client can put on the wire; no NaN, which JSON has not)."""

HOSTILE_TEXT = ("\ud800", "a\udfffb", "\udbff\x00", "\x00", "TKT-1042\x00")
"""Strings no store or JSON writer can take: lone surrogates, NUL (`domain.inputs`)."""
HOSTILE_NUMBERS = (float("nan"), float("inf"), float("-inf"), 10**30, -(10**19))
"""NaN and the infinities (1e400 reads as infinity), integers beyond 64 bits."""
hostile_scalar = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.sampled_from(HOSTILE_NUMBERS),
    st.tuples(st.text(max_size=8), st.sampled_from(HOSTILE_TEXT), st.text(max_size=8)).map("".join),
)
"""One hostile value: what `domain.inputs.hostile` must find wherever it is."""
wild_value = st.recursive(
    json_scalar | hostile_scalar,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.sampled_from(HOSTILE_TEXT), inner, max_size=4)
    ),
    max_leaves=12,
)
"""Anything a client can put on the wire, hostile values included (Python's JSON writer sends
NaN and the infinities as literals, lone surrogates and NUL as escapes)."""
