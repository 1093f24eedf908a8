"""A no-op OpenEnv environment served by OpenEnv's own `create_app`: the reference that
`serve_throughput.py` compares CompanyOS against (`uvicorn noop_server:app`)."""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class NoopAction(Action):
    model_config = {"extra": "allow"}


class NoopEnvironment(Environment[NoopAction, Observation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id="noop", step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kw: Any
    ) -> Observation:
        self._state = State(episode_id="noop", step_count=0)
        return Observation(done=False, reward=0.0)

    def step(self, action: NoopAction, timeout_s: float | None = None, **kw: Any) -> Observation:
        self._state.step_count += 1
        return Observation(done=False, reward=0.0)

    @property
    def state(self) -> State:
        return self._state


app = create_app(NoopEnvironment, NoopAction, Observation, max_concurrent_envs=64)
