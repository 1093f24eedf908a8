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


def solo_chain(seed: int, task: Any, difficulty: int, actions: list[dict[str, Any]]) -> list[str]:
    """The hash chain of the episode played alone, in-process, on a fresh in-memory store."""
    env = CompanyOSEnvironment()
    env.reset(seed=seed, task_id=task, difficulty=difficulty)
    for a in actions:
        env.step(a)
    assert env.episode is not None
    return [r.hash for r in env.store.read(env.episode.id)]


def served_chain(http: Any, episode_id: str) -> list[str]:
    """The hash chain of a stored episode, read page by page from a server."""
    out: list[str] = []
    seq: int | None = 0
    while seq is not None:
        body = http.get(f"/episodes/{episode_id}/events", params={"from_seq": seq}).json()
        out += [e["hash"] for e in body["events"]]
        seq = body["next_seq"]
    return out
