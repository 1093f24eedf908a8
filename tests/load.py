"""Load drivers: many concurrent episodes against a server, over `/ws` sessions and stateful
HTTP (`POST /step` with the `episode_id`), played by seeded random agents that now and then
send a malformed call. A driver keeps going until its episodes end, it is told to stop, or the
server goes away under it (the crash tests SIGKILL the server mid-load): a dropped connection
ends a player quietly, anything else unexpected is recorded.

Every observation a player receives for a step that was applied is an `Ack`; the audit later
checks each one is in the log.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import httpx
import websockets

from companyos.agents import RandomAgent

from .audit import Ack

GONE = (
    websockets.ConnectionClosed,
    websockets.InvalidMessage,  # killed mid-handshake: the connection closed before its answer
    OSError,
    asyncio.TimeoutError,
    httpx.TransportError,
)
"""What a player sees when the server dies under it (a refused handshake, such as a full
server's 503, is not among them: it is an answer)."""
NOT_APPLIED = {"conflict", "episode_ended", "no_episode", "episode_not_found"}
JUNK = [
    {"app": "ticketdesk", "method": "close_ticket", "params": {"ticket_id": "TKT-1042"}},
    {"app": "datahub", "method": "query_metric", "params": {"metric_name": 7}},
    {"app": "approvalflow", "method": "submit_approval", "params": "everything"},
    {"app": "nope", "method": "nothing", "params": {"x": [1, {"y": None}]}},
]


@dataclass(slots=True)
class Load:
    acks: list[Ack] = field(default_factory=list)
    episodes: set[str] = field(default_factory=set)
    done: set[str] = field(default_factory=set)
    http_5xx: int = 0
    unexpected: list[str] = field(default_factory=list)
    requests: int = 0

    def observe(self, episode_id: str, body: dict[str, Any]) -> None:
        """Take a reply's ``{"observation", "reward", "done"}`` (OpenEnv lifts the last two
        out of the observation)."""
        self.requests += 1
        observation, reward = body["observation"], body.get("reward")
        if observation.get("error") in NOT_APPLIED:
            return
        done = bool(body.get("done"))
        self.acks.append(Ack(episode_id, int(observation["step"]), float(reward or 0.0), done))
        if done:
            self.done.add(episode_id)

    def merge(self, other: Load) -> None:
        self.acks += other.acks
        self.episodes |= other.episodes
        self.done |= other.done
        self.http_5xx += other.http_5xx
        self.unexpected += other.unexpected
        self.requests += other.requests


def _action(agent: RandomAgent, rng: random.Random, obs: dict[str, Any]) -> dict[str, Any]:
    if rng.random() < 0.1:
        return rng.choice(JUNK)
    # The agent learns ids from what it is shown: the task text and the last result.
    seen = SimpleNamespace(task=obs.get("task", ""), last_result=obs.get("last_result"))
    return agent.act(seen)  # type: ignore[arg-type]


def reset_options(seed: int) -> dict[str, Any]:
    """Every family and difficulty; half the episodes get a long budget, so that some are still
    running whenever a crash comes."""
    options: dict[str, Any] = {"seed": seed, "task_id": seed % 12, "difficulty": seed % 4}
    if seed % 2:
        options["max_steps"] = 200
    return options


async def ws_player(
    url: str,
    seed: int,
    load: Load,
    *,
    steps: int,
    episodes: int = 2,
    stop: asyncio.Event | None = None,
    headers: dict[str, str] | None = None,
) -> None:
    """One `/ws` session playing ``episodes`` episodes in a row (a reset abandons the last)."""
    agent, rng = RandomAgent(seed), random.Random(seed)
    ws_url = url.replace("http://", "ws://") + "/ws"
    try:
        async with websockets.connect(
            ws_url, max_size=None, open_timeout=10, additional_headers=headers
        ) as ws:

            async def ask(message: dict[str, Any]) -> dict[str, Any]:
                await ws.send(json.dumps(message))
                return json.loads(await asyncio.wait_for(ws.recv(), 60))

            for n in range(episodes):
                reply = await ask({"type": "reset", "data": reset_options(seed * 10 + n)})
                if reply["type"] != "observation":
                    load.unexpected.append(f"ws reset: {reply}")
                    return
                obs = reply["data"]["observation"]
                eid = obs["episode_id"]
                load.episodes.add(eid)
                for _ in range(steps):
                    if stop is not None and stop.is_set():
                        return
                    reply = await ask({"type": "step", "data": _action(agent, rng, obs)})
                    if reply["type"] != "observation":
                        load.unexpected.append(f"ws step: {reply}")
                        return
                    obs = reply["data"]["observation"]
                    load.observe(eid, reply["data"])
                    if reply["data"].get("done"):
                        break
    except GONE:
        return


async def http_player(
    client: httpx.AsyncClient,
    seed: int,
    load: Load,
    *,
    steps: int,
    stop: asyncio.Event | None = None,
) -> None:
    """One episode over plain HTTP: every step names the episode, the server keeps nothing."""
    agent, rng = RandomAgent(seed), random.Random(seed)
    try:
        r = await client.post("/reset", json=reset_options(seed))
        load.requests += 1
        if r.status_code >= 500:
            load.http_5xx += 1
        if r.status_code != 200:
            load.unexpected.append(f"http reset {r.status_code}: {r.text[:200]}")
            return
        obs = r.json()["observation"]
        eid = obs["episode_id"]
        load.episodes.add(eid)
        for _ in range(steps):
            if stop is not None and stop.is_set():
                return
            action = {**_action(agent, rng, obs), "episode_id": eid}
            r = await client.post("/step", json={"action": action})
            if r.status_code >= 500:
                load.http_5xx += 1
            if r.status_code != 200:
                load.unexpected.append(f"http step {r.status_code}: {r.text[:200]}")
                return
            body = r.json()
            obs = body["observation"]
            load.observe(eid, body)
            if body.get("done"):
                break
    except GONE:
        return


async def drive(
    url: str,
    *,
    ws_sessions: int,
    http_episodes: int,
    steps: int,
    seed: int,
    stop: asyncio.Event | None = None,
    headers: dict[str, str] | None = None,
) -> Load:
    """Run ``ws_sessions`` sessions and ``http_episodes`` HTTP episodes at once."""
    load = Load()
    limits = httpx.Limits(max_connections=max(1, http_episodes))
    async with httpx.AsyncClient(
        base_url=url, timeout=60, limits=limits, headers=headers
    ) as client:
        await asyncio.gather(
            *(
                ws_player(url, seed + i, load, steps=steps, stop=stop, headers=headers)
                for i in range(ws_sessions)
            ),
            *(
                http_player(client, seed + 10_000 + i, load, steps=steps, stop=stop)
                for i in range(http_episodes)
            ),
        )
    return load
