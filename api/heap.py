"""The server process's garbage-collection policy.

A server keeps a great deal alive for a long time: its modules and schemas, the instances it
has generated and the episodes its cache holds (`EpisodeCache`, thousands of folded worlds).
Most of that is named tuples, which CPython's collector never stops tracking (only exact
tuples are untracked), so a full collection walks all of it, at about half a microsecond an
object, every time the tracked heap has grown by a quarter: 200-250 ms a pause with 1,500
episodes played (more as the cache fills), which every session waits through, and about a
tenth of the server's CPU under load (`bench/gc_policy.py`).

Two things change, nothing else: what exists once the app is built is frozen (kept out of
every collection: it lives as long as the process), and a full collection waits for a hundred
collections of the middle generation instead of ten. Young collections run as before, so
garbage with reference cycles is still found while it is young; what cycles reach the old
generation wait longer, bounded by the allocations between full collections (about 700,000
tracked objects net), not forever.
"""

from __future__ import annotations

import gc

THRESHOLDS = (700, 10, 100)
"""(young, middle, old): CPython's defaults but the last, which is 10 by default."""


def settle() -> None:
    """Apply the policy: call once the app is built, before serving."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
