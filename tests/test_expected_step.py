"""`expected_step` between processes: a caller that states the step it saw must never be refused
because the process it reached holds a stale copy of the episode (another process or replica
stepped it since). The check reloads from the store before it answers "conflict"; a caller whose
expected step really is behind still gets the conflict, and nothing is written for it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from companyos.api import CompanyOSEnvironment
from companyos.api.cache import EpisodeCache
from companyos.domain import plan
from companyos.events.sql import SQLEventStore, sqlite_url

from .serving import ServerProcess


def _process(url: str) -> tuple[SQLEventStore, EpisodeCache]:
    """What one server process holds: its own connection to the shared store, its own cache."""
    store = SQLEventStore(url)
    return store, EpisodeCache(store)


def _call(env: CompanyOSEnvironment) -> dict[str, Any]:
    ep = env.episode
    assert ep is not None
    call = plan(ep.world)
    assert call is not None
    return call.as_action()


def test_a_stale_cached_copy_does_not_refuse_a_correct_expected_step(tmp_path):
    url = sqlite_url(tmp_path / "shared.db")
    (a_store, a_cache), (b_store, b_cache) = _process(url), _process(url)
    try:
        first = CompanyOSEnvironment(a_store, cache=a_cache)
        eid = first.reset(seed=11, task_id=0, difficulty=0).episode_id
        assert eid is not None
        done, step = False, 0
        while not done:
            # Alternate processes; each request is a fresh environment on its process's cache,
            # as stateless HTTP builds one, so every other step meets a stale cached copy.
            store, cache = (a_store, a_cache) if step % 2 else (b_store, b_cache)
            env = CompanyOSEnvironment(store, cache=cache)
            if step == 3:  # a step that really is behind is still refused, and writes nothing
                version = store.version(eid)
                obs = env.step(
                    {"app": "ticketdesk", "method": "list_tickets", "episode_id": eid,
                     "expected_step": 1}
                )  # fmt: skip
                assert obs.error == "conflict" and "step 3, not 1" in obs.message
                assert store.version(eid) == version
            oracle = CompanyOSEnvironment(store)
            oracle._resolve(eid)
            obs = env.step({**_call(oracle), "episode_id": eid, "expected_step": step})
            assert obs.error != "conflict", obs.message
            step += 1
            assert obs.step == step
            done = obs.done
        assert step > 3 and obs.outcome == "success"
    finally:
        a_store.close()
        b_store.close()


@pytest.mark.parametrize("workers", [2])
def test_two_server_processes_on_one_sqlite_file_never_refuse_a_correct_expected_step(
    tmp_path, workers
):
    url = sqlite_url(tmp_path / "shared.db")
    servers = [ServerProcess(url, log=tmp_path / f"s{i}.log") for i in range(workers)]
    for s in servers:
        s.start()
    refused = steps = 0
    try:
        clients = [httpx.Client(base_url=s.url, timeout=60) for s in servers]
        for n in range(2):
            r = clients[0].post("/reset", json={"seed": 40 + n, "task_id": n, "difficulty": 1})
            eid = r.json()["observation"]["episode_id"]
            local = CompanyOSEnvironment()
            local.reset(seed=40 + n, task_id=n, difficulty=1)
            done, step = False, 0
            while not done:
                call = _call(local)
                http = clients[step % len(clients)]
                r = http.post(
                    "/step",
                    json={"action": {**call, "episode_id": eid, "expected_step": step}},
                )
                assert r.status_code == 200, r.text
                obs = r.json()["observation"]
                refused += obs["error"] == "conflict"
                assert obs["error"] != "conflict", obs["message"]
                local.step(call)
                step += 1
                steps += 1
                done = r.json()["done"]
        for c in clients:
            c.close()
    finally:
        for s in servers:
            s.stop()
    assert refused == 0 and steps > 10
