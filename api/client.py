"""`CompanyOSClient`: a typed OpenEnv client for a CompanyOS server.

async with CompanyOSClient("http://127.0.0.1:8000") as env:     # a /ws session
    result = await env.reset(seed=7, task_id="vendor_onboarding")
    result = await env.call("datahub", "query_metric", metric_name="vendor_compliance_score")
    print(result.observation.message, result.reward)

with CompanyOSClient("http://127.0.0.1:8000").sync() as env:      # the same, synchronous
    result = env.reset(seed=7)

Batches (offline evaluation, search): many episodes in one message each way.

    results = await env.reset_batch([{"seed": s, "task_id": 0} for s in range(64)])
    ids = [r.observation.episode_id for r in results]
    results = await env.step_batch([{"episode_id": e, "app": "ticketdesk",
                                     "method": "list_tickets"} for e in ids])
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

    async def reset_batch(
        self, resets: list[dict[str, Any]]
    ) -> list[StepResult[CompanyOSObservation]]:
        """Start many episodes in one message: each item is a dict of reset options."""
        response = await self._send_and_receive({"type": "reset", "data": {"batch": resets}})
        return self._parse_batch(response)

    async def step_batch(
        self, actions: list[CompanyOSAction | dict[str, Any]]
    ) -> list[StepResult[CompanyOSObservation]]:
        """Many calls in one message, each naming (``episode_id``) an episode this session
        started with `reset_batch`; the results come back in order."""
        batch = [self._step_payload(a) for a in actions]
        response = await self._send_and_receive({"type": "step", "data": {"batch": batch}})
        return self._parse_batch(response)

    def _parse_batch(self, response: dict[str, Any]) -> list[StepResult[CompanyOSObservation]]:
        results = response.get("data", {}).get("observation", {}).get("results", [])
        return [self._parse_result(r) for r in results]
