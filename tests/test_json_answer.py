"""`api.json_answer`: the routes that send their content as bytes send the JSON value
Starlette's `JSONResponse` would have sent, and the same status and media type."""

from __future__ import annotations

import datetime as dt
import json

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from starlette.responses import JSONResponse

from companyos.api.json_answer import json_answer

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # past 64 bits too: the fallback
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text() | st.integers(-5, 5), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_the_same_json_value_as_starlettes_answer(content):
    ours, theirs = json_answer(content), JSONResponse(content)
    assert json.loads(ours.body) == json.loads(theirs.body)
    assert ours.status_code == theirs.status_code == 200
    assert ours.headers["content-type"] == theirs.headers["content-type"]


class _Model(BaseModel):
    at: dt.date
    n: int


def test_values_orjson_does_not_write_are_encoded_as_fastapi_would():
    answer = json_answer({"m": _Model(at=dt.date(2026, 1, 2), n=3), "big": 2**80}, status_code=201)
    assert json.loads(answer.body) == {"m": {"at": "2026-01-02", "n": 3}, "big": 2**80}
    assert answer.status_code == 201
