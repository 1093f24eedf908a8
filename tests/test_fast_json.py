"""`api.inputs.fast_json` reads a frame with orjson only where orjson's reading is the json
module's, to the value and to the type: the hostile-input checks and OpenEnv's handler (which
uses the json module) must see the same value."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from companyos.api.inputs import UNREAD, clean_read, fast_json, long_number, parse, read
from companyos.domain.inputs import MAX_WALK, hostile


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


# A value the hostile-input check refuses, of every kind: a NUL (in text and in a key), lone
# surrogates, non-finite and too-large numbers, integers past 64 bits.
hostile_scalars = (
    scalars
    | st.sampled_from(["\x00", "a\x00b", "\ud800", "x\udfff", 2**63, -(2**63) - 1, 10**30])
    | st.sampled_from([math.inf, -math.inf, math.nan, 1e308 * 10])
)
mixed = st.recursive(
    hostile_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text() | st.sampled_from(["\x00k", "\ud800"]), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=600, deadline=None)
@given(mixed, st.booleans(), st.booleans())
def test_a_clean_reading_holds_nothing_the_walk_would_refuse(value, ascii_only, as_bytes):
    # `clean_read` lets a frame or body skip the walk: it must never pass one the walk refuses.
    text: str | bytes = json.dumps(value, ensure_ascii=ascii_only)
    if as_bytes:
        assert isinstance(text, str)
        text = text.encode("utf-8", "surrogatepass")
    ok, parsed, clean = read(text)
    assert ok
    if clean:
        assert hostile(parsed) is None, text
    if hostile(parsed) is None and fast_json(text) is not UNREAD and len(text) < 1000:
        assert clean  # and it does skip the usual frame


def test_a_nul_or_a_long_text_is_walked():
    nul = json.dumps({"a": "x\x00"})
    assert fast_json(nul) is not UNREAD and not clean_read(nul)
    many = "[" + ",".join(["0"] * (MAX_WALK // 2 + 1)) + "]"
    assert fast_json(many) is not UNREAD and not clean_read(many)
    assert hostile(json.loads("[" + ",".join(["0"] * (MAX_WALK + 1)) + "]")) is not None


@given(st.binary(max_size=80) | st.text(alphabet='0123456789a٣ "', max_size=80).map(str.encode))
def test_a_long_number_is_what_the_regex_finds(raw):
    # The regex's \d on bytes is ASCII only: a UTF-8 Arabic-Indic digit is no digit here.
    assert long_number(raw) == (re.search(rb"\d{16}", raw) is not None)


def test_a_run_of_sixteen_digits_is_long_and_fifteen_is_not():
    assert long_number(b'{"a": 1234567890123456}')
    assert long_number(b"x" * 5000 + b"9" * 16)
    assert not long_number(b'{"a": 123456789012345, "b": 1.5e300}')
    assert not long_number(b"123456789012345 123456789012345")
