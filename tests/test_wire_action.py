"""`CompanyOSWireAction.from_wire`, the reader of every `/ws` and `POST /step` action, gives
what the union's own validation gives, value or error, for any object a client could send."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from companyos.api import compat
from companyos.api.models import CompanyOSAction, CompanyOSBatchAction, CompanyOSWireAction

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
keys = st.sampled_from(
    ["app", "method", "params", "episode_id", "expected_step", "reply", "batch", "type",
     "tool_name", "arguments", "metadata", "other"]
)  # fmt: skip
fields = st.sampled_from(["ticketdesk", "get_ticket", "list_tools", "call_tool", "x", 3, None])
objects = st.dictionaries(keys, fields | json_values, max_size=6)


def outcome(read: Any, data: Any) -> Any:
    try:
        return ("ok", read(data))
    except ValidationError as exc:
        return ("refused", exc.errors(include_url=False))


@settings(max_examples=400, deadline=None)
@given(objects | st.builds(lambda d: {"app": "ticketdesk", "method": "get_ticket", **d}, objects))
def test_from_wire_reads_as_the_union_reads(data):
    fast = outcome(CompanyOSWireAction.from_wire, data)
    assert fast == outcome(CompanyOSWireAction.model_validate, data)
    if fast[0] == "ok":  # built as validation builds it, to the attributes
        union = CompanyOSWireAction.model_validate(data)
        assert type(fast[1].root) is type(union.root)
        assert fast[1].__dict__ == union.__dict__
        assert fast[1].root.__dict__ == union.root.__dict__
        for slot in ("__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"):
            assert getattr(fast[1], slot) == getattr(union, slot)
            assert getattr(fast[1].root, slot) == getattr(union.root, slot)


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (
            {"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": "T-1"}},
            CompanyOSAction,
        ),
        ({"app": "a", "method": "m", "expected_step": "3"}, CompanyOSAction),
        ({"batch": []}, CompanyOSBatchAction),
    ],
)
def test_the_server_reads_each_kind_through_it(data, kind):
    action = compat.deserialize_action(data, CompanyOSWireAction)
    assert type(action.root) is kind
    assert action == CompanyOSWireAction.model_validate(data)


def test_a_call_with_a_wrong_field_is_refused_in_the_unions_words():
    with pytest.raises(ValidationError) as fast:
        compat.deserialize_action({"app": "a", "method": "m", "batch": []}, CompanyOSWireAction)
    # every member's reason, as the union gives them, not the call's alone
    assert {e["loc"][0] for e in fast.value.errors()} >= {"CompanyOSAction", "CompanyOSBatchAction"}
