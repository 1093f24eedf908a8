"""The warehouse's ``mistakes`` table: every mistake of every episode, one row each, with the
decisive one of each failure marked (`projections.mistakes`).

`load_mistakes` is the one call the warehouse makes per page it loads: it replaces the rows of
the episodes the page touched. The analysis of a failure costs honest forks; `analysis_of` is
what the ``failures`` row takes its label from, and it keeps the analysis for `load_mistakes`
(and for streams with the same content: a deterministic agent's trials), so each distinct
stream is analysed once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from companyos.events.types import Event
from companyos.projections.mistakes import Analysis, analyse
from companyos.projections.replay import Replay

from .source import EventParser, RawEvent

SCHEMA = """
CREATE TABLE IF NOT EXISTS mistakes (
    episode_id   VARCHAR NOT NULL,
    step         INTEGER NOT NULL,
    label        VARCHAR NOT NULL,
    evidence     VARCHAR NOT NULL,
    made_good_at INTEGER,
    decisive     BOOLEAN NOT NULL,
    harmless     BOOLEAN NOT NULL
);
COMMENT ON TABLE mistakes IS 'Every mistake of every episode (projections.mistakes), one row '
    'each at its step; per failed episode exactly one row is decisive.';
COMMENT ON COLUMN mistakes.episode_id IS 'The episode (events.episode_id).';
COMMENT ON COLUMN mistakes.step IS 'The step the mistake was made at (1 = the first call; 0 for '
    'unsolvable_instance, a label of the instance).';
COMMENT ON COLUMN mistakes.label IS 'A taxonomy label (taxonomy.label; docs/failure_taxonomy.md).';
COMMENT ON COLUMN mistakes.evidence IS 'What happened, in words, naming the objects involved.';
COMMENT ON COLUMN mistakes.made_good_at IS 'The step at which a later call made it good; NULL: '
    'never.';
COMMENT ON COLUMN mistakes.decisive IS 'The mistake that lost the failed episode: the earliest '
    'after which the honest solver, taking over, can no longer succeed.';
COMMENT ON COLUMN mistakes.harmless IS 'A failed read later corrected: listed, never decisive.';
"""

_MEMO_MAX = 8192
_by_stream: dict[tuple[str, int], Analysis] = {}
"""Analyses `analysis_of` made, by (episode, events), until `load_mistakes` takes them."""
_by_content: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
"""Rows (without the episode id) by (last hash, events): streams with the same content."""


def analysis_of(episode_id: str, events: Sequence[Event], r: Replay) -> Analysis:
    """The analysis of one whole stream (``r``: its replay), kept for `load_mistakes`."""
    found = analyse(events, r)
    if len(_by_stream) >= _MEMO_MAX:
        _by_stream.clear()
    _by_stream[(episode_id, len(events))] = found
    return found


def _rows(a: Analysis) -> list[tuple[Any, ...]]:
    return [
        (m.step, m.label, m.evidence, m.made_good_at, m.decisive, m.harmless) for m in a.mistakes
    ]


def load_mistakes(
    con: duckdb.DuckDBPyConnection, episodes: Mapping[str, Sequence[RawEvent]]
) -> int:
    """Replace the ``mistakes`` rows of ``episodes`` (each a whole stream as stored) inside the
    caller's transaction; returns the rows inserted."""
    con.execute(SCHEMA)
    if not episodes:
        return 0
    con.execute(
        "DELETE FROM mistakes WHERE list_contains($ids, episode_id)", {"ids": list(episodes)}
    )
    parser: EventParser | None = None
    out: list[tuple[Any, ...]] = []
    for eid, raw in episodes.items():
        content = (raw[-1].hash, len(raw))
        rows = _by_content.get(content)
        if rows is None:
            a = _by_stream.pop((eid, len(raw)), None)
            if a is None:
                parser = parser or EventParser()
                a = analyse(parser.events(raw))
            rows = _rows(a)
            if len(_by_content) >= _MEMO_MAX:
                _by_content.clear()
            _by_content[content] = rows
        out += [(eid, *row) for row in rows]
    if out:
        with con.appender("mistakes") as app:
            app.append_rows(out)
    return len(out)


__all__ = ["SCHEMA", "analysis_of", "load_mistakes"]
