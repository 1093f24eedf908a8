"""Failure analysis: every mistake of an episode, one small rule per label, and the decisive
mistake of a failure judged by honest forks (`analysis`).

Each label is a module in `rules/` (what counts as the mistake, what makes it good); episode
verdicts (fixed too late, idling, fallbacks, unsolvable instance) are in `verdicts`; `registry`
orders them and gives the documented taxonomy (docs/failure_taxonomy.md). Pure like every
projection: the log in, rows out."""

from __future__ import annotations

from .analysis import Analysis, Mistake, analyse, decisive, mistakes
from .registry import LABELS, RANK, RULES
from .verdicts import FALLBACKS, IDLING

__all__ = [
    "FALLBACKS",
    "IDLING",
    "LABELS",
    "RANK",
    "RULES",
    "Analysis",
    "Mistake",
    "analyse",
    "decisive",
    "mistakes",
]
