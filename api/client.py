"""`CompanyOSClient`: a typed OpenEnv client for a CompanyOS server.

async with CompanyOSClient("http://127.0.0.1:8000") as env:     # a /ws session
    result = await env.reset(seed=7, task_id="vendor_onboarding")
    result = await env.call("datahub", "query_metric", metric_name="vendor_compliance_score")
    print(result.observation.message, result.reward)

with CompanyOSClient("http://127.0.0.1:8000").sync() as env:      # the same, synchronous
    result = env.reset(seed=7)
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from .models import CompanyOSAction, CompanyOSObservation, CompanyOSState


class CompanyOSClient(EnvClient[CompanyOSAction, CompanyOSObservation, CompanyOSState]):
    """``api_key``: for a server started with one (OpenEnv's client sets no headers on the
    WebSocket upgrade, so the key travels as the ``api_key`` query parameter)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, **kwargs: Any) -> None:
        super().__init__(base_url, **kwargs)
        if api_key is not None:
            self._ws_url = f"{self._ws_url}?{urlencode({'api_key': api_key})}"

    def _step_payload(self, action: CompanyOSAction | dict[str, Any]) -> dict[str, Any]:
        if isinstance(action, dict):
            return action
        return action.model_dump(exclude={"metadata"}, exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CompanyOSObservation]:
        observation = CompanyOSObservation(
            **payload.get("observation", {}),
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return StepResult(
            observation=observation, reward=payload.get("reward"), done=payload.get("done", False)
        )

    def _parse_state(self, payload: dict[str, Any]) -> CompanyOSState:
        return CompanyOSState.model_validate(payload)

    async def call(self, app: str, method: str, **params: Any) -> StepResult[CompanyOSObservation]:
        """One tool call: ``await env.call("ticketdesk", "get_ticket", ticket_id="TKT-1042")``."""
        return await self.step(CompanyOSAction(app=app, method=method, params=params))
