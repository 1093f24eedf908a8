"""The event vocabulary of CompanyOS.

Every fact an episode produces is one of these models. They are pure data and import nothing
else from CompanyOS, because every layer speaks this vocabulary: the deciders in `domain`
emit them, `projections` fold them, the stores persist them.

Each event type has a ``schema_version``. When a type changes shape its version goes up and an
upcaster in `events.upcasting` lifts stored payloads of the old shape on read; stored rows are
never rewritten.
"""

from __future__ import annotations

import keyword
import types
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

Scalar = str | int | float | bool


class Event(BaseModel):
    """Base of all events. Frozen: a fact, once made, does not change.

    Events are validated where they enter: read from a store (`upcasting.parse_event`) or
    sent by a client. The simulation makes several every step from values it computed itself;
    for those, each flat event class has a constructor generated from its fields
    (`_fast_init`) that checks each value's exact type against its field and, when every one
    is what validation would keep unchanged, sets the model's slots without running the
    validator. Anything else (a value validation would convert or refuse, a missing or
    unknown field) goes through full validation, so the result, its payload and its hash are
    always those of a validated event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: ClassVar[int] = 1
    nested: ClassVar[bool] = False
    """True when a field holds models: the payload then needs a full JSON dump. Flat events
    hold only JSON values (lists, not tuples), so their fields are their payload."""
    type: str

    def __init__(self, /, **data: Any) -> None:
        # Taken only by events that have no constructor of their own (`_fast_init`).
        super().__init__(**data)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            return  # a class that writes its own constructor keeps it
        # Every subclass gets its own: one inherited from a parent would build the parent's
        # fields.
        init = _fast_init(cls)
        cls.__init__ = init if init is not None else Event.__init__  # type: ignore[method-assign]

    def payload(self) -> dict[str, Any]:
        """The JSON-ready body as stored: everything but the discriminator."""
        if self.nested:
            return self.model_dump(mode="json", exclude={"type"})
        data = dict(self.__dict__)
        del data["type"]
        return data


_SCALARS = (str, int, float, bool)
_UNSET: Any = object()
"""A keyword the caller did not give (None is a value)."""


def _check(annotation: Any, var: str, env: dict[str, Any], widen: bool = False) -> str | None:
    """A Python expression, true when ``var`` is a value validation keeps exactly as it is for
    a field of this type; None: this type has no fast build. Constants it needs are put in
    ``env``; ``_T`` is the builtin ``type`` (a field may be called ``type``). ``widen``: an
    int is fine for a float too, where it is exact as one (the constructor widens it once
    every value has passed; an int in a list or dict of floats is left to validation)."""
    if annotation is Any:
        return "True"
    if annotation is float and widen:
        return f"(_T({var}) is float or (_T({var}) is int and -_EXACT <= {var} <= _EXACT))"
    if annotation in _SCALARS:
        return f"_T({var}) is {annotation.__name__}"
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal and all(type(a) is str for a in args):
        name = f"_L{len(env)}"
        env[name] = frozenset(args)
        return f"(_T({var}) is str and {var} in {name})"
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if set(inner) == set(_SCALARS):  # Scalar: validation keeps the exact type
            test = f"_T({var}) in _SCALARS"
        elif len(inner) == 1:
            test = _check(inner[0], var, env, widen)  # type: ignore[assignment]
            if test is None:
                return None
        else:
            return None
        return f"({var} is None or {test})" if len(inner) < len(args) else test
    if origin is list and len(args) == 1:
        item = _check(args[0], "x", env)
        if item is None or args[0] is float:  # validation would widen int items
            return None
        # An empty list (most of a step's) skips the generator: a frame less.
        return f"(_T({var}) is list and (not {var} or all({item} for x in {var})))"
    if origin is dict and len(args) == 2 and args[0] is str:
        item = _check(args[1], "x", env)
        if item is None:
            return None
        if args[1] is float:  # an int item would be widened: leave that to validation
            item = "_T(x) is float"
        return (
            f"(_T({var}) is dict and (not {var} or "
            f"all(_T(k) is str and {item} for k, x in {var}.items())))"
        )
    return None


def _widens(annotation: Any) -> bool:
    """Whether validation turns an int given for this field into a float."""
    if annotation is float:
        return True
    args = set(get_args(annotation))
    return get_origin(annotation) in (Union, types.UnionType) and args - {type(None)} == {float}


def _fast_init(cls: type[Event]) -> Any:
    """The constructor of a flat event class, or None where only validation will do.

    Generated once per class whose fields are scalars, or lists and dicts of them: each
    keyword is a parameter of its own (Python binds them), each value's exact type is checked
    against its field, and when every one is what validation would keep unchanged the model's
    slots are set directly (lists and dicts copied, as validation copies them). Anything else
    (a value validation would convert or refuse, a missing or unknown keyword) is handed to
    validation whole, so the result, its payload and its hash are always those of a validated
    event. Nested events, and classes with validators of their own, always validate."""
    decorators = cls.__pydantic_decorators__
    if cls.nested or any(
        (decorators.validators, decorators.field_validators, decorators.root_validators,
         decorators.model_validators, decorators.field_serializers)
    ):  # fmt: skip
        return None
    fields = cls.model_fields
    # Every name of the generated code but ``self`` starts with an underscore, as no field does.
    if any(
        not n.isidentifier() or keyword.iskeyword(n) or n[0] == "_" or n == "self" for n in fields
    ):
        return None
    env: dict[str, Any] = {"_SCALARS": _SCALARS, "_T": type, "_M": _UNSET, "_EXACT": 2**53}
    params = ", ".join(f"{n}=_M" for n in fields)
    names = ", ".join(fields)
    slow = f"return _slow(self, _extra, {names})"
    # First every given value checked, in place (so that what validation is handed, if one
    # fails, is what was given), then the defaults, widenings and copies.
    checks: list[str] = []
    builds: list[str] = []
    required = [n for n, f in fields.items() if f.is_required()]
    if required:
        checks.append(f"    if {' or '.join(f'{n} is _M' for n in required)}: {slow}")
    for i, (name, f) in enumerate(fields.items()):
        widen = _widens(f.annotation)
        test = _check(f.annotation, name, env, widen)
        if test is None:
            return None
        made: list[str] = []
        if widen:
            made.append(f"if _T({name}) is int: {name} = float({name})")
        origin = get_origin(f.annotation)
        if origin in (list, dict):
            made.append(f"{name} = {origin.__name__}({name})")
        if f.is_required():
            checks.append(f"    if not ({test}): {slow}")
            builds += [f"    {line}" for line in made]
            continue
        checks.append(f"    if {name} is not _M and not ({test}): {slow}")
        if f.default_factory is not None:
            env[f"_f{i}"] = f.default_factory
            default = f"_f{i}()"
        else:
            env[f"_d{i}"] = f.default
            default = f"_d{i}"
        builds.append(f"    if {name} is _M: {name} = {default}")
        builds.append("    else:")
        builds += [f"        {line}" for line in made]
        builds.append(f"        _fs.add({name!r})")
    given = "{" + ", ".join(repr(n) for n in required) + "}" if required else "set()"
    body = [*checks, f"    _fs = {given}", *builds]
    pairs = ", ".join(f"({n!r}, {n})" for n in fields)
    lines = [
        # What was given, handed to validation whole: its refusal, or its conversions.
        f"def _slow(self, _extra, {names}):",
        f"    _data = {{_k: _v for _k, _v in ({pairs},) if _v is not _M}}",
        "    _validate(self, {**_data, **_extra})",
        f"def __init__(self, /, *, {params}, **_extra):",
        f"    if _extra: {slow}",
        *body,
        f"    _dict(self, {{{', '.join(f'{n!r}: {n}' for n in fields)}}})",
        "    _given(self, _fs)",
        "    _extra_set(self, None)",
        "    _private(self, None)",
    ]
    env.update(
        _validate=_validate_late,
        _dict=set_model_dict,
        _given=set_fields_set,
        _extra_set=set_model_extra,
        _private=set_model_private,
    )
    exec("\n".join(lines), env)  # the code is built above from the class's own fields
    init = env["__init__"]
    init.__qualname__ = f"{cls.__name__}.__init__"
    init.fast = True
    return init


def _validate(event: Event, data: dict[str, Any]) -> None:
    """Pydantic's own construction: validation, and a `ValidationError` where it refuses."""
    BaseModel.__init__(event, **data)


def _validate_late(event: Event, data: dict[str, Any]) -> None:
    _validate(event, data)  # looked up when called: a test can watch it


# The slots `model_construct` sets, set through their descriptors: what `object.__setattr__`
# finds on each call, found once (several events a step, and the observation: `api.models`).
set_model_dict = BaseModel.__dict__["__dict__"].__set__
set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
set_model_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
set_model_private = BaseModel.__dict__["__pydantic_private__"].__set__


# --------------------------------------------------------------------------- lifecycle


class ForkRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    episode_id: str
    at_step: int


class EpisodeStarted(Event):
    """First event of every stream. Version 2 added the chaos dial and the reward profile;
    version 3 records whether the agent is shown its progress (a curriculum option)."""

    schema_version: ClassVar[int] = 3
    nested: ClassVar[bool] = True
    type: Literal["EpisodeStarted"] = "EpisodeStarted"
    seed: int
    scenario: str
    difficulty: int
    max_steps: int
    reward_profile: str = "default"
    fault_budget: int = 0
    forked_from: ForkRef | None = None
    generator: str = "companyos/1"
    agent: str | None = None
    """Who plays (a label for analysis: "oracle", "random", a model name), if said."""
    show_progress: bool = False
    """The agent's observations carry the milestones (a curriculum); by default they carry
    nothing of the grader."""


class TicketGoal(BaseModel):
    """How one ticket must end."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    ticket_id: str
    fields: dict[str, str] = Field(default_factory=dict)
    """Field values it must have (a missing priority restored, the right assignee)."""
    unblock: bool = False
    verify: bool = False
    status: str | None = None
    """A status it must reach (e.g. resolved), if any."""
    resolution: Literal["declined", "flagged"] | None = None
    """The decision it must carry, for decision tasks."""


class ApprovalGoal(BaseModel):
    """One approval the task needs, in the order given (each after the previous is approved)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    approval_type: str
    data: dict[str, str] = Field(default_factory=dict)
    """Expected values of its text fields (metric, ticket and approval fields are checked
    against the system of record)."""
    mentions: dict[str, str] = Field(default_factory=dict)
    """Words its text fields must name (any case, as a whole word): what the request is about
    where the task's text names it loosely (the original's "ACME Corp", "report #447")."""


class Criterion(BaseModel):
    """The rule a decision task states, as data: qualifies when ``metric op threshold`` (or
    ``metric op against``, another metric). Grading does not use it (the goal says what the
    right decision is); it lets a baseline decide the way its text says, on the data it saw."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    metric: str
    op: Literal[">=", "<="]
    threshold: float | None = None
    against: str | None = None


class Goal(BaseModel):
    """What success means for a task, as data (grading never reads the task text). Version 2
    of TaskAssigned replaced the single ticket and approval of version 1 with lists."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    tickets: tuple[TicketGoal, ...]
    metrics: tuple[str, ...] = ()
    """Metrics that must be read fresh before acting on them."""
    access: tuple[str, ...] = ()
    """Restricted datasets the agent must be granted before it can read them."""
    approvals: tuple[ApprovalGoal, ...] = ()
    decision: Literal["approve", "decline", "flag"] = "approve"
    criterion: Criterion | None = None
    finish: tuple[str, ...] = ()
    """Approval types whose approval finishes the work, right or wrong: the same whichever way
    a hidden value falls, so that the episode's end says nothing of the grade (empty: the last
    approval's type, as goals recorded before this field were)."""

    @property
    def finishing_types(self) -> tuple[str, ...]:
        if self.finish:
            return self.finish
        return (self.approvals[-1].approval_type,) if self.approvals else ()

    @property
    def ticket_id(self) -> str:
        """The task's main ticket."""
        return self.tickets[0].ticket_id


class TaskAssigned(Event):
    """Version 3 added ``goal.finish`` (the approval types that end the work)."""

    schema_version: ClassVar[int] = 3
    nested: ClassVar[bool] = True
    type: Literal["TaskAssigned"] = "TaskAssigned"
    text: str
    goal: Goal
    family: str = ""
    instance_id: str = ""


class EpisodeEnded(Event):
    type: Literal["EpisodeEnded"] = "EpisodeEnded"
    outcome: Literal["success", "failure", "timeout", "abandoned"]
    """``failure``: the work was observably finished (the decision recorded, the last approval
    approved) but not right."""
    step: int


class StepScored(Event):
    """A cache of the reward projection for one step, so readers need not re-fold.

    Recomputing the reward from the log must give the same numbers (tests check it)."""

    type: Literal["StepScored"] = "StepScored"
    step: int
    reward: float
    total: float
    gained: list[str] = Field(default_factory=list)
    lost: list[str] = Field(default_factory=list)
    terms: dict[str, float] = Field(default_factory=dict)


# --------------------------------------------------------------------------- world set-up


class TicketCreated(Event):
    type: Literal["TicketCreated"] = "TicketCreated"
    ticket_id: str
    title: str
    description: str
    priority: str | None
    assignee: str | None
    status: str
    verified: bool = False
    resolution: str | None = None


class MetricRecorded(Event):
    """A metric as its system of record holds it. Version 2 measures age in minutes of the
    simulated clock (version 1 had whole days) and can restrict it to a dataset."""

    schema_version: ClassVar[int] = 2
    type: Literal["MetricRecorded"] = "MetricRecorded"
    name: str
    description: str
    value: float
    unit: str
    source: str
    age_minutes: int = 0
    """How old the served value is at the start of the episode."""
    max_age_minutes: int = 1440
    threshold_op: Literal[">=", "<=", ">", "<"] | None = None
    threshold: float | None = None
    dataset: str | None = None
    """Readable only with access to this dataset (None: open to everyone)."""


class ApproverRegistered(Event):
    type: Literal["ApproverRegistered"] = "ApproverRegistered"
    person_id: str
    name: str
    email: str
    title: str
    role: str | None = None
    delegate: str | None = None


class ApprovalFieldSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    kind: Literal["metric", "ticket", "text", "approval"]
    metric: str | None = None
    approval_type: str | None = None
    """For kind "approval": the type the referenced (approved) request must have."""
    description: str = ""
    optional: bool = False
    """May be left out (a sign-off named only when the policy asks for it)."""


class ApprovalTypeDefined(Event):
    nested: ClassVar[bool] = True
    type: Literal["ApprovalTypeDefined"] = "ApprovalTypeDefined"
    approval_type: str
    description: str
    required_role: str
    fields: tuple[ApprovalFieldSpec, ...]
    requires_verified_ticket: bool = True
    grants: str | None = None
    """The dataset an approved request of this type grants access to."""


class ChaosInjected(Event):
    """A perturbation of the world: set-up chaos (missing field, stale metric, ...) or chance
    drawn during play (approval latency, a chance rejection)."""

    type: Literal["ChaosInjected"] = "ChaosInjected"
    kind: str
    target: str
    params: dict[str, Any] = Field(default_factory=dict)


class AppRulesSet(Event):
    """How the apps behave where a world's conventions differ from the generated worlds'.

    The original CompanyOS's fixed worlds (`domain.original`) number requests APR-001,
    APR-002, ...; their approvers decide a request when its status is checked, after the
    number of checks its latency says, not as the clock passes; a request addressed to an
    approver who is out of office is refused at once; a closed ticket can still be edited; and
    linking an approval to a verified ticket does not check that the approval exists. Without
    this event a world keeps the defaults: APR-1001, ..., decisions on the clock, requests to
    someone away left pending, closed tickets read-only, links only to existing approvals."""

    type: Literal["AppRulesSet"] = "AppRulesSet"
    first_approval_number: int = 1001
    approval_number_digits: int = 0
    """Zero-padding of the number in approval ids (3: APR-001)."""
    decide_on: Literal["clock", "poll"] = "clock"
    away_approver: Literal["pending", "refuse"] = "pending"
    closed_read_only: bool = True
    link_needs_approval: bool = True


class ClientEpisodeSet(Event):
    """A compatibility client's current episode (`api.original`): the original served one
    episode to whoever called it, so its clients never name one. Each client name has a stream
    of these; the last says which episode that client's calls go to."""

    type: Literal["ClientEpisodeSet"] = "ClientEpisodeSet"
    client: str
    episode_id: str


# --------------------------------------------------------------------------- the agent


class ToolCalled(Event):
    """The agent's call exactly as made (params refused for size are not stored)."""

    type: Literal["ToolCalled"] = "ToolCalled"
    step: int
    app: str
    method: str
    params: Any = None
    refused: str | None = None


class AgentReplied(Event):
    """What a model answered before the call it was read as: the raw text, the tool calls as
    its server returned them (JSON text), tokens, latency. Sent with the action by the LLM
    agent and appended, before the step, to the stream ``replies:<episode id>`` (see
    `replies_stream`), beside the episode and not in it: nothing folds, scores or re-simulates
    it, and it moves no episode's seq (which keys its chaos)."""

    type: Literal["AgentReplied"] = "AgentReplied"
    episode_id: str
    step: int
    """The step of the call this reply became."""
    content: str = ""
    tool_calls: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    finish_reason: str | None = None
    error: str | None = None


REPLIES_PREFIX = "replies:"


def replies_stream(episode_id: str) -> str:
    """The stream of an episode's `AgentReplied` events."""
    return REPLIES_PREFIX + episode_id


class InvalidAction(Event):
    """The call could not be understood: unknown tool, bad parameters, no episode."""

    type: Literal["InvalidAction"] = "InvalidAction"
    code: str
    message: str


class ActionRejected(Event):
    """The call was understood but a rule of the app forbids it."""

    type: Literal["ActionRejected"] = "ActionRejected"
    code: str
    message: str


class FaultInjected(Event):
    """A call refused by the service, with no effect: a transient failure ("unavailable"),
    rate limiting ("rate_limited", retry after some minutes) or an outage ("outage", until a
    minute of the clock)."""

    type: Literal["FaultInjected"] = "FaultInjected"
    app: str
    method: str
    kind: str = "unavailable"
    retry_after_minutes: int | None = None
    until_minute: int | None = None


class TicketsListed(Event):
    type: Literal["TicketsListed"] = "TicketsListed"
    count: int


class TicketsSearched(Event):
    type: Literal["TicketsSearched"] = "TicketsSearched"
    query: str
    ticket_ids: list[str]


class TicketViewed(Event):
    type: Literal["TicketViewed"] = "TicketViewed"
    ticket_id: str


class TicketUpdated(Event):
    type: Literal["TicketUpdated"] = "TicketUpdated"
    ticket_id: str
    field: str
    old: Scalar | None
    new: Scalar | None


class MetricsListed(Event):
    type: Literal["MetricsListed"] = "MetricsListed"
    count: int


class MetricQueried(Event):
    type: Literal["MetricQueried"] = "MetricQueried"
    metric: str
    value: float
    stale_days: int
    stale: bool


class MetricRefreshed(Event):
    type: Literal["MetricRefreshed"] = "MetricRefreshed"
    metric: str
    old: float
    new: float


class ApproverLookedUp(Event):
    type: Literal["ApproverLookedUp"] = "ApproverLookedUp"
    role: str
    holder: str | None
    approver: str | None
    delegated: bool


class ApprovalTypesListed(Event):
    type: Literal["ApprovalTypesListed"] = "ApprovalTypesListed"
    count: int


class ApprovalSubmitted(Event):
    type: Literal["ApprovalSubmitted"] = "ApprovalSubmitted"
    approval_id: str
    approval_type: str
    approver: str
    data: dict[str, Scalar]
    ticket_id: str | None = None


class ApprovalPolled(Event):
    type: Literal["ApprovalPolled"] = "ApprovalPolled"
    approval_id: str
    polls: int
    status: str


class ApprovalDecided(Event):
    type: Literal["ApprovalDecided"] = "ApprovalDecided"
    approval_id: str
    decision: Literal["approved", "rejected"]
    reason: str | None = None
    cause: str = "review"


class ApprovalExpired(Event):
    """A request left undecided past its deadline (an approval SLA)."""

    type: Literal["ApprovalExpired"] = "ApprovalExpired"
    approval_id: str


class ApprovalEscalated(Event):
    type: Literal["ApprovalEscalated"] = "ApprovalEscalated"
    approval_id: str
    reason: str


class ApprovalsListed(Event):
    type: Literal["ApprovalsListed"] = "ApprovalsListed"
    count: int


AnyEvent = Annotated[
    EpisodeStarted
    | TaskAssigned
    | EpisodeEnded
    | StepScored
    | TicketCreated
    | MetricRecorded
    | ApproverRegistered
    | ApprovalTypeDefined
    | ChaosInjected
    | AppRulesSet
    | ClientEpisodeSet
    | ToolCalled
    | AgentReplied
    | InvalidAction
    | ActionRejected
    | FaultInjected
    | TicketsListed
    | TicketsSearched
    | TicketViewed
    | TicketUpdated
    | MetricsListed
    | MetricQueried
    | MetricRefreshed
    | ApproverLookedUp
    | ApprovalTypesListed
    | ApprovalSubmitted
    | ApprovalPolled
    | ApprovalDecided
    | ApprovalEscalated
    | ApprovalExpired
    | ApprovalsListed,
    Field(discriminator="type"),
]
"""The discriminated union of every event type (for schemas and generic parsing)."""

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(AnyEvent)

EVENT_TYPES: dict[str, type[Event]] = {
    cls.model_fields["type"].default: cls for cls in get_args(get_args(AnyEvent)[0])
}
"""Event classes by their ``type`` discriminator."""
