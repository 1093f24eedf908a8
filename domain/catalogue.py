"""The one catalogue of tools: names, parameter models and documentation. The manifest, the
MCP tool schemas, LLM function schemas and validation are all read from here."""

from __future__ import annotations

from typing import Any

from . import approvalflow, datahub, ticketdesk
from .tooling import ToolSpec

APPS: tuple[str, ...] = (ticketdesk.APP, datahub.APP, approvalflow.APP)
TOOLS: dict[tuple[str, str], ToolSpec] = {
    (t.app, t.method): t
    for t in (*ticketdesk.registry.tools, *datahub.registry.tools, *approvalflow.registry.tools)
}
BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS.values()}


def methods(app: str) -> list[str]:
    return [m for (a, m) in TOOLS if a == app]


def lookup(app: str, method: str) -> ToolSpec | None:
    return TOOLS.get((app, method))


def manifest() -> list[dict[str, Any]]:
    return [t.manifest() for t in TOOLS.values()]
