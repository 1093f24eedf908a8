"""DataHub: an analytics warehouse whose metrics go stale, and the approver directory.

A stale metric serves an old cached value until it is refreshed; a refresh fetches the system
of record (which may differ, e.g. a compliance score 72 -> 85 that crosses an 80 threshold).
`get_approver(role)` returns whoever acts for the role now: the delegate while the role
holder is out of office.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from companyos.events.types import (
    ApproverLookedUp,
    ApproverRegistered,
    ChaosInjected,
    Event,
    MetricQueried,
    MetricRecorded,
    MetricRefreshed,
    MetricsListed,
)

from .model import ROLE_TITLES, Metric, Person, World, effective_approver, normalize_role
from .tooling import Ctx, Params, Registry, reject

APP = "datahub"
registry = Registry(APP)


class NoParams(Params):
    pass


class MetricParams(Params):
    metric_name: str = Field(
        min_length=1, max_length=100, description="A metric name from datahub.list_metrics()."
    )


class RoleParams(Params):
    role: str = Field(
        min_length=1,
        max_length=64,
        description="A role: " + ", ".join(ROLE_TITLES.values()) + ".",
    )


# ------------------------------------------------------------------ views


def metric_view(m: Metric) -> dict[str, Any]:
    warning = None
    if m.stale:
        warning = (
            f"Data is {m.stale_days} days old (max {m.max_age_days}); refresh it with "
            "datahub.refresh_data before relying on it."
        )
    return {
        "metric": m.name,
        "value": m.value,
        "unit": m.unit,
        "stale_days": m.stale_days,
        "source": m.source,
        "threshold_pass": m.threshold_pass(),
        "is_stale": m.stale,
        "warning": warning,
    }


def metric_summary(m: Metric) -> dict[str, Any]:
    return {"metric": m.name, "unit": m.unit, "description": m.description}


def approver_view(world: World, e: ApproverLookedUp) -> dict[str, Any]:
    title = ROLE_TITLES.get(e.role, e.role)
    holder = world.people.get(e.holder) if e.holder else None
    acting = world.people.get(e.approver) if e.approver else None
    view: dict[str, Any] = {
        "role": title,
        "approver": acting.name if acting else None,
        "email": acting.email if acting else None,
        "out_of_office": bool(holder and holder.out_of_office),
    }
    if e.delegated and holder is not None:
        view["on_behalf_of"] = holder.name
        view["note"] = (
            f"{holder.name} is out of office; {title} requests go to "
            f"{acting.name if acting else 'nobody'} until they return."
        )
    if acting is None:
        view["note"] = f"Nobody can act as {title} right now."
    return view


# ------------------------------------------------------------------ deciders


def _find_metric(world: World, name: str) -> Metric | None:
    m = world.metrics.get(name)
    if m is None:
        key = name.strip().lower().replace(" ", "_").replace("-", "_")
        m = world.metrics.get(key)
    return m


def _no_metric(world: World, name: str) -> list[Event]:
    return reject(
        "metric_not_found",
        f"No metric {name!r}. Available: {', '.join(world.metrics)} (see datahub.list_metrics()).",
    )


@registry.tool(
    "list_metrics", NoParams, "List the metrics DataHub holds (names and units).", faultable=False
)
def list_metrics(world: World, p: NoParams, ctx: Ctx) -> list[Event]:
    return [MetricsListed(count=len(world.metrics))]


@registry.tool(
    "query_metric",
    MetricParams,
    "Read a metric: value, unit, stale_days, source, threshold_pass, is_stale, warning. Stale "
    "values must be refreshed before they can be trusted.",
)
def query_metric(world: World, p: MetricParams, ctx: Ctx) -> list[Event]:
    m = _find_metric(world, p.metric_name)
    if m is None:
        return _no_metric(world, p.metric_name)
    return [MetricQueried(metric=m.name, value=m.value, stale_days=m.stale_days, stale=m.stale)]


@registry.tool(
    "refresh_data",
    MetricParams,
    "Re-fetch a metric from its source system; returns the fresh value (which may differ).",
)
def refresh_data(world: World, p: MetricParams, ctx: Ctx) -> list[Event]:
    m = _find_metric(world, p.metric_name)
    if m is None:
        return _no_metric(world, p.metric_name)
    return [MetricRefreshed(metric=m.name, old=m.value, new=m.true_value)]


@registry.tool(
    "get_approver",
    RoleParams,
    "Who approves for a role right now; while the role holder is out of office this is "
    "their delegate.",
)
def get_approver(world: World, p: RoleParams, ctx: Ctx) -> list[Event]:
    role = normalize_role(p.role)
    if role not in world.roles:
        titles = ", ".join(ROLE_TITLES.get(r, r) for r in world.roles)
        return reject("role_not_found", f"No role {p.role!r} in the directory. Roles: {titles}.")
    holder = world.roles[role]
    acting = effective_approver(world, role)
    return [ApproverLookedUp(role=role, holder=holder, approver=acting, delegated=acting != holder)]


# ------------------------------------------------------------------ evolve


def on_metric_recorded(world: World, e: MetricRecorded) -> World:
    m = Metric(
        e.name,
        e.description,
        e.unit,
        e.source,
        e.value,
        e.value,
        e.stale_days,
        e.max_age_days,
        e.threshold_op,
        e.threshold,
    )
    return world._replace(metrics={**world.metrics, e.name: m})


def on_metric_queried(world: World, e: MetricQueried) -> World:
    m = world.metrics[e.metric]
    if e.stale or m.fresh_read == m.version:
        return world
    return world._replace(metrics={**world.metrics, e.metric: m._replace(fresh_read=m.version)})


def on_metric_refreshed(world: World, e: MetricRefreshed) -> World:
    m = world.metrics[e.metric]
    v = m.version + 1
    m = m._replace(value=e.new, stale_days=0, version=v, fresh_read=v)
    return world._replace(metrics={**world.metrics, e.metric: m})


def on_approver_registered(world: World, e: ApproverRegistered) -> World:
    p = Person(e.person_id, e.name, e.email, e.title, e.role, e.delegate)
    roles = {**world.roles, e.role: e.person_id} if e.role else world.roles
    return world._replace(people={**world.people, e.person_id: p}, roles=roles)


def on_stale_metric(world: World, e: ChaosInjected) -> World:
    m = world.metrics[e.target]
    m = m._replace(value=float(e.params["served_value"]), stale_days=int(e.params["stale_days"]))
    return world._replace(metrics={**world.metrics, e.target: m})


def on_out_of_office(world: World, e: ChaosInjected) -> World:
    p = world.people[e.target]._replace(out_of_office=True, ooo_note=e.params.get("note"))
    return world._replace(people={**world.people, e.target: p})


EVOLVERS = {
    "MetricRecorded": on_metric_recorded,
    "MetricQueried": on_metric_queried,
    "MetricRefreshed": on_metric_refreshed,
    "ApproverRegistered": on_approver_registered,
}
CHAOS = {"stale_metric": on_stale_metric, "out_of_office": on_out_of_office}
