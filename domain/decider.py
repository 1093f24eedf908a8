"""The step decider: from the agent's raw call to the events it causes.

Order: the call is recorded (`ToolCalled`, with params refused for size not kept) and the clock
moves; what happens in the background is decided (approvals due, deadlines); an unknown tool,
refused params or params that fail the tool's model give `InvalidAction`; the service may be
down or rate-limited, or a transient fault strike; otherwise the app's decider says what
happens. A transient fault that takes no time (`AppRules.untimed_faults`) has no background:
the minute it did not take is lived at the retry. Nothing here raises on bad input: every
mistake is an event with a message that says what to do instead.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError

from companyos.events.types import Event, FaultInjected, InvalidAction, ToolCalled

from .approvalflow import due_events
from .catalogue import APPS, TOOLS, lookup, methods
from .chaos import profile, roll_fault, unavailable
from .limits import DEFAULT_LIMITS, Limits, clean_params, clip_name
from .model import World
from .rng import KeyedRNG
from .tooling import Ctx, ToolSpec
from .world import evolve, fold


def unknown_tool_message(app: str, method: str) -> str:
    if app not in APPS:
        close = difflib.get_close_matches(app, APPS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return f"Unknown app {app!r}. Apps: {', '.join(APPS)}.{hint}"
    elsewhere = [a for (a, m) in TOOLS if m == method]
    if elsewhere:
        return f"{method} is a {elsewhere[0]} method, not a {app} one."
    close = difflib.get_close_matches(method, methods(app), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    if method in ("close_ticket", "set_priority", "assign_ticket", "verify_ticket"):
        hint = " Use update_ticket(ticket_id, field, value) to change a ticket."
    return f"{app} has no method {method!r}. Its methods: {', '.join(methods(app))}.{hint}"


def params_message(spec: ToolSpec, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(x) for x in err["loc"]) or "params"
        parts.append(f"{where}: {err['msg']}")
    return f"Invalid parameters for {spec.signature()}: {'; '.join(parts)}."


def decide_step(
    world: World,
    app: Any,
    method: Any,
    params: Any,
    seq: int,
    rng: KeyedRNG,
    limits: Limits = DEFAULT_LIMITS,
    refuse: InvalidAction | None = None,
) -> list[Event]:
    """Events caused by one tool call; ``seq`` is the seq its `ToolCalled` will get.

    The call is recorded first, which moves the clock; what time does on its own comes next
    (approvers deciding requests that are due, deadlines passing), then the call itself:
    validation, the service being down or rate-limited, a transient fault, the app's decider.
    ``refuse`` is a refusal decided before the call reached any app (an action naming another
    episode than the session's): recorded in its place.
    """
    return _decide(world, app, method, params, seq, rng, limits, refuse)[0]


def decide_and_fold(
    world: World,
    app: Any,
    method: Any,
    params: Any,
    seq: int,
    rng: KeyedRNG,
    limits: Limits = DEFAULT_LIMITS,
    refuse: InvalidAction | None = None,
) -> tuple[list[Event], World]:
    """`decide_step`, and the world after all the events it returns: the call and what time
    did are folded while deciding, so only the call's own outcome is folded again here."""
    events, now, folded = _decide(world, app, method, params, seq, rng, limits, refuse)
    return events, fold(events[folded:], now)


def _decide(
    world: World,
    app: Any,
    method: Any,
    params: Any,
    seq: int,
    rng: KeyedRNG,
    limits: Limits,
    refuse: InvalidAction | None,
) -> tuple[list[Event], World, int]:
    """(events, the world after the first ``n`` of them, ``n``)."""
    step = world.step + 1
    app_name, method_name = clip_name(app, limits), clip_name(method, limits)
    if params is None:
        params = {}
    cleaned, problem = clean_params(params, limits)
    called = ToolCalled(
        step=step,
        app=app_name,
        method=method_name,
        params=cleaned,
        refused=problem.message if problem else None,
    )
    assert world.info is not None
    chaos = profile(world.info.difficulty)
    ctx = Ctx(seq, step, rng, chaos)
    now = evolve(world, called)
    verdict, parsed = _verdict(now, app, method, cleaned, problem, refuse, ctx, limits)
    if (
        isinstance(verdict, FaultInjected)
        and verdict.kind == "unavailable"
        and now.rules.untimed_faults
    ):
        # The call never reached its service and took no time: nothing happens meanwhile
        # either (approvers decide, deadlines pass, at the retry).
        return [called, verdict], now, 1
    background = due_events(now, ctx)
    if background:
        now = fold(background, now)
    out: list[Event] = [called, *background]
    if verdict is not None:
        return [*out, verdict], now, len(out)
    spec = lookup(app, method)
    assert spec is not None and parsed is not None
    return [*out, *spec.decide(now, parsed, ctx)], now, len(out)


_PARSED: dict[tuple[Any, ...], Any] = {}
_PARSED_MAX = 4_096
_SHORT = 64


def parse_params(spec: ToolSpec, cleaned: dict[str, Any]) -> Any:
    """``spec.params.model_validate(cleaned)``, kept for params that are only short strings,
    ints, bools and None (the usual call: a ticket id, a metric name). A tool's params model is
    frozen and such fields are immutable, so one parsed model serves every call that gives the
    same values of the same types (True and 1 are told apart). Params that do not validate are
    never kept: each such call raises afresh."""
    key: tuple[Any, ...] = (spec.params,)
    for k, v in cleaned.items():
        t = type(v)
        if not (t is int or t is bool or v is None or (t is str and len(v) <= _SHORT)):
            return spec.params.model_validate(cleaned)
        key += (k, t, v)
    hit = _PARSED.get(key)
    if hit is None:
        hit = spec.params.model_validate(cleaned)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = hit
    return hit


def _verdict(
    now: World,
    app: Any,
    method: Any,
    cleaned: Any,
    problem: Any,
    refuse: InvalidAction | None,
    ctx: Ctx,
    limits: Limits,
) -> tuple[Event | None, Any]:
    """Whether the call reaches its app's decider: (None, the parsed params), or (what
    happens instead, None): a refusal decided before the call, an unknown tool, params that
    do not validate, the service down or rate-limited, a transient fault."""
    if refuse is not None:
        return refuse, None
    spec = lookup(app, method) if isinstance(app, str) and isinstance(method, str) else None
    if spec is None:
        message = unknown_tool_message(clip_name(app, limits), clip_name(method, limits))
        return InvalidAction(code="unknown_tool", message=message), None
    if problem is not None:
        return InvalidAction(code=problem.code, message=f"Refused: {problem.message}."), None
    if not isinstance(cleaned, dict):
        return (
            InvalidAction(
                code="params_not_object",
                message=f"params must be a JSON object of named arguments for {spec.signature()}, "
                f"not {type(cleaned).__name__}.",
            ),
            None,
        )
    try:
        parsed = parse_params(spec, cleaned)
    except ValidationError as exc:
        return InvalidAction(code="invalid_params", message=params_message(spec, exc)), None
    refused = unavailable(now, spec.app, spec.method)
    if refused is not None:
        return refused, None
    if spec.faultable:
        assert now.info is not None
        fault = roll_fault(
            ctx.rng,
            ctx.seq,
            ctx.chaos,
            now.chaos.faults,
            now.info.fault_budget,
            spec.app,
            spec.method,  # type: ignore[arg-type]
        )
        if fault is not None:
            return fault, None
    return None, parsed
