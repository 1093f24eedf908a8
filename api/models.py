"""Typed wire models: the OpenEnv Action, Observation and State of CompanyOS.

OpenEnv drops ``Observation.metadata`` on the wire, so everything a client needs is a real field.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.types import Action, Observation, State
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    RootModel,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from companyos.domain.inputs import hostile
from companyos.events.types import (
    set_fields_set,
    set_model_dict,
    set_model_extra,
    set_model_private,
)


def _not_a_bool(value: Any) -> Any:
    if isinstance(value, bool):  # pydantic would take `false` for step 0
        # A custom error, not ValueError: OpenEnv puts `errors()` in its JSON 422 as they are,
        # and a ValueError in their context is not JSON.
        raise PydanticCustomError("int_type", "expected_step must be a step number, not a boolean")
    return value


class AgentReply(BaseModel):
    """A model's raw reply behind an action (the LLM agent sends it): logged as an
    `AgentReplied` event beside the episode, never read by the simulation or the reward."""

    # Strict: a boolean is not a latency, nor a number a text (as the schema says).
    model_config = ConfigDict(extra="forbid", strict=True)

    content: str = Field(default="", max_length=16_384, description="The reply's text.")
    tool_calls: str | None = Field(
        default=None, max_length=16_384, description="Its tool calls as the server sent them."
    )
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    latency_s: float | None = Field(default=None, ge=0, description="Seconds the model took.")
    finish_reason: str | None = Field(default=None, max_length=64)
    error: str | None = Field(default=None, max_length=4_096, description="The request's error.")

    @model_validator(mode="after")
    def _keepable(self) -> AgentReply:
        # The one input rule (`domain.inputs`): no NUL, lone surrogate or non-finite number
        # reaches the log, whichever door the reply came in by (the LLM agent escapes them).
        found = hostile(self.model_dump())
        if found is not None:
            raise PydanticCustomError("value_error", "reply.{where}", {"where": found.describe()})
        return self


class CompanyOSAction(Action):
    """One tool call: ``{"app": ..., "method": ..., "params": {...}}`` as in the original.

    ``params`` is deliberately untyped here: a wrong shape is the agent's mistake, recorded in
    the log with a penalty and a message, not a request the server refuses."""

    app: str = Field(description="ticketdesk | datahub | approvalflow")
    method: str = Field(description="A method of the app, e.g. get_ticket.")
    params: Any = Field(default_factory=dict, description="Named arguments of the method.")
    episode_id: str | None = Field(
        default=None,
        description="Continue this stored episode (stateful HTTP); default: the session's own.",
    )
    expected_step: Annotated[int | None, BeforeValidator(_not_a_bool)] = Field(
        default=None,
        ge=0,
        description="Apply only if the episode is at this step, else answer with a conflict "
        "(optimistic concurrency for clients that share an episode).",
    )
    reply: AgentReply | None = Field(
        default=None,
        description="The model reply this call was read from, logged beside the episode "
        "(stream replies:<episode_id>); it changes nothing in the episode.",
    )


class CompanyOSObservation(Observation):
    json_ready: ClassVar[bool] = True
    """Every field holds JSON values only (the environment builds observations from what it
    computed, `observation_from`): `wire` reads them as they are."""

    episode_id: str | None = Field(default=None, description="The episode's stream id.")
    seed: int | None = Field(default=None, description="Seed of the episode: replay with it.")
    task_id: str | None = Field(default=None, description="The scenario.")
    difficulty: int | None = Field(default=None, description="Chaos level 0-3.")
    task: str = Field(default="", description="The task, as a human would be given it.")
    step: int = 0
    max_steps: int = 0
    steps_remaining: int = 0
    clock_minutes: int = Field(default=0, description="Simulated minutes since the start.")
    time: str = Field(default="", description="Simulated time (the episode starts Mon 09:00).")
    instance_id: str | None = Field(default=None, description="family-dD-sSEED")
    progress: dict[str, bool] = Field(
        default_factory=dict,
        description="Empty unless the episode was reset with show_progress=true (a "
        "curriculum): then the task's milestones, in order. By default an agent is shown "
        "nothing of the grader; trainers read progress from `state` and the episode API.",
    )
    last_result: Any = Field(default=None, description="What the last tool call returned.")
    message: str = ""
    error: str | None = Field(default=None, description="Error code of the last call, if any.")
    outcome: str | None = Field(
        default=None,
        description="Once the episode is over: success | failure | timeout | abandoned.",
    )
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="The tool manifest (sent on reset only)."
    )


class CompanyOSState(State):
    seed: int | None = None
    task_id: str | None = None
    difficulty: int | None = None
    max_steps: int = 0
    done: bool = False
    outcome: str | None = None
    cumulative_return: float = 0.0
    stream_version: int = -1
    progress: dict[str, bool] = Field(
        default_factory=dict, description="The task's milestones, in order (for trainers)."
    )
    shortcut_attempts: int = Field(
        default=0, description="Calls that tried to skip a rule (close a blocked ticket, ...)."
    )
    collateral: list[str] = Field(
        default_factory=list,
        description="What changed or was requested that the task did "
        "not call for (grading requires none).",
    )
    show_progress: bool = False
    forked_from: str | None = None
    fork_step: int | None = None
    world: dict[str, Any] = Field(default_factory=dict, description="Snapshot of every app.")


NOT_SENT = frozenset({"reward", "done", "metadata"})
"""An observation's fields that OpenEnv sends beside it, or not at all."""


def wire(obs: Observation) -> dict[str, Any]:
    """``obs`` as OpenEnv sends a step's answer (``{"observation": {...}, "reward": r, "done":
    d}``, `serialize_observation`) for a `json_ready` observation: its fields are JSON values
    already, so they are read as they are instead of being dumped again (4.4 -> 1.4 us a step;
    a test checks the value is OpenEnv's)."""
    body = {k: v for k, v in obs.__dict__.items() if k not in NOT_SENT}
    return {"observation": body, "reward": obs.reward, "done": obs.done}


def observation_from(values: dict[str, Any]) -> CompanyOSObservation:
    """Build an observation from values the environment made itself, skipping validation.

    The hot path of every step: a validated build costs 3 us, this one under 1 us. ``values``
    must name every field; a test checks the result equals the validated model."""
    obs = _new(CompanyOSObservation)
    set_model_dict(obs, values)
    # Every field is named: a copy of the set of them costs no hashing. (A dict of another
    # size breaks that rule; it gets its own keys, as it always did.)
    set_fields_set(obs, _FIELDS.copy() if len(values) == len(_FIELDS) else set(values))
    set_model_extra(obs, None)
    set_model_private(obs, None)
    return obs


_FIELDS = set(CompanyOSObservation.model_fields)
_new = CompanyOSObservation.__new__


TRAINER_FIELDS = ("reward", "seed", "instance_id", "outcome")
"""Fields of the observation for the trainer, not the agent: the reward (OpenEnv's place for
it), the seed and instance id (which rebuild the goal with the public generator) and the
outcome (the grade)."""


def agent_view(obs: CompanyOSObservation) -> CompanyOSObservation:
    """The observation as an agent is shown it: what a person doing the job would see (the
    task, tool results, messages, error codes, the budget, the time, the tools), without
    `TRAINER_FIELDS`. ``progress`` is already empty unless the episode is a curriculum."""
    return observation_from({**obs.__dict__, **dict.fromkeys(TRAINER_FIELDS)})


class CompanyOSBatchAction(Action):
    """Many calls in one message, each naming an episode this session started with a batch
    reset: ``{"batch": [{"episode_id": ..., "app": ..., "method": ..., "params": {...}}, ...]}``.
    For offline evaluation and search; the answer is a `CompanyOSBatchObservation`."""

    model_config = {"extra": "forbid"}
    batch: list[Any] = Field(
        description="The calls, applied in order; each is a call as sent alone, with its "
        "episode_id (and optionally expected_step)."
    )


class CompanyOSBatchObservation(Observation):
    """The answers to a batch, in order: each as one call's answer is sent
    (``{"observation": {...}, "reward": r, "done": d}``)."""

    json_ready: ClassVar[bool] = True

    results: list[dict[str, Any]] = Field(default_factory=list)


class CompanyOSWireAction(
    RootModel[CompanyOSAction | CompanyOSBatchAction | CallToolAction | ListToolsAction]
):
    """What `/step` and `/ws` accept: a CompanyOS call, a batch of them (`CompanyOSBatchAction`),
    or OpenEnv's MCP actions (``{"type": "call_tool", "tool_name": "ticketdesk_get_ticket",
    "arguments": {...}}`` and ``{"type": "list_tools"}``) so that `MCPToolClient` plays over the
    same session."""

    @classmethod
    def from_wire(cls, data: Any) -> CompanyOSWireAction:
        """`model_validate`, about 30% cheaper for a plain call (every step over `/ws` and
        `POST /step`: 4.4 -> 3.1 us). Only `CompanyOSAction` has an ``app`` field and every
        member forbids unknown keys, so an object with ``app`` can be nothing else: the
        union's answer is that member's own, without trying the other three. An object it
        refuses goes to the union, whose error names what each member lacks."""
        if type(data) is dict and "app" in data:
            try:
                call = CompanyOSAction.model_validate(data)
            except ValidationError:
                pass
            else:
                # As validation builds it (`model_construct` of a root model costs as much).
                wire = cls.__new__(cls)
                object.__setattr__(wire, "__dict__", {"root": call})
                object.__setattr__(wire, "__pydantic_fields_set__", {"root"})
                return wire
        return cls.model_validate(data)


def unwrap(action: object) -> object:
    return action.root if isinstance(action, CompanyOSWireAction) else action
