"""WebSocket fuzzing: frames of every kind a broken or hostile client sends to `/ws`, and the
rule each reply must follow.

Frames: text that is not JSON, JSON that is not an object, binary frames, JSON nested past any
parser's patience, integers of thousands of digits, messages of every known and unknown type
with data of any JSON shape, steps carrying any JSON action, resets with any JSON options.

Rule: every frame but a ``close`` message gets exactly one reply; the reply is an observation,
a state or an error frame of a known code; an error from a reset is the `ResetError` an
in-process reset with the same options raises (never an internal exception's text); and the
session keeps working after it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from companyos.api import CompanyOSEnvironment, ResetError
from companyos.domain.inputs import hostile

from .strategies import wild_value

KNOWN_CODES = {"INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR", "EXECUTION_ERROR"}
INTERNAL = (
    "object has no attribute",
    "unhashable",
    "not JSON serializable",
    "Traceback",
    "got multiple values",
    "NoneType",
    "recursion",
)
"""Fragments of Python's own exception texts: a reply that contains one leaked an internal
error instead of saying what was wrong with the frame."""


@dataclass(frozen=True, slots=True)
class Frame:
    payload: str | bytes
    kind: str
    """What it is: ``reset``/``step``/``state``/``close``/``other`` (a message), ``raw``."""
    data: Any = None


reset_data = st.dictionaries(
    st.sampled_from(
        (
            "seed",
            "task_id",
            "difficulty",
            "max_steps",
            "fork_from",
            "at_step",
            "agent",
            "self",
            "func",
        )
    ),
    wild_value,
    max_size=4,
)
step_data = st.one_of(
    wild_value,
    st.fixed_dictionaries(
        {
            "app": st.one_of(
                st.sampled_from(["ticketdesk", "datahub", "approvalflow"]), wild_value
            ),
            "method": st.one_of(st.sampled_from(["get_ticket", "list_tickets"]), wild_value),
            "params": wild_value,
        }
    ),
    st.fixed_dictionaries({"type": wild_value, "tool_name": wild_value, "arguments": wild_value}),
)


def _message(kind: str, data: Any) -> Frame:
    return Frame(json.dumps({"type": kind, "data": data}), kind, data)


raw_frames = st.one_of(
    st.text(max_size=60).map(lambda t: Frame(t, "raw")),
    wild_value.map(lambda v: Frame(json.dumps(v), "raw")),
    st.binary(max_size=60).map(lambda b: Frame(b, "raw")),
    st.integers(100, 20_000).map(lambda n: Frame("[" * n + "]" * n, "raw")),
    st.integers(5_000, 50_000).map(
        lambda n: Frame('{"type": "reset", "data": {"seed": ' + "9" * n + "}}", "raw")
    ),
    st.sampled_from(
        ['{"type": "step", "data": {"app": NaN}}', '{"type": Infinity}', "{", "", "null"]
    ).map(lambda t: Frame(t, "raw")),
)
messages = st.one_of(
    reset_data.map(lambda d: _message("reset", d)),
    step_data.map(lambda d: _message("step", d)),
    wild_value.map(lambda d: _message("state", d)),
    st.tuples(st.text(max_size=10), wild_value).map(lambda t: _message(t[0], t[1])),
    wild_value.map(lambda d: Frame(json.dumps({"type": "step", "data": d, "extra": d}), "step", d)),
)
frames = st.one_of(raw_frames, messages)


def reset_error_in_process(data: Any) -> str | None:
    """The ResetError text an in-process reset with ``data`` raises (None: it succeeds)."""
    try:
        CompanyOSEnvironment().reset(**data)
    except ResetError as exc:
        return str(exc)
    return None


def _no_literal(literal: str) -> Any:
    raise ValueError(f"non-standard JSON literal {literal}")


def check_reply(frame: Frame, reply: Any) -> str | None:
    """What is wrong with ``reply`` as the answer to ``frame`` (None: nothing)."""
    try:
        message = json.loads(reply, parse_constant=_no_literal)
    except (TypeError, ValueError):
        return f"not a strict JSON reply: {reply!r:.200}"
    found = hostile(message)
    if found is not None:  # the reply echoed what JSON or UTF-8 cannot carry
        return f"a reply holding a hostile value ({found.describe()}): {reply!r:.200}"
    if not isinstance(message, dict) or message.get("type") not in (
        "observation",
        "state",
        "error",
        "mcp",
    ):
        return f"not a reply of a known type: {reply:.200}"
    text = json.dumps(message.get("data"))
    leaked = [fragment for fragment in INTERNAL if fragment in text]
    if message["type"] != "error":
        return f"internal error text in a reply: {leaked}" if leaked else None
    code = message.get("data", {}).get("code")
    if code not in KNOWN_CODES:
        return f"error of unknown code {code!r}: {reply:.300}"
    if code == "EXECUTION_ERROR":
        if frame.kind != "reset" or not isinstance(frame.data, dict):
            return f"execution error for a {frame.kind} frame: {reply:.300}"
        expected = reset_error_in_process(frame.data)
        if expected is None and "episode_id" not in frame.data:
            return f"the server refused a reset that works in-process: {reply:.300}"
    elif leaked:
        return f"internal error text in an error frame: {leaked}: {reply:.300}"
    return None
