"""An in-process cache of live episodes; the store stays the truth.

Stateful HTTP builds a fresh environment per request; without a cache every step would fold the
episode's whole stream again. The cache keeps the folded `Episode`. Readers ask for the current
one (`get`: the store's version is checked and a stale entry reloaded). Writers may take the
cached one as it is (`get(check=False)`): their append carries the version the step was decided
on, so a stale entry cannot write anything; the append fails with a conflict, and the writer
reloads (`reload`: the cached copy folds the few events it missed) and decides again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from companyos.domain import DEFAULT_LIMITS, Limits
from companyos.events import EventStore

from .episode import Episode


class EpisodeCache:
    def __init__(
        self, store: EventStore, limits: Limits = DEFAULT_LIMITS, capacity: int = 4096
    ) -> None:
        self.store = store
        self.limits = limits
        self.capacity = capacity
        self._items: OrderedDict[str, Episode] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.reloads = 0

    def get(self, episode_id: str, check: bool = True) -> Episode:
        """The cached episode; with ``check``, first make sure it is at the store's version."""
        with self._lock:
            cached = self._items.get(episode_id)
            if cached is not None:
                self._items.move_to_end(episode_id)
        if cached is not None:
            if not check:
                self.hits += 1
                return cached
            current = self.store.version(episode_id)
            if current == cached.version:
                self.hits += 1
                return cached
        return self.reload(episode_id)

    def reload(self, episode_id: str) -> Episode:
        """The episode as the store has it now (raises `EpisodeNotFound`): the cached copy
        caught up with the events appended after it (another process stepped it), else
        loaded afresh."""
        self.reloads += 1
        with self._lock:
            stale = self._items.get(episode_id)
        episode = stale.caught_up() if stale is not None else None
        if episode is None:
            episode = Episode.load(self.store, episode_id, self.limits)
        self.put(episode)
        return episode

    def put(self, episode: Episode) -> None:
        with self._lock:
            self._items[episode.id] = episode
            self._items.move_to_end(episode.id)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def discard(self, episode_id: str) -> None:
        """Drop the cached copy (the next `get` loads the episode from the store)."""
        with self._lock:
            self._items.pop(episode_id, None)

    def __len__(self) -> int:
        return len(self._items)
