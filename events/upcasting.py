"""Upcasters: lift stored payloads of old schema versions to the current shape on read.

Stored rows are never rewritten (invariant 7). Each upcaster takes a payload of version n and
returns the payload of version n + 1; `upcast` chains them up to the class's current version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .types import EVENT_TYPES, Event

Payload = dict[str, Any]
Upcaster = Callable[[Payload], Payload]

UPCASTERS: dict[tuple[str, int], Upcaster] = {}


class UnknownEventType(ValueError):
    """A stored event names a type or version this code cannot read."""


def upcaster(event_type: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    def register(fn: Upcaster) -> Upcaster:
        UPCASTERS[(event_type, from_version)] = fn
        return fn

    return register


@upcaster("EpisodeStarted", 1)
def _episode_started_v1(p: Payload) -> Payload:
    # v1 was the original CompanyOS's reset record: a task id, a seed and a step budget. It had
    # no chaos dial (its fixed chaos is our difficulty 2) and scored with the original rewards.
    return {
        "seed": p["seed"],
        "scenario": p["task_id"],
        "difficulty": 2,
        "max_steps": p["max_steps"],
        "reward_profile": "original",
        "fault_budget": p["max_steps"],
        "forked_from": None,
        "generator": "companyos/1",
    }


@upcaster("EpisodeStarted", 2)
def _episode_started_v2(p: Payload) -> Payload:
    # v2 had no curriculum option: agents were shown progress then, but nothing replays
    # differently for it (observations are projections, not stored).
    return {**p, "show_progress": False}


@upcaster("TaskAssigned", 2)
def _task_assigned_v2(p: Payload) -> Payload:
    # v2 goals ended with their last approval; `finish` makes that explicit.
    return {**p, "goal": {**p["goal"], "finish": []}}


@upcaster("TaskAssigned", 1)
def _task_assigned_v1(p: Payload) -> Payload:
    # v1 goals had one ticket and one approval: the first shape of this project.
    g = p["goal"]
    ticket = {
        "ticket_id": g["ticket_id"],
        "fields": g.get("ticket_fields", {}),
        "unblock": g.get("unblock", False),
        "verify": g.get("verify", True),
    }
    goal = {
        "tickets": [ticket],
        "metrics": g.get("metrics", []),
        "approvals": [{"approval_type": g["approval_type"], "data": g.get("approval_data", {})}],
    }
    return {"text": p["text"], "goal": goal, "family": "", "instance_id": ""}


@upcaster("MetricRecorded", 1)
def _metric_recorded_v1(p: Payload) -> Payload:
    # v1 counted age in whole days; the clock now runs in minutes.
    out = {k: v for k, v in p.items() if k not in ("stale_days", "max_age_days")}
    out["age_minutes"] = int(p.get("stale_days", 0)) * 1440
    out["max_age_minutes"] = int(p.get("max_age_days", 1)) * 1440
    return out


def upcast(event_type: str, version: int, payload: Payload) -> Payload:
    cls = EVENT_TYPES.get(event_type)
    if cls is None:
        raise UnknownEventType(f"unknown event type {event_type!r}")
    current = cls.schema_version
    if version > current:
        raise UnknownEventType(
            f"{event_type} v{version} is newer than this code (v{current}); upgrade companyos"
        )
    while version < current:
        step = UPCASTERS.get((event_type, version))
        if step is None:
            raise UnknownEventType(f"no upcaster for {event_type} v{version}")
        payload = step(payload)
        version += 1
    return payload


def parse_event(event_type: str, version: int, payload: Payload) -> Event:
    """Build the current-version event model from a stored (type, version, payload)."""
    data = upcast(event_type, version, payload)
    cls = EVENT_TYPES[event_type]
    if "type" in data:  # a stored payload never holds its type: its own type stands instead
        # (model_validate calls the constructor below too: pydantic calls a model's own
        # __init__ when it has one)
        return cls.model_validate({**data, "type": event_type})
    # The constructor validates as model_validate does, except that a flat event whose values
    # are already of their fields' exact types (as JSON reads them) is built without running
    # the validator (`Event.__init__`): 40% of a load's parsing.
    return cls(**data)
