"""Small helpers shared by tests: calls by name, and facts about the instance an environment is
playing (worlds are drawn from a seed, so tests read ids and values from the world)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from companyos.api import CompanyOSEnvironment, CompanyOSObservation
from companyos.domain.model import World, effective_approver
from companyos.events.sql import SQLEventStore
from companyos.events.types import ChaosInjected


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


def retry(fn: Any, *args: Any, **kw: Any) -> CompanyOSObservation:
    """Call until no transient fault answers (faults are chaos, not the point of most tests)."""
    for _ in range(12):
        obs = fn(*args, **kw)
        if obs.error not in ("service_unavailable", "rate_limited", "service_down"):
            return obs
    raise AssertionError("faults never stopped")


def world(env: CompanyOSEnvironment) -> World:
    assert env.episode is not None
    return env.episode.world


def main_ticket(env: CompanyOSEnvironment) -> str:
    w = world(env)
    assert w.task is not None
    return w.task.goal.ticket_id


def task_metric(env: CompanyOSEnvironment, i: int = 0) -> str:
    w = world(env)
    assert w.task is not None
    return w.task.goal.metrics[i]


def holder(env: CompanyOSEnvironment, role: str) -> str:
    w = world(env)
    return w.people[w.roles[role]].name


def acting(env: CompanyOSEnvironment, role: str) -> str:
    w = world(env)
    pid = effective_approver(w, role)
    assert pid is not None
    return w.people[pid].name


def chaos(env: CompanyOSEnvironment) -> list[ChaosInjected]:
    assert env.episode is not None
    return [r.event for r in env.store.read(env.episode.id) if isinstance(r.event, ChaosInjected)]


def request_data(env: CompanyOSEnvironment, approval_type: str, **overrides: Any) -> dict:
    """The data a correct request of the task's type carries, as the world has it now."""
    w = world(env)
    assert w.task is not None
    goal = w.task.goal
    atype = w.approval_types[approval_type]
    ag = next((a for a in goal.approvals if a.approval_type == approval_type), None)
    data: dict[str, Any] = {}
    for f in atype.fields:
        if f.kind == "ticket":
            data[f.key] = goal.ticket_id
        elif f.kind == "metric" and f.metric:
            data[f.key] = w.metrics[f.metric].value
        else:
            data[f.key] = ag.data.get(f.key, "x") if ag else "x"
    data.update(overrides)
    return data


def poll_until_decided(
    env: CompanyOSEnvironment, approval_id: str, limit: int = 8
) -> CompanyOSObservation:
    obs = af(env, "check_status", approval_id=approval_id)
    for _ in range(limit):
        if world(env).ended or world(env).approvals[approval_id].status != "pending":
            break
        obs = af(env, "check_status", approval_id=approval_id)
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


class _FailingCommits:
    """A connection (or cursor) whose COMMIT rolls the transaction back and raises, as SQLite
    does on an I/O error; everything else is the real one's."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def cursor(self) -> _FailingCommits:
        return _FailingCommits(self._real.cursor())

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT":
            self._real.execute("ROLLBACK")
            raise sqlite3.OperationalError("disk I/O error")
        return self._real.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@contextmanager
def failing_commit(store: SQLEventStore) -> Iterator[None]:
    """The disk fails as ``store`` commits: the store's own commit runs (whatever it writes
    first, then COMMIT), and its COMMIT fails; put right on leaving."""
    real = store._writer
    store._writer = lambda: _FailingCommits(real())  # type: ignore[method-assign]
    try:
        yield
    finally:
        store._writer = real  # type: ignore[method-assign]


BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_probe(code: str) -> str:
    """The last line ``code`` prints, run in a fresh interpreter inside `bench/` with its
    modules importable: a benchmark patches what it measures while it runs, so a test of one
    gets a process of its own."""
    prelude = f"import sys; sys.path.insert(0, {str(BENCH)!r})\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        check=True,
        cwd=BENCH,
    )
    return done.stdout.splitlines()[-1]


def run_bench(
    script: str, *args: str, env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """``bench/<script>`` run as `make bench` runs it, from the repository's root."""
    return subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        cwd=BENCH.parent,
        env=env,
        timeout=timeout,
    )


needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None and not os.environ.get("COMPANYOS_REQUIRE_VALGRIND"),
    reason="Valgrind is not installed (apt-get install valgrind); CI installs it",
)
"""For the instruction counts' tests: they skip where Valgrind is missing, unless CI, having
installed it, requires it (then a missing Valgrind fails them)."""
