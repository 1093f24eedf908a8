"""The event vocabulary of CompanyOS.

Every fact an episode produces is one of these models. They are pure data and import nothing
else from CompanyOS, because every layer speaks this vocabulary: the deciders in `domain`
emit them, `projections` fold them, the stores persist them.

Each event type has a ``schema_version``. When a type changes shape its version goes up and an
upcaster in `events.upcasting` lifts stored payloads of the old shape on read; stored rows are
never rewritten.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

Scalar = str | int | float | bool


class Event(BaseModel):
    """Base of all events. Frozen: a fact, once made, does not change."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: ClassVar[int] = 1
    nested: ClassVar[bool] = False
    """True when a field holds models: the payload then needs a full JSON dump. Flat events
    hold only JSON values (lists, not tuples), so their fields are their payload."""
    type: str

    def payload(self) -> dict[str, Any]:
        """The JSON-ready body as stored: everything but the discriminator."""
        if self.nested:
            return self.model_dump(mode="json", exclude={"type"})
        data = dict(self.__dict__)
        del data["type"]
        return data


# --------------------------------------------------------------------------- lifecycle


class ForkRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    episode_id: str
    at_step: int


class EpisodeStarted(Event):
    """First event of every stream. Version 2 added the chaos dial and the reward profile."""

    schema_version: ClassVar[int] = 2
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


class Goal(BaseModel):
    """What success means for a task, as data (grading never reads the task text)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    ticket_id: str
    ticket_fields: dict[str, str] = Field(default_factory=dict)
    unblock: bool = False
    verify: bool = True
    metrics: tuple[str, ...] = ()
    approval_type: str
    approval_data: dict[str, str] = Field(default_factory=dict)


class TaskAssigned(Event):
    nested: ClassVar[bool] = True
    type: Literal["TaskAssigned"] = "TaskAssigned"
    text: str
    goal: Goal


class EpisodeEnded(Event):
    type: Literal["EpisodeEnded"] = "EpisodeEnded"
    outcome: Literal["success", "timeout", "abandoned"]
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


class MetricRecorded(Event):
    type: Literal["MetricRecorded"] = "MetricRecorded"
    name: str
    description: str
    value: float
    unit: str
    source: str
    stale_days: int = 0
    max_age_days: int = 1
    threshold_op: Literal[">=", "<="] | None = None
    threshold: float | None = None


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
    kind: Literal["metric", "ticket", "text"]
    metric: str | None = None
    description: str = ""


class ApprovalTypeDefined(Event):
    nested: ClassVar[bool] = True
    type: Literal["ApprovalTypeDefined"] = "ApprovalTypeDefined"
    approval_type: str
    description: str
    required_role: str
    fields: tuple[ApprovalFieldSpec, ...]
    requires_verified_ticket: bool = True


class ChaosInjected(Event):
    """A perturbation of the world: set-up chaos (missing field, stale metric, ...) or chance
    drawn during play (approval latency, a chance rejection)."""

    type: Literal["ChaosInjected"] = "ChaosInjected"
    kind: str
    target: str
    params: dict[str, Any] = Field(default_factory=dict)


# --------------------------------------------------------------------------- the agent


class ToolCalled(Event):
    """The agent's call exactly as made (params refused for size are not stored)."""

    type: Literal["ToolCalled"] = "ToolCalled"
    step: int
    app: str
    method: str
    params: Any = None
    refused: str | None = None


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
    """A transient service failure: the call had no effect and may be retried."""

    type: Literal["FaultInjected"] = "FaultInjected"
    app: str
    method: str
    kind: str = "unavailable"


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
    | ToolCalled
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
    | ApprovalsListed,
    Field(discriminator="type"),
]
"""The discriminated union of every event type (for schemas and generic parsing)."""

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(AnyEvent)

EVENT_TYPES: dict[str, type[Event]] = {
    cls.model_fields["type"].default: cls for cls in get_args(get_args(AnyEvent)[0])
}
"""Event classes by their ``type`` discriminator."""
