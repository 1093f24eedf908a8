"""What an agent is, and a loop that plays one episode (in-process or against a server)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from companyos.api.models import CompanyOSObservation, agent_view


class Agent(Protocol):
    """A policy. It is shown `agent_view` of each observation (no reward, seed or outcome),
    unless it sets ``sees_reward = True``: a search over rewards (the exploit policies that
    prove farming does not pay) plays as a trainer would, on the full observation."""

    name: str

    def reset(self, observation: CompanyOSObservation) -> None: ...

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        """The next call as ``{"app": ..., "method": ..., "params": {...}}``."""
        ...


class Playable(Protocol):
    """Where an episode is played: `CompanyOSEnvironment` in-process, or `RemoteEnv` (a client
    session with a server)."""

    def reset(self, **options: Any) -> CompanyOSObservation: ...

    def step(self, action: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class EpisodeResult:
    episode_id: str
    scenario: str
    difficulty: int
    seed: int
    outcome: str | None
    steps: int
    total_return: float
    errors: int = 0
    """Steps whose call came back with an error (the agent's mistakes and chaos alike)."""


def play(env: Playable, agent: Agent, /, **reset: Any) -> EpisodeResult:
    """Reset ``env`` with ``reset`` (labelled with the agent's name unless ``reset`` says
    otherwise) and let ``agent`` act until the episode ends."""
    reset.setdefault("agent", agent.name)
    shown = (lambda o: o) if getattr(agent, "sees_reward", False) else agent_view
    obs = env.reset(**reset)
    agent.reset(shown(obs))
    errors = 0
    total = 0.0
    while not obs.done:
        obs = env.step(agent.act(shown(obs)))
        errors += obs.error is not None
        # The return is the trainer's sum of step rewards: the agent's observation carries
        # nothing of the grader.
        total += obs.reward or 0.0
    assert obs.episode_id is not None and obs.task_id is not None
    return EpisodeResult(
        obs.episode_id,
        obs.task_id,
        obs.difficulty or 0,
        obs.seed or 0,
        obs.outcome,
        obs.step,
        round(total, 6),
        errors,
    )
