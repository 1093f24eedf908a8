"""Crash safety of the served log: a real server process on a SQLite file is SIGKILLed several
times at random moments while many episodes are being played over `/ws` sessions and stateful
HTTP, and started again on the same file each time. After every restart interrupted episodes
are continued over plain HTTP (`POST /step` with their `episode_id`) and forked
(`POST /episodes/{id}/fork`); at the end the whole store is audited (`tests/audit.py`): no torn
step, every hash chain intact, every episode replays and verifies, every acknowledged step
there with the reward its client saw."""

from __future__ import annotations

import asyncio
import random

import httpx
import pytest

from companyos.events.sql import SQLEventStore, sqlite_url

from . import ledger
from .audit import Ack, audit_store
from .load import Load, drive
from .serving import ServerProcess

pytestmark = pytest.mark.reliability

KILLS = ledger.scaled(3, 6)
WS_SESSIONS = ledger.scaled(8, 16)
HTTP_EPISODES = ledger.scaled(8, 16)


async def _load_then_kill(server: ServerProcess, delay: float, seed: int) -> Load:
    stop = asyncio.Event()
    load = asyncio.create_task(
        drive(
            server.url,
            ws_sessions=WS_SESSIONS,
            http_episodes=HTTP_EPISODES,
            steps=120,
            seed=seed,
            stop=stop,
        )
    )
    await asyncio.sleep(delay)
    await asyncio.to_thread(server.kill)  # mid-load: requests are in flight
    stop.set()
    return await load


def _continue_interrupted(http: httpx.Client, load: Load, rng: random.Random) -> list[Ack]:
    """Continue some episodes the crash interrupted over stateful HTTP, and fork others."""
    acks: list[Ack] = []
    open_ids = sorted(load.episodes - load.done)
    rng.shuffle(open_ids)
    continued = forked = 0
    for eid in open_ids:
        summary = http.get(f"/episodes/{eid}")
        assert summary.status_code == 200, summary.text
        if summary.json()["outcome"] is not None:
            continue  # its session moved on to a new episode and abandoned this one
        stored = summary.json()["steps"]
        if continued <= forked:
            r = http.post(
                "/step",
                json={"action": {"app": "ticketdesk", "method": "list_tickets", "episode_id": eid}},
            )
            assert r.status_code == 200, r.text
            obs = r.json()["observation"]
            # A list call can only be refused by a service that is down or rate-limited (chaos
            # of the instance, recorded like any step).
            assert obs["error"] in (None, "rate_limited", "service_down"), obs
            assert obs["step"] == stored + 1, obs
            acks.append(Ack(eid, obs["step"], r.json()["reward"], r.json()["done"]))
            continued += 1
        else:
            at = stored // 2
            r = http.post(f"/episodes/{eid}/fork", json={"at_step": at})
            assert r.status_code == 200, r.text
            fid = r.json()["episode_id"]
            assert r.json()["observation"]["step"] == at
            r = http.post(
                "/step",
                json={"action": {"app": "datahub", "method": "list_metrics", "episode_id": fid}},
            )
            assert r.status_code == 200 and r.json()["observation"]["step"] == at + 1, r.text
            acks.append(Ack(fid, at + 1, r.json()["reward"], r.json()["done"]))
            forked += 1
        if continued + forked >= 6:
            break
    assert continued and forked, "the crash interrupted no episode: nothing was tested"
    return acks


def test_sigkill_under_load_loses_nothing_acknowledged(tmp_path):
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    db = tmp_path / "crash.db"
    log = tmp_path / "server.log"
    server = ServerProcess(sqlite_url(db), log=log)
    total = Load()
    try:
        for round_ in range(KILLS):
            server.start()
            with httpx.Client(base_url=server.url, timeout=60) as http:
                if total.episodes:
                    total.acks += _continue_interrupted(http, total, rng)
            delay = rng.uniform(0.5, 2.5)
            total.merge(asyncio.run(_load_then_kill(server, delay, seed=1000 * round_ + 1)))
        server.start()
        with httpx.Client(base_url=server.url, timeout=60) as http:
            total.acks += _continue_interrupted(http, total, rng)
    finally:
        server.stop()
    assert server.kills == KILLS
    assert total.unexpected == [], (seed, total.unexpected[:5])
    store = SQLEventStore(sqlite_url(db))
    try:
        audit = audit_store(store, total.acks)
    finally:
        store.close()
    assert audit.clean, (seed, audit.problems())
    assert audit.acknowledged == len(total.acks) > 0
    assert total.http_5xx == 0
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    ledger.record(
        "crash: SIGKILL under load (SQLite)",
        faults=server.kills,
        episodes=audit.episodes,
        events=audit.events,
        lost=len(audit.lost),
        torn=len(audit.torn),
        chain_failures=len(audit.broken_chains),
        http_5xx=total.http_5xx,
        note=f"{audit.acknowledged:,} acknowledged steps all found; seed {seed}",
    )
