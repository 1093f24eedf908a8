"""The OpenAPI document says what the server really does, so that clients (and schemathesis)
can rely on it: every error status a route can answer is listed with its JSON shape, `/reset`
lists its options instead of OpenEnv's open-ended body, `/step` names the actions it takes,
and with an API key the security scheme is declared.

FastAPI builds the document from the routes; this only adds to it, once, when it is first
asked for (so routes added after `document` is called are covered too).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import TypeAdapter

from companyos.projections.reward import PROFILES

from .episode import EPISODE_ID, MAX_SEED
from .models import CompanyOSWireAction

ERROR = {"$ref": "#/components/schemas/ErrorDetail"}
ERROR_SCHEMA = {
    "type": "object",
    "title": "ErrorDetail",
    "properties": {"detail": {"description": "What went wrong and what to send instead."}},
    "required": ["detail"],
}
REASONS = {
    400: "The request is wrong (e.g. an unknown task, an option that does not apply); "
    "`detail` says what to send instead.",
    401: "No API key: send `Authorization: Bearer <key>` or `X-API-Key: <key>`.",
    403: "The API key was not accepted.",
    404: "No such episode (or no such step of it).",
    409: "An episode with that id already exists: pick another.",
    413: "The request body is over the server's limit.",
    422: "The request does not match this schema.",
    503: "The event store is unavailable; retry shortly.",
}
OPEN = {"/health"}
RESET_EXAMPLE = {"seed": 7, "task_id": "vendor_onboarding", "difficulty": 2}
STEP_EXAMPLE = {
    "action": {
        "app": "ticketdesk",
        "method": "get_ticket",
        "params": {"ticket_id": "TKT-1042"},
        "episode_id": "3f0c1b1e-5d5a-4a7e-9a77-0b1c2d3e4f50",
    }
}


def _nullable(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}], "description": description}


def reset_body(max_episode_steps: int) -> dict[str, Any]:
    return {
        "type": "object",
        "title": "ResetRequest",
        "description": "Start an episode (or fork a stored one). Every option may be omitted.",
        "additionalProperties": False,
        "properties": {
            "seed": _nullable(
                {"type": "integer", "minimum": 0, "maximum": MAX_SEED},
                "Seed of the episode; default: a fresh one, returned in the observation.",
            ),
            "episode_id": _nullable(
                {"type": "string", "pattern": EPISODE_ID.pattern},
                "Id of the new episode; default: a new UUID.",
            ),
            "task_id": _nullable(
                {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "Scenario name or index; default: drawn from the seed.",
            ),
            "difficulty": _nullable(
                {"type": "integer", "minimum": 0, "maximum": 3},
                "Chaos level 0-3 (2: the original); default: the server's.",
            ),
            "fork_from": _nullable(
                {"type": "string"}, "Fork this stored episode (needs at_step) instead."
            ),
            "at_step": _nullable(
                {"type": "integer", "minimum": 0}, "With fork_from: the step to fork after."
            ),
            "max_steps": _nullable(
                {"type": "integer", "minimum": 1, "maximum": max_episode_steps},
                "Step budget; default: the scenario's own.",
            ),
            "reward_profile": _nullable(
                {"type": "string", "enum": sorted(PROFILES)}, "Default: the server's."
            ),
            "agent": _nullable(
                {"type": "string", "minLength": 1, "maxLength": 64},
                "A label for who plays the episode.",
            ),
        },
    }


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its local ``$defs`` references replaced by their definitions (the
    action models are not shared components, and a named component invites confusion with
    the request's own properties)."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {k: walk(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def _statuses(path: str, method: str, operation: dict[str, Any], api_key: bool) -> list[int]:
    if path in OPEN:
        return []
    codes = [503]
    if api_key:
        codes += [401, 403]
    if method in ("post", "put", "patch"):
        codes += [400, 413, 422]  # an unparsable or oversize body, on any route that takes one
    names = {p.get("name") for p in operation.get("parameters", [])}
    if "{episode_id}" in path or "episode_id" in names:
        codes += [400, 404]
    if path == "/reset" or path.endswith("/fork"):
        codes += [404, 409]
    if names:
        codes.append(422)
    return sorted(set(codes))


EMPTY = {"type": "string", "maxLength": 0, "description": "empty: as if not given"}


def _empty_is_absent(operation: dict[str, Any]) -> None:
    """An optional query parameter may be sent empty (`?outcome=`): the server drops it
    (`params.EmptyMeansAbsent`), so the document says the empty string is accepted."""
    for p in operation.get("parameters", []):
        if p.get("in") == "query" and not p.get("required") and "schema" in p:
            p["schema"] = {"anyOf": [p["schema"], EMPTY]}


def _augment(schema: dict[str, Any], api_key: bool, max_episode_steps: int) -> None:
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas["ErrorDetail"] = ERROR_SCHEMA
    if "ResetRequest" in schemas:
        schemas["ResetRequest"] = reset_body(max_episode_steps)
        schemas["ResetRequest"]["examples"] = [RESET_EXAMPLE, {}]
    if "StepRequest" in schemas:
        action = _inlined(TypeAdapter(CompanyOSWireAction).json_schema())
        action["description"] = (
            "A tool call (`app`, `method`, `params`, and `episode_id` to continue a stored "
            "episode over plain HTTP), or OpenEnv's MCP actions."
        )
        schemas["StepRequest"]["properties"]["action"] = action
        schemas["StepRequest"]["examples"] = [STEP_EXAMPLE]
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            _empty_is_absent(operation)
            responses = operation.setdefault("responses", {})
            for code in _statuses(path, method, operation, api_key):
                responses.setdefault(
                    str(code),
                    {
                        "description": REASONS[code],
                        "content": {"application/json": {"schema": ERROR}},
                    },
                )
    if api_key:
        components["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer"},
            "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        }
        schema["security"] = [{"bearer": []}, {"apiKey": []}]
        for path in OPEN & set(schema.get("paths", {})):
            for operation in schema["paths"][path].values():
                operation["security"] = []


def document(app: FastAPI, *, api_key: bool, max_episode_steps: int) -> None:
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            _augment(schema, api_key, max_episode_steps)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
