"""A SQLite group (group commit, or a block of appends such as a batch of steps) writes an
existing stream's rows at its commit, not at each append. Property: whatever the mix of
streams, new and existing, `extend` and `append`, refused appends and group boundaries, the
stored log is the one the in-memory store keeps for the same calls, in the same global order,
and every chain holds."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from companyos.events import ConcurrencyConflict, EventStore, InMemoryEventStore
from companyos.events.chain import first_broken_link
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.events.types import TicketViewed

STREAMS = ["s0", "s1", "s2", "s3"]

op = st.one_of(
    st.tuples(
        st.sampled_from(["extend", "append"]),
        st.sampled_from(STREAMS),
        st.integers(1, 3),  # events
        st.booleans(),  # stale: state an old version (refused)
    ),
    st.just(("boundary",)),
)


def _run(store: EventStore, ops: list[tuple], grouped: bool) -> list[str]:
    """Apply ``ops``; a "boundary" ends the current block (a commit) and opens the next."""
    outcomes: list[str] = []
    versions = dict.fromkeys(STREAMS, -1)
    blocks: list[list[tuple]] = [[]]
    for o in ops:
        if o[0] == "boundary":
            blocks.append([])
        else:
            blocks[-1].append(o)
    n = 0
    for block in blocks:
        if grouped:
            assert isinstance(store, SQLEventStore)
            cm = store.deferred_commit()
        else:
            cm = contextlib.nullcontext()
        with cm:
            for kind, stream, k, stale in block:
                events = [TicketViewed(ticket_id=f"T-{n + i}") for i in range(k)]
                n += k
                expected = versions[stream] - 1 if stale else versions[stream]
                try:
                    if kind == "extend":
                        head = store.extend(stream, events, expected)
                        versions[stream] = head.version
                    else:
                        records = store.append(stream, events, expected)
                        versions[stream] = records[-1].seq
                        outcomes.append(f"positions {len(records)}")
                    outcomes.append(f"{kind} {stream} ok")
                except ConcurrencyConflict:
                    outcomes.append(f"{kind} {stream} refused")
    return outcomes


def _log(store: EventStore) -> list[tuple]:
    return [(r.stream, r.seq, r.type, r.hash, r.event) for r in store.read_all(0, 10_000)]


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(op, min_size=1, max_size=40))
def test_a_group_stores_what_the_memory_store_keeps_in_the_same_order(ops):
    reference = InMemoryEventStore()
    expected_outcomes = _run(reference, ops, grouped=False)
    expected = _log(reference)
    with tempfile.TemporaryDirectory() as tmp:
        for group in (1, 5):  # blocks of a store that commits each append, and group commit
            store = SQLEventStore(sqlite_url(Path(tmp) / f"g{group}.db"), group_commit=group)
            try:
                assert _run(store, ops, grouped=True) == expected_outcomes
                log = store.read_all(0, 10_000)
                assert [(r.stream, r.seq, r.type, r.hash, r.event) for r in log] == expected
                positions = [r.position for r in log]
                assert positions == sorted(set(positions))
                for s in STREAMS:
                    assert first_broken_link(store.read(s)) is None
                    assert store.version(s) == reference.version(s)
            finally:
                store.close()
