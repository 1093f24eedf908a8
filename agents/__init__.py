"""Baseline policies: random, oracle (and, for tests, exploit policies)."""

from __future__ import annotations

from .base import Agent, EpisodeResult, play
from .oracle import OracleAgent, in_process_oracle
from .random_agent import RandomAgent

__all__ = ["Agent", "EpisodeResult", "OracleAgent", "RandomAgent", "in_process_oracle", "play"]
