"""The server's analytics: the warehouse is caught up by a background thread, a request never
runs (or waits out) a catch-up, and every answer says how fresh it is."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from companyos.agents import RandomAgent, in_process_naive, play
from companyos.analytics import warehouse as warehouse_module
from companyos.analytics.service import LiveAnalytics
from companyos.api import CompanyOSEnvironment
from companyos.domain import FAMILY_NAMES
from companyos.events import InMemoryEventStore


@pytest.fixture
def store() -> InMemoryEventStore:
    s = InMemoryEventStore()
    env = CompanyOSEnvironment(s)
    for seed in range(8):
        agent = in_process_naive(env) if seed % 2 else RandomAgent(seed)
        play(env, agent, seed=seed, task_id=FAMILY_NAMES[seed % 6], difficulty=seed % 4)
    return s


def test_a_request_answers_while_the_catch_up_is_stuck_in_a_page(store, monkeypatch):
    gate, stuck = threading.Event(), threading.Event()
    calls = {"n": 0}
    original = warehouse_module.Deriver.many

    def slow_many(self: Any, streams: Any, pool: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:  # the second page: hold the catch-up there
            stuck.set()
            assert gate.wait(60), "the test never released the catch-up"
        return original(self, streams, pool)

    monkeypatch.setattr(warehouse_module.Deriver, "many", slow_many)
    head = len(store._log)
    live = LiveAnalytics(store, page_size=150)
    try:
        live.canned("success_return", wait_s=0)  # starts the catch-up
        assert stuck.wait(60)
        # The catch-up is inside its second page now: a query still answers, from the first.
        result, fresh = live.canned("success_return", wait_s=0)
        assert fresh.catching_up and 0 < fresh.as_of_event < head
        assert fresh.lag_events == head - fresh.as_of_event
        data = live.report_data(wait_s=0)
        assert data["freshness"]["as_of_event"] == data["checkpoint"] < head
        assert data["freshness"]["lag_events"] == head - data["checkpoint"]
        gate.set()
        result, fresh = live.canned("success_return", wait_s=60)
        assert (fresh.as_of_event, fresh.lag_events, fresh.catching_up) == (head, 0, False)
        episodes = sum(r[result.columns.index("episodes")] for r in result.rows)
        assert episodes > 0
        sql, fresh = live.query("SELECT count(*) FROM episodes", wait_s=60)
        assert sql.rows == [[8]] and fresh.lag_events == 0
    finally:
        gate.set()
        live.close()
    assert live.error is None


def test_new_events_are_loaded_without_a_request_waiting_for_them(store):
    live = LiveAnalytics(store, poll_s=0.05)
    try:
        _, fresh = live.canned("pass_k", wait_s=60)
        assert fresh.lag_events == 0
        env = CompanyOSEnvironment(store)
        play(env, RandomAgent(99), seed=77, task_id=FAMILY_NAMES[0], difficulty=1)
        # The thread polls on its own: wait for it without ever asking a request to.
        done = threading.Event()
        for _ in range(600):
            if live.freshness().lag_events == 0:
                done.set()
                break
            done.wait(0.05)
        assert done.is_set()
        answer, fresh = live.query("SELECT count(*) FROM episodes", wait_s=0)
        assert answer.rows == [[9]] and fresh.lag_events == 0
    finally:
        live.close()
