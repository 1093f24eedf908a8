"""What a tool is: its app, method, parameter model, documentation and decider."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from companyos.events.types import ActionRejected, Event

from .chaos import ChaosProfile
from .model import World
from .rng import KeyedRNG


class Params(BaseModel):
    """Base of tool parameter models: unknown parameters are an error, not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class Ctx(NamedTuple):
    """What a decider may use besides the world: where it is in the log and the dice."""

    seq: int
    step: int
    rng: KeyedRNG
    chaos: ChaosProfile


Decide = Callable[[World, Any, Ctx], list[Event]]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    app: str
    method: str
    params: type[Params]
    description: str
    decide: Decide
    faultable: bool = True
    """Subject to transient faults; the original spared list calls, and so do we."""

    @property
    def name(self) -> str:
        """The flat name used for MCP tools and function calling: ``ticketdesk_get_ticket``."""
        return f"{self.app}_{self.method}"

    def signature(self) -> str:
        args = ", ".join(self.params.model_fields)
        return f"{self.app}.{self.method}({args})"

    def parameters_schema(self) -> dict[str, Any]:
        schema = self.params.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("properties", {})
        schema["additionalProperties"] = False
        return schema

    def manifest(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "method": self.method,
            "name": self.name,
            "signature": self.signature(),
            "description": self.description,
            "parameters": self.parameters_schema(),
        }


def reject(code: str, message: str) -> list[Event]:
    return [ActionRejected(code=code, message=message)]


class Registry:
    """Collects an app's tools as its deciders are defined."""

    def __init__(self, app: str) -> None:
        self.app = app
        self.tools: list[ToolSpec] = []

    def tool(
        self, method: str, params: type[Params], description: str, *, faultable: bool = True
    ) -> Callable[[Decide], Decide]:
        def register(fn: Decide) -> Decide:
            self.tools.append(ToolSpec(self.app, method, params, description, fn, faultable))
            return fn

        return register
