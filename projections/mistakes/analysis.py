"""Every mistake of an episode, and the decisive one of a failure.

`mistakes(events)` runs every rule (`registry.RULES`) over the folded episode and lists what
they found, each at its step with its evidence and the step it was made good at (or None). For a
failed episode one row is marked decisive: the earliest mistake after which the honest solver,
taking over right after it with the budget left (a simulated fork that sees only observations,
`projections.forks`), can no longer succeed, though it could right before it. A mistake that
was made good counts by the fork right after the step that made it good: if that one no
longer succeeds, it was made good too late and the decisive row is ``fixed_too_late``.
Harmless mistakes (a failed read later corrected) are never decisive. A decisive mistake that is
the symptom of an earlier one left unrepaired on the same ticket or request (a request on a
ticket whose refused change was never retried) is blamed on that earlier one. If every mistake
left the episode winnable, the earliest one never made good is decisive, else how the last
steps were idled away, else a fallback that names no mistake. If the honest solver cannot win
the instance even from the start, the only decisive row is ``unsolvable_instance``: a label of
the instance, never of the agent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from companyos.domain import DEFAULT_LIMITS, Limits
from companyos.events.store import RecordedEvent
from companyos.events.types import Event

from ..forks import FAILED, SimulatedForks
from ..replay import Replay, replay
from . import verdicts
from .context import Episode, Suspect
from .registry import RANK, RULES


@dataclass(frozen=True, slots=True)
class Mistake:
    """One row of the ``mistakes`` table."""

    episode_id: str
    step: int
    label: str
    """A key of `LABELS`."""
    evidence: str
    """What happened, in words, naming the objects involved."""
    made_good_at: int | None = None
    """The step at which something later made it good; None: never."""
    decisive: bool = False
    """The mistake that lost the episode (one per failed episode)."""
    harmless: bool = False
    """A failed read later corrected: listed, never decisive."""

    @property
    def detail(self) -> str:  # the name the one-label diagnosis used
        return self.evidence


@dataclass(frozen=True, slots=True)
class Analysis:
    mistakes: list[Mistake]
    """Every mistake, in step order (ties in taxonomy order); the decisive one marked."""
    decisive: Mistake | None
    """None for a success or an episode still running."""
    point_of_no_return: int | None = None
    """Set only when asked for (it costs a scan of forks)."""

    @property
    def label(self) -> str | None:
        return None if self.decisive is None else self.decisive.label


def _episode_id(records: Sequence[RecordedEvent | Event]) -> str:
    first = records[0] if records else None
    return first.stream if isinstance(first, RecordedEvent) else ""


def _rows(ep: Episode, episode_id: str) -> list[tuple[Suspect, Mistake]]:
    found = [s for rule in RULES for s in rule.find(ep)]
    found.sort(key=lambda s: (s.step, RANK[s.label]))
    return [
        (s, Mistake(episode_id, s.step, s.label, s.evidence, s.made_good(), harmless=s.harmless))
        for s in found
    ]


STOPS = frozenset({"no_tool_call"})
"""Labels of an agent stopping work (a reply with no call), which name no object."""
OWED = frozenset({"gave_up_after_rejection"})
"""Labels of an answer owed and not given: stopping while one stands is that mistake."""

FAILED_CALLS = frozenset({"hallucinated_tool", "invalid_params", "no_retry_after_fault"})
"""Labels of a call that did not do its work: one that meant to read a figure leaves the
agent acting on a figure it never read."""

OBJECT = re.compile(r"\b(TKT-\d+|APR-\d+)\b")
"""Objects a mistake's evidence names (tickets, requests; metrics by name): what ties a symptom
to its cause."""


def _objects(evidence: str, metrics: frozenset[str]) -> set[str]:
    """The tickets, requests and metrics an evidence names."""
    named = set(OBJECT.findall(evidence))
    return named | {
        m for m in metrics if re.search(rf"(?<![\w.]){re.escape(m)}(?![\w.])", evidence)
    }


def _root(rows: list[Mistake], found: Mistake, metrics: frozenset[str]) -> Mistake:
    """The cause of ``found``: an earlier mistake on the same ticket, request or metric that
    was still unrepaired when ``found`` was made (a change a fault refused and never retried
    shows up later as a request on an unready ticket, a figure read with a tool that does not
    exist as a request on a figure never read; the symptom is not the mistake), or, for a reply
    with no tool call, a rejection it had seen and left unanswered."""
    objects = _objects(found.evidence, metrics)
    if found.label in STOPS:
        # A reply without a tool call names nothing: while a rejection the agent had seen
        # stood unanswered, stopping is how it left it standing.
        standing = [
            m
            for m in rows
            if m.step <= found.step
            and m.label in OWED
            and (m.made_good_at is None or m.made_good_at > found.step)
        ]
        return standing[0] if standing else found
    if not objects:
        return found
    for m in rows:
        if m.step >= found.step:
            break
        if m.harmless or m.label == found.label:
            continue
        unrepaired = m.made_good_at is None or m.made_good_at > found.step
        # A metric ties a symptom only to a call that failed to read it.
        theirs = _objects(m.evidence, metrics if m.label in FAILED_CALLS else frozenset())
        if unrepaired and objects & theirs:
            return m
    return found


def _decide(ep: Episode, rows: list[Mistake], forks: SimulatedForks, episode_id: str) -> Mistake:
    """The decisive mistake of a failed episode (a row of ``rows`` or a new verdict row)."""
    info = ep.r.setup.info
    assert info is not None
    if not forks.solvable():
        return Mistake(
            episode_id,
            0,
            "unsolvable_instance",
            f"the honest solver does not solve {info.scenario} seed {info.seed} difficulty "
            f"{info.difficulty} from the start within {info.max_steps} steps",
        )
    last = forks.forkable.stop - 1
    metrics = frozenset(ep.final.metrics)

    def wins(k: int) -> bool:
        return k <= last and forks.wins_from(k)

    def looping(m: Mistake) -> Mistake | None:
        """The idling verdict, when ``m`` is the same mistake the agent had made and made good
        before: undoing and redoing, the loop lost the episode, not this turn of it."""
        again = any(
            r.step < m.step
            and (r.label, r.evidence) == (m.label, m.evidence)
            and r.made_good_at is not None
            and r.made_good_at <= m.step
            for r in rows
        )
        s = next(verdicts.idling(ep), None) if again else None
        return None if s is None else Mistake(episode_id, s.step, s.label, s.evidence)

    for m in rows:
        if m.harmless or not wins(m.step - 1):
            continue  # harmless, or the episode was already lost before it
        if m.made_good_at is not None:
            if wins(m.made_good_at):
                continue  # made good in time
            loop = looping(m)
            if loop is not None:
                return loop
            return Mistake(
                episode_id,
                m.step,
                "fixed_too_late",
                f"{m.label} at step {m.step} ({m.evidence}) was made good at step "
                f"{m.made_good_at}, too late: after it, the budget left could no longer "
                "finish the task",
                m.made_good_at,
            )
        if not wins(m.step):
            return looping(m) or _root(rows, m, metrics)
    for m in rows:
        if not m.harmless and m.made_good_at is None:
            return _root(rows, m, metrics)
    s = next(verdicts.idling(ep), None) or verdicts.fallback(ep)
    return Mistake(episode_id, s.step, s.label, s.evidence)


def analyse(
    records: Sequence[RecordedEvent | Event],
    replayed: Replay | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
    with_point_of_no_return: bool = False,
) -> Analysis:
    """Every mistake of an episode and, for an ended failure, the decisive one (marked in the
    list; a verdict row such as ``fixed_too_late`` is added to it). ``replayed``: the stream's
    `replay` if the caller has it already."""
    r = replayed if replayed is not None else replay(records)
    episode_id = _episode_id(records)
    if r.setup.task is None or (not r.steps and r.outcome not in FAILED):
        return Analysis([], None)
    ep = Episode(r)
    rows = [m for _, m in _rows(ep, episode_id)]
    if r.outcome not in FAILED:
        return Analysis(rows, None)
    forks = SimulatedForks(records, limits, r)
    chosen = _decide(ep, rows, forks, episode_id)
    decisive = replace(chosen, decisive=True)
    out = list(rows)
    if chosen in out:  # a row of the table (the first such: rows may repeat word for word)
        out[out.index(chosen)] = decisive
    else:  # a verdict (fixed too late, idling, a fallback, the instance's label)
        out.append(decisive)
        out.sort(key=lambda m: (m.step, RANK[m.label]))
    ponr = forks.point_of_no_return() if with_point_of_no_return else None
    return Analysis(out, decisive, ponr)


def mistakes(
    records: Sequence[RecordedEvent | Event], replayed: Replay | None = None
) -> list[Mistake]:
    """Every mistake of an episode, each at its step, the decisive one of a failure marked."""
    return analyse(records, replayed).mistakes


def decisive(
    records: Sequence[RecordedEvent | Event], replayed: Replay | None = None
) -> Mistake | None:
    """The mistake that lost a failed episode (None for a success or a running episode)."""
    return analyse(records, replayed).decisive
