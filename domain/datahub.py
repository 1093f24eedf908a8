"""DataHub: an analytics warehouse whose metrics go stale, and the approver directory.

A metric serves a cached value taken at some minute of the clock; once older than its maximum
age it is stale until refreshed, and a refresh fetches the system of record (which may differ,
e.g. a compliance score 72 -> 85 that crosses an 80 threshold). Data also goes stale while the
episode runs. Some metrics belong to a restricted dataset: reading them needs access, granted by
an approved `data_access` request. `get_approver(role)` returns whoever acts for the role now:
the delegate (or the delegate's delegate) while the holder is away.
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

from .model import (
    DAY,
    ROLE_TITLES,
    Metric,
    Person,
    World,
    effective_approver,
    normalize_role,
)
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


def metric_view(m: Metric, now: int, value: float | None = None, age: int | None = None) -> dict:
    """What a query shows; ``value``/``age`` override for a read made at another time."""
    age = m.age(now) if age is None else age
    v = m.value if value is None else value
    stale = age > m.max_age
    warning = None
    if stale:
        warning = (
            f"Data is {age // 60} hours old (max {m.max_age // 60}); refresh it with "
            "datahub.refresh_data before relying on it."
        )
    return {
        "metric": m.name,
        "value": v,
        "unit": m.unit,
        "stale_days": age // DAY,
        "age_hours": round(age / 60, 1),
        "source": m.source,
        "threshold_pass": m.threshold_pass(v),
        "is_stale": stale,
        "warning": warning,
    }


def metric_summary(m: Metric) -> dict[str, Any]:
    view = {"metric": m.name, "unit": m.unit, "description": m.description}
    if m.dataset:
        view["dataset"] = m.dataset
    return view


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


def _denied(world: World, m: Metric) -> list[Event] | None:
    if m.dataset is None or m.dataset in world.grants:
        return None
    return reject(
        "permission_denied",
        f"{m.name} is in the restricted {m.dataset!r} dataset and you have no access. Request "
        "it: approvalflow.submit_approval(approval_type='data_access', approver=<whoever acts "
        f"for Security>, data={{'dataset': '{m.dataset}', 'reason': ...}}), then wait until it "
        "is approved.",
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
    denied = _denied(world, m)
    if denied:
        return denied
    now = world.clock
    return [
        MetricQueried(
            metric=m.name, value=m.value, stale_days=m.age(now) // DAY, stale=m.stale(now)
        )
    ]


@registry.tool(
    "refresh_data",
    MetricParams,
    "Re-fetch a metric from its source system; returns the fresh value (which may differ).",
)
def refresh_data(world: World, p: MetricParams, ctx: Ctx) -> list[Event]:
    m = _find_metric(world, p.metric_name)
    if m is None:
        return _no_metric(world, p.metric_name)
    denied = _denied(world, m)
    if denied:
        return denied
    return [MetricRefreshed(metric=m.name, old=m.value, new=m.true_value)]


@registry.tool(
    "get_approver",
    RoleParams,
    "Who approves for a role right now; while the role holder is out of office this is "
    "whoever covers for them.",
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
        -e.age_minutes,
        e.max_age_minutes,
        e.threshold_op,
        e.threshold,
        e.dataset,
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
    m = m._replace(value=e.new, as_of=world.clock, version=v, fresh_read=v)
    return world._replace(metrics={**world.metrics, e.metric: m})


def on_approver_registered(world: World, e: ApproverRegistered) -> World:
    p = Person(e.person_id, e.name, e.email, e.title, e.role, e.delegate)
    roles = {**world.roles, e.role: e.person_id} if e.role else world.roles
    return world._replace(people={**world.people, e.person_id: p}, roles=roles)


def on_stale_metric(world: World, e: ChaosInjected) -> World:
    """A cache serving an old value. ``age_minutes`` (or, in logs of the first schema,
    ``stale_days``) says how old it is at the start."""
    m = world.metrics[e.target]
    age = int(e.params.get("age_minutes", int(e.params.get("stale_days", 0)) * DAY))
    m = m._replace(value=float(e.params["served_value"]), as_of=-age)
    return world._replace(metrics={**world.metrics, e.target: m})


def on_stale_during_episode(world: World, e: ChaosInjected) -> World:
    """Fresh at the start, stale from ``stale_at`` on: the served value was taken just long
    enough ago."""
    m = world.metrics[e.target]
    m = m._replace(as_of=int(e.params["stale_at"]) - m.max_age - 1)
    return world._replace(metrics={**world.metrics, e.target: m})


def on_out_of_office(world: World, e: ChaosInjected) -> World:
    p = world.people[e.target]._replace(out_of_office=True, ooo_note=e.params.get("note"))
    return world._replace(people={**world.people, e.target: p})


def on_restricted(world: World, e: ChaosInjected) -> World:
    m = world.metrics[e.target]._replace(dataset=str(e.params["dataset"]))
    return world._replace(metrics={**world.metrics, e.target: m})


EVOLVERS = {
    "MetricRecorded": on_metric_recorded,
    "MetricQueried": on_metric_queried,
    "MetricRefreshed": on_metric_refreshed,
    "ApproverRegistered": on_approver_registered,
}
CHAOS = {
    "stale_metric": on_stale_metric,
    "stale_during_episode": on_stale_during_episode,
    "out_of_office": on_out_of_office,
    "delegate_chain": on_out_of_office,
    "permission_denied": on_restricted,
}
