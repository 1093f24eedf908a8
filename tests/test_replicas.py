"""The multi-replica deployment: two `companyos serve` processes on one PostgreSQL database
behind one address (a round-robin TCP proxy, `tests/proxy.py`, standing in for any load
balancer). Stateful HTTP needs no sticky sessions: every step names its episode, whichever
replica gets it loads the episode from the store (its cache is checked against the stream's
version), so steps alternating between the replicas give the same log, byte for byte, as the
same seed and calls played alone in-process."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from companyos.agents.remote import EventFeed
from companyos.domain import plan
from companyos.events.sql import SQLEventStore

from . import ledger
from .audit import audit_store
from .conftest import POSTGRES_URL, drop_postgres_schema, postgres_schema_url
from .helpers import served_chain, solo_chain
from .load import drive
from .proxy import RoundRobinProxy
from .serving import ServerProcess

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.postgres,
    pytest.mark.skipif(not POSTGRES_URL, reason="set COMPANYOS_TEST_POSTGRES_URL to run"),
]

REPLICAS = 2


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: Any) -> Iterator[tuple[RoundRobinProxy, list[ServerProcess], str]]:
    assert POSTGRES_URL
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    admin.dispose()
    url = postgres_schema_url(POSTGRES_URL, schema)
    logs = tmp_path_factory.mktemp("replicas")
    servers = [ServerProcess(url, log=logs / f"replica-{i}.log") for i in range(REPLICAS)]
    # Started together on the empty schema: both create the tables, neither may fail.
    starting = [threading.Thread(target=s.start) for s in servers]
    for t in starting:
        t.start()
    for t in starting:
        t.join()
    try:
        with RoundRobinProxy([s.url for s in servers]) as proxy:
            yield proxy, servers, url
    finally:
        for s in servers:
            s.stop()
        for i in range(REPLICAS):
            text_ = (logs / f"replica-{i}.log").read_text()
            assert "Traceback" not in text_, text_[-3000:]
        drop_postgres_schema(POSTGRES_URL, schema)


def test_steps_alternating_between_replicas_give_the_solo_log(deployment):
    proxy, servers, _ = deployment
    episodes = ledger.scaled(5, 20)
    # A connection per request: the proxy hands each request to the next replica in turn.
    per_request = httpx.Limits(max_keepalive_connections=0)
    feed = EventFeed(servers[0].url)  # the oracle reads the log straight from one replica
    with httpx.Client(base_url=proxy.url, timeout=60, limits=per_request) as http:
        for n in range(episodes):
            seed = 7000 + n
            before = list(proxy.connections)
            r = http.post("/reset", json={"seed": seed, "task_id": n % 5, "difficulty": n % 4})
            assert r.status_code == 200, r.text
            eid = r.json()["observation"]["episode_id"]
            actions: list[dict[str, Any]] = []
            done, step = False, 0
            while not done:
                call = plan(feed.world(eid))
                assert call is not None
                actions.append(call.as_action())
                r = http.post("/step", json={"action": {**call.as_action(), "episode_id": eid}})
                assert r.status_code == 200, r.text
                obs = r.json()["observation"]
                step += 1
                assert obs["error"] != "conflict" and obs["step"] == step, obs
                done = r.json()["done"]
            assert obs["outcome"] == "success"
            served = [c - b for c, b in zip(proxy.connections, before, strict=True)]
            assert min(served) >= step // 2  # both replicas played this episode
            assert served_chain(http, eid) == solo_chain(seed, n % 5, n % 4, actions)
            assert http.post(f"/episodes/{eid}/verify").json()["ok"]
    ledger.record(
        "replicas: 2 servers, one PostgreSQL, alternating steps",
        episodes=episodes,
        note=f"{episodes} oracle episodes, steps alternating: logs equal the solo runs",
    )


def test_concurrent_sessions_across_replicas_lose_nothing(deployment):
    proxy, _, url = deployment
    load = asyncio.run(
        drive(
            proxy.url,
            ws_sessions=ledger.scaled(6, 16),
            http_episodes=ledger.scaled(6, 16),
            steps=30,
            seed=90_000,
        )
    )
    assert load.unexpected == [] and load.http_5xx == 0
    store = SQLEventStore(url, create_tables=False)
    try:
        audit = audit_store(store, load.acks)
    finally:
        store.close()
    assert audit.clean, audit.problems()
    assert all(c > 0 for c in proxy.connections)
    ledger.record(
        "replicas: concurrent sessions across 2 servers (PostgreSQL)",
        episodes=len(load.episodes),
        events=audit.events,
        lost=len(audit.lost),
        torn=len(audit.torn),
        chain_failures=len(audit.broken_chains),
        http_5xx=load.http_5xx,
        note=f"whole store audited after: {audit.episodes} episodes, {audit.acknowledged:,} acks",
    )
