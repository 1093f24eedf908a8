"""The agents `companyos eval` knows, by name, and how to build one where it will play.

The honest solver plays from observations only, like any agent. The privileged baselines
(naive, oracle) read the true world: in-process from the live
episode, against a server by folding the episode's event log. The random agent gets its own
seed per trial, so that trials of one instance differ; the LLM agent passes its seed to the
endpoint (honoured by vLLM and OpenAI for sampling).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai

from companyos.domain import World

from .base import Agent
from .honest import HonestAgent
from .llm import LLMAgent, LLMSettings
from .naive import NaiveAgent
from .oracle import OracleAgent, live_world
from .random_agent import RandomAgent
from .remote import EventFeed

AGENTS = ("random", "naive", "honest", "oracle", "llm")
"""What each is: `companyos eval --help`."""


class UnknownAgent(ValueError):
    pass


def check_agent(name: str) -> str:
    if name not in AGENTS:
        raise UnknownAgent(f"unknown agent {name!r}: choose from {', '.join(AGENTS)}")
    return name


class Roster:
    """Builds agents for one place of play: the in-process environment ``env``, or the server
    at ``url``. One per worker; what agents can share (the event feed, the HTTP client of the
    LLM endpoint) is made once."""

    def __init__(
        self, env: Any = None, url: str | None = None, llm: LLMSettings | None = None
    ) -> None:
        self.env, self.url, self.llm = env, url, llm
        self._world_of: Callable[[str], World] | None = None
        self._llm_client: openai.OpenAI | None = None

    def world_of(self) -> Callable[[str], World]:
        if self._world_of is None:
            self._world_of = (
                EventFeed(self.url).world if self.url is not None else live_world(self.env)
            )
        return self._world_of

    def agent(self, name: str, seed: int) -> Agent:
        """A fresh agent ``name`` for one episode, its randomness drawn from ``seed``."""
        check_agent(name)
        if name == "random":
            return RandomAgent(seed)
        if name == "naive":
            return NaiveAgent(self.world_of())
        if name == "honest":
            return HonestAgent()
        if name == "oracle":
            return OracleAgent(self.world_of())
        if self.llm is None:
            raise UnknownAgent("the llm agent needs an endpoint (--llm-url) and a model (--model)")
        agent = LLMAgent(self.llm, seed=seed, client=self._llm_client)
        self._llm_client = agent.client
        return agent
