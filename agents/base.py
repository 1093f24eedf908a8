"""What an agent is, and a loop that plays one episode in-process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from companyos.api.environment import CompanyOSEnvironment
from companyos.api.models import CompanyOSObservation


class Agent(Protocol):
    name: str

    def reset(self, observation: CompanyOSObservation) -> None: ...

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        """The next call as ``{"app": ..., "method": ..., "params": {...}}``."""
        ...


@dataclass(frozen=True, slots=True)
class EpisodeResult:
    episode_id: str
    scenario: str
    difficulty: int
    seed: int
    outcome: str | None
    steps: int
    total_return: float


def play(env: CompanyOSEnvironment, agent: Agent, **reset: Any) -> EpisodeResult:
    """Reset ``env`` with ``reset`` (labelled with the agent's name unless ``reset`` says
    otherwise) and let ``agent`` act until the episode ends."""
    reset.setdefault("agent", agent.name)
    obs = env.reset(**reset)
    agent.reset(obs)
    while not obs.done:
        obs = env.step(agent.act(obs))
    assert obs.episode_id is not None and obs.task_id is not None
    return EpisodeResult(
        obs.episode_id,
        obs.task_id,
        obs.difficulty or 0,
        obs.seed or 0,
        obs.outcome,
        obs.step,
        obs.cumulative_return,
    )
