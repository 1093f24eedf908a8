"""One episode stream's warehouse rows (`derive`), and a worker process's share of a page.

The rows come from the projections: `replay` (each distinct set-up folded once, `setups`),
every mistake, the decisive one and the point of no return of a failure
(`projections.mistakes`), and `lifecycle`. This module imports no database driver: it is all
a worker process of the warehouse imports (`warehouse.DerivePool`), so a worker starts in a
fraction of a second and stays small.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, NamedTuple

from companyos.domain.instances import instance_id
from companyos.domain.world import FAULT_KINDS
from companyos.events.chain import canonical
from companyos.events.types import (
    ActionRejected,
    ChaosInjected,
    EpisodeStarted,
    Event,
    FaultInjected,
    InvalidAction,
)
from companyos.projections.mistakes import Analysis, analyse
from companyos.projections.replay import Replay, StepRecord, replay

from .lifecycle import approval_rows, chaos_rows
from .parsing import EventParser, RawEvent
from .setups import SetupCache


class Derived(NamedTuple):
    """The warehouse rows of one episode stream."""

    episode_id: str
    steps: list[tuple[Any, ...]]
    episode: tuple[Any, ...]
    failure: tuple[Any, ...] | None
    mistakes: list[tuple[Any, ...]]
    approvals: list[tuple[Any, ...]]
    chaos: list[tuple[Any, ...]]


EPISODE_TABLES = ("steps", "episodes", "failures", "mistakes", "approvals", "chaos")
"""The tables whose rows are derived per episode stream (episode_id first in each)."""


def _timestamp(seconds: float) -> datetime:
    # Naive UTC, as the events table's TIMESTAMP holds it.
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


def _step_row(episode_id: str, s: StepRecord) -> tuple[Any, ...]:
    outcome, error_code, fault = "ok", None, None
    chaos: list[str] = []
    for e in s.events:
        if isinstance(e, FaultInjected):
            outcome, fault = "fault", e.kind
            chaos.append(FAULT_KINDS.get(e.kind, e.kind))
        elif isinstance(e, InvalidAction):
            outcome, error_code = "invalid", e.code
        elif isinstance(e, ActionRejected):
            outcome, error_code = "rejected", e.code
        elif isinstance(e, ChaosInjected):
            chaos.append(e.kind)
    call = s.call
    params = None if call.params is None else canonical(call.params).decode()
    return (
        episode_id,
        s.step,
        call.app,
        call.method,
        f"{call.app}.{call.method}",
        params,
        outcome,
        error_code,
        fault,
        list(dict.fromkeys(chaos)),
        s.score.reward,
        s.score.total,
        list(s.score.gained),
        list(s.score.lost),
        s.world.clock,
    )


def _episode_row(rows: Sequence[RawEvent], started: Event, r: Replay) -> tuple[Any, ...]:
    info, task = r.setup.info, r.setup.task
    assert info is not None and task is not None  # replay() refuses streams without them
    assert isinstance(started, EpisodeStarted)
    caused = [e for s in r.steps for e in s.events]
    fork = info.forked_from
    return (
        rows[0].stream,
        info.scenario,
        task.family or info.scenario,  # TaskAssigned v1 did not name the family
        task.instance_id or instance_id(info.scenario, info.difficulty, info.seed),
        info.seed,
        info.difficulty,
        started.agent,
        r.outcome,
        r.outcome == "success",
        r.total,
        len(r.steps),
        info.max_steps,
        sum(isinstance(e, InvalidAction) for e in caused),
        sum(isinstance(e, ActionRejected) for e in caused),
        sum(isinstance(e, FaultInjected) for e in caused),
        sorted(r.world.chaos.kinds),
        fork[0] if fork else None,
        fork[1] if fork else None,
        _timestamp(rows[0].recorded_at),
        _timestamp(rows[-1].recorded_at),
        rows[-1].position,
    )


def _failure_row(eid: str, found: Analysis, r: Replay) -> tuple[Any, ...] | None:
    if r.outcome is None or r.outcome == "success":
        return None
    mistake = found.decisive
    if mistake is None:
        return None
    return (eid, mistake.label, mistake.step, mistake.detail, found.point_of_no_return, True)


def derive(
    rows: Sequence[RawEvent], events: Sequence[Event], setups: SetupCache | None = None
) -> Derived:
    """The rows of one whole episode stream (``rows`` as stored, ``events`` their models), from
    the projections: replay (each distinct set-up folded once, with ``setups``), every mistake,
    the decisive one and the point of no return of a failure (`projections.mistakes`), and
    `lifecycle`."""
    r = replay(events) if setups is None else setups.replay(events, [x.hash for x in rows])
    eid = rows[0].stream
    # A failure costs honest forks, once per distinct stream: those that find its decisive
    # mistake, then those that find its point of no return (sharing the forks both ask for),
    # here while the load goes on rather than in a pass of their own after it.
    found = analyse(events, r, with_point_of_no_return=True)
    return Derived(
        eid,
        [_step_row(eid, s) for s in r.steps],
        _episode_row(rows, events[0], r),
        _failure_row(eid, found, r),
        [
            (eid, m.step, m.label, m.evidence, m.made_good_at, m.decisive, m.harmless)
            for m in found.mistakes
        ],
        approval_rows(eid, events),
        chaos_rows(eid, events),
    )


def _relabel(d: Derived, rows: Sequence[RawEvent]) -> Derived:
    """``d``'s rows for another stream with the same content."""
    eid = rows[0].stream
    # An episode row is (id, 17 fields of content, started_at, updated_at, last_position).
    episode = (
        eid,
        *d.episode[1:18],
        _timestamp(rows[0].recorded_at),
        _timestamp(rows[-1].recorded_at),
        rows[-1].position,
    )
    return Derived(
        eid,
        [(eid, *step[1:]) for step in d.steps],
        episode,
        None if d.failure is None else (eid, *d.failure[1:]),
        [(eid, *m[1:]) for m in d.mistakes],
        [(eid, *a[1:]) for a in d.approvals],
        [(eid, *c[1:]) for c in d.chaos],
    )


@contextmanager
def _no_gc() -> Iterator[None]:
    """A page allocates hundreds of thousands of small objects that all live until it ends,
    and reference counting frees them then: the cyclic collector, triggered by the allocations,
    would walk them again and again for nothing (measured: parsing took three times as long)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


OPENINGS_CACHED = 4096
"""Opening events a deriver keeps parsed (`EventParser`), and below, set-ups it keeps folded
(`SetupCache`). The streams of a page come an instance at a time (the trials of an instance
follow one another in the log), so a few thousand suffice: on the benchmark's log of 150,000
events, 4,096 openings and 64 set-ups hit as often as the defaults (65,536 and 512), which at
5M events kept a hundred MB or more alive in each process."""
SETUPS_CACHED = 64


def caches() -> tuple[EventParser, SetupCache]:
    """A deriver's parser and set-up cache, bounded as above."""
    return EventParser(max_cached=OPENINGS_CACHED), SetupCache(max_size=SETUPS_CACHED)


_WORKER: tuple[EventParser, SetupCache] | None = None
"""A worker process's parser and set-up cache (kept from one chunk to the next)."""


def _derive_in_worker(streams: list[list[tuple[Any, ...]]]) -> tuple[float, list[Derived]]:
    """A worker process's share of a page: each stream derived (no memo: the parent dedups),
    and the CPU seconds it took (the parent measures what share of the machine it gets).
    Rows come as plain tuples: a named tuple pickles as a call of its class, ten times dearer."""
    global _WORKER
    started = time.process_time()
    if _WORKER is None:
        _WORKER = caches()
    parser, setups = _WORKER
    new = tuple.__new__
    with _no_gc():  # as in the parent: the chunk's objects all live until it is sent back
        out = []
        for plain in streams:
            rows = [new(RawEvent, r) for r in plain]
            out.append(derive(rows, parser.events(rows), setups))
        return time.process_time() - started, out


def _ready() -> bool:
    """A no-op run by each worker as it starts: its imports happen while the parent reads."""
    return True
