"""What the agent sees of a step comes from `domain.rendering` (re-exported here); this module
adds the full snapshot of the apps for `/render` and `state`, and the tool manifest."""

from __future__ import annotations

from typing import Any

from companyos.domain.approvalflow import approval_type_view, approval_view
from companyos.domain.catalogue import TOOLS
from companyos.domain.datahub import metric_view
from companyos.domain.model import World, clock_label
from companyos.domain.rendering import APP_TITLES, Rendered, render_result
from companyos.domain.ticketdesk import ticket_view

__all__ = ["APP_TITLES", "Rendered", "render_result", "render_world", "tool_manifest"]


def render_world(world: World) -> dict[str, Any]:
    """Every app's state as its own views show it (the original's `/render`), plus the episode."""
    info = world.info
    return {
        "episode": None
        if info is None
        else {
            "seed": info.seed,
            "scenario": info.scenario,
            "difficulty": info.difficulty,
            "max_steps": info.max_steps,
            "step": world.step,
            "clock_minutes": world.clock,
            "time": clock_label(world.clock),
            "outcome": world.outcome,
            "forked_from": None
            if info.forked_from is None
            else {"episode_id": info.forked_from[0], "at_step": info.forked_from[1]},
        },
        "ticketdesk": {"tickets": [ticket_view(t) for t in world.tickets.values()]},
        "datahub": {
            "metrics": [metric_view(m, world.clock) for m in world.metrics.values()],
            "directory": [
                {
                    "name": p.name,
                    "email": p.email,
                    "title": p.title,
                    "role": p.role,
                    "out_of_office": p.out_of_office,
                }
                for p in world.people.values()
            ],
        },
        "approvalflow": {
            "approval_types": {n: approval_type_view(t) for n, t in world.approval_types.items()},
            "approvals": [approval_view(world, a) for a in world.approvals.values()],
        },
        "chaos": sorted(world.chaos.kinds),
        "services": {
            "outages": {
                a: [clock_label(f), clock_label(u)] for a, (f, u) in world.services.outages.items()
            },
            "rate_limits": {
                a: {"calls": c, "window_minutes": w} for a, (c, w) in world.services.limits.items()
            },
            "approval_sla_minutes": world.services.sla,
            "access": sorted(world.grants),
        },
    }


def tool_manifest() -> list[dict[str, Any]]:
    return [t.manifest() for t in TOOLS.values()]
