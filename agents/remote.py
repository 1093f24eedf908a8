"""Agents against a running server. The oracle needs the true world, which no observation
shows: it folds the episode's own event log, fetched from `GET /episodes/{id}/events`. That
the log alone is enough to rebuild the world is the point of event sourcing."""

from __future__ import annotations

from typing import Any

import httpx

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
