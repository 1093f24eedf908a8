"""Baseline policies: random, oracle (and, for tests, exploit policies)."""

from __future__ import annotations

from .base import Agent, EpisodeResult, play
from .naive import NaiveAgent, in_process_naive
from .oracle import OracleAgent, in_process_oracle
from .random_agent import RandomAgent

__all__ = [
    "Agent",
    "EpisodeResult",
    "NaiveAgent",
    "OracleAgent",
    "RandomAgent",
    "in_process_naive",
    "in_process_oracle",
    "play",
]
