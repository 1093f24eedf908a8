"""Small helpers shared by tests."""

from __future__ import annotations

from typing import Any

from companyos.api import CompanyOSEnvironment, CompanyOSObservation


def call(env: CompanyOSEnvironment, app: str, method: str, **params: Any) -> CompanyOSObservation:
    return env.step({"app": app, "method": method, "params": params})


def td(env: CompanyOSEnvironment, method: str, **params: Any) -> CompanyOSObservation:
    return call(env, "ticketdesk", method, **params)


def dh(env: CompanyOSEnvironment, method: str, **params: Any) -> CompanyOSObservation:
    return call(env, "datahub", method, **params)


def af(env: CompanyOSEnvironment, method: str, **params: Any) -> CompanyOSObservation:
    return call(env, "approvalflow", method, **params)


def update(env: CompanyOSEnvironment, ticket: str, field: str, value: Any) -> CompanyOSObservation:
    return td(env, "update_ticket", ticket_id=ticket, field=field, value=value)


def poll_until_decided(
    env: CompanyOSEnvironment, approval_id: str, limit: int = 6
) -> CompanyOSObservation:
    obs = af(env, "check_status", approval_id=approval_id)
    for _ in range(limit):
        if obs.error == "service_unavailable" or obs.last_result.get("status") == "pending":
            obs = af(env, "check_status", approval_id=approval_id)
        else:
            break
    return obs
