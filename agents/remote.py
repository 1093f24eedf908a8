"""Agents against a running server. The oracle needs the true world, which no observation
shows: it folds the episode's own event log, fetched from `GET /episodes/{id}/events`. That
the log alone is enough to rebuild the world is the point of event sourcing."""

from __future__ import annotations

from typing import Any

import httpx

from companyos.api.client import CompanyOSClient
from companyos.api.models import CompanyOSObservation
from companyos.domain import World, fold
from companyos.events import parse_event
from companyos.events.types import Event

from .oracle import OracleAgent


class EventFeed:
    """Reads an episode's events incrementally (only what is new since the last read)."""

    def __init__(self, base_url: str, client: httpx.Client | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.client = client or httpx.Client(timeout=30)
        self._events: dict[str, list[Event]] = {}

    def events(self, episode_id: str) -> list[Event]:
        if episode_id not in self._events:
            self._events.clear()  # a new episode: the last one's events are no longer needed
        have = self._events.setdefault(episode_id, [])
        while True:
            page = self.client.get(
                f"{self.base_url}/episodes/{episode_id}/events",
                params={"from_seq": len(have), "limit": 2000},
            )
            page.raise_for_status()
            body: dict[str, Any] = page.json()
            have += [parse_event(e["type"], e["schema_version"], e["data"]) for e in body["events"]]
            if body["next_seq"] is None:
                return have

    def world(self, episode_id: str) -> World:
        return fold(self.events(episode_id))


def remote_oracle(base_url: str, client: httpx.Client | None = None) -> OracleAgent:
    feed = EventFeed(base_url, client)
    return OracleAgent(feed.world)


class RemoteEnv:
    """A `/ws` session with a server, shaped like the in-process environment for `play`:
    ``reset`` and ``step`` return the observation."""

    def __init__(self, base_url: str, message_timeout_s: float = 120.0) -> None:
        self.client = CompanyOSClient(base_url, message_timeout_s=message_timeout_s).sync()
        self.client.connect()

    def reset(self, **options: Any) -> CompanyOSObservation:
        return self.client.reset(**options).observation

    def step(self, action: Any) -> CompanyOSObservation:
        result = self.client.step(action)
        obs = result.observation
        if obs.reward is None and result.reward is not None:
            # OpenEnv carries the reward beside the observation on the wire.
            obs.reward = result.reward
        return obs

    def close(self) -> None:
        self.client.close()
