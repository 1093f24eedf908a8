"""`api.inputs.fast_json` reads a frame with orjson only where orjson's reading is the json
module's, to the value and to the type: the hostile-input checks and OpenEnv's handler (which
uses the json module) must see the same value."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from companyos.api.inputs import UNREAD, fast_json, parse


def same(a: Any, b: Any) -> bool:
    """Equal with exact types all the way down (1 is not 1.0, NaN is NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # past 64 bits too: orjson would read those as floats
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()  # lone surrogates included
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(values, st.booleans())
def test_a_fast_reading_is_the_json_modules_reading(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    expected = json.loads(text)
    got = fast_json(text)
    if got is not UNREAD:
        assert same(got, expected), text
    ok, parsed = parse(text)
    assert ok and same(parsed, expected)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='{}[]":,0123456789.eE+-truefalsnNIiy \\u\ud800', max_size=40))
def test_any_text_reads_as_the_json_module_reads_it_or_not_at_all(text):
    try:
        expected: Any = json.loads(text)
    except (ValueError, RecursionError):
        expected = UNREAD
    got = fast_json(text)
    if got is not UNREAD:
        assert expected is not UNREAD and same(got, expected), text
    ok, parsed = parse(text)
    assert ok == (expected is not UNREAD)
    if ok:
        assert same(parsed, expected)


def test_the_cases_orjson_reads_differently_go_to_the_json_module():
    for text in (
        '{"a": 12345678901234567890123}',
        "-9223372036854775809",
        "18446744073709551616",
        '{"a": NaN}',
        "1e400",
        '"\\ud800"',
        "[" * 3000 + "]" * 3000,
    ):
        assert fast_json(text) is UNREAD, text
    assert type(parse('{"a": 12345678901234567890123}')[1]["a"]) is int
    assert fast_json('{"type": "step", "data": {"seed": 42}}') == {
        "type": "step",
        "data": {"seed": 42},
    }
