"""Agents: random, naive, oracle (and, for tests, exploit policies); the LLM agent is in
`agents.llm`, the evaluation harness in `agents.harness` (run by `companyos eval`)."""

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
