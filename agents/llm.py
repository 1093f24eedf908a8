"""The LLM agent: any OpenAI-compatible chat completions endpoint (vLLM, SGLang, Ollama, a
hosted API) with native tool calling.

Each turn sends the whole conversation so far (the system prompt, the task, then every call
the model made with its result) and the app tools as function schemas, and takes the reply's
first tool call as the action. Whatever else comes back becomes a logged invalid action and a
note the model reads next turn, never an exception:

=====================  =============================================================
reply                  action sent to the environment
=====================  =============================================================
a known tool           that call (arguments that are not a JSON object go raw, and the
                       environment refuses them with the tool's signature)
an unknown tool        that name split as MCP does (``foo_bar`` -> app foo, method bar)
no tool call           ``llm.no_tool_call(content)``
no choices             ``llm.empty_reply``
not a chat completion  ``llm.bad_response(body)``
HTTP error, timeout    ``llm.api_error(error)`` once the client's retries are spent
=====================  =============================================================

Each of these costs a step, so a dead endpoint cannot hang an evaluation: the episode runs out
of steps. One exception: a client error (4xx but 408, 409, 429) before the endpoint has
answered once in an episode is a configuration problem (unknown model, missing key), not the
model's doing; it raises `EndpointRefused`, which stops an evaluation with a message.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import openai

from companyos.api.models import CompanyOSObservation

from .toolcalls import (
    SYSTEM_PROMPT,
    action_for_call,
    clip,
    function_tools,
    junk,
    result_message,
    task_message,
)


@dataclass(frozen=True, slots=True)
class LLMSettings:
    """How to reach the model; picklable, so that evaluation workers can build their own."""

    base_url: str
    model: str
    api_key: str = "EMPTY"
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = 60.0
    max_retries: int = 2
    """Retries of the OpenAI client itself (connection errors, 408, 409, 429, 5xx), with its
    exponential backoff, before a reply counts as an API error."""
    history: int | None = None
    """Turns of conversation kept besides the system prompt and the task (None: all)."""


class EndpointRefused(ValueError):
    """The endpoint refuses requests as configured (unknown model, no key, no tool calling):
    an evaluation stops with this rather than log every step of every episode as junk."""


def _refused(exc: openai.APIError) -> bool:
    """A client error that retrying will not cure (not 408, 409 or 429)."""
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and 400 <= status < 500 and status not in (408, 409, 429)


class LLMAgent:
    name = "llm"

    def __init__(
        self, settings: LLMSettings, seed: int | None = None, client: openai.OpenAI | None = None
    ) -> None:
        self.settings = settings
        self.seed = seed
        self.client = client or openai.OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
        )
        self.tools = function_tools()
        self.messages: list[dict[str, Any]] = []
        self._turns: list[int] = []  # index in messages where each turn starts
        self._ids = itertools.count()
        self._pending: tuple[str, str | None] | None = None  # how to answer the last reply
        self._answered = False

    def reset(self, observation: CompanyOSObservation) -> None:
        self.messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": task_message(observation)},
        ]
        self._turns = []
        self._pending = None
        self._answered = False  # has the endpoint answered in this episode?

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        self._answer_last_reply(observation)
        self._forget_old_turns()
        self._turns.append(len(self.messages))
        try:
            response = self.client.chat.completions.create(**self._request())
        except openai.APIError as exc:  # retries spent (or a status not worth retrying)
            if not self._answered and _refused(exc):
                raise EndpointRefused(
                    f"the LLM endpoint {self.settings.base_url} refused the first request of "
                    f"an episode ({type(exc).__name__}: {exc}); check --model, the API key "
                    "and the endpoint's options (tool calling must be enabled)"
                ) from exc
            return junk("api_error", error=f"{type(exc).__name__}: {exc}")
        self._answered = True
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):  # not a chat completion at all (an HTML page, ...)
            return junk("bad_response", body=response)
        if not choices:
            return junk("empty_reply")
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None) or ""
        calls = getattr(message, "tool_calls", None) or []
        if not isinstance(content, str) or not isinstance(calls, list):
            return junk("bad_response", body=message)
        if not calls:
            self.messages.append({"role": "assistant", "content": content})
            self._pending = ("user", "Your reply called no tool. Call exactly one tool.")
            return junk("no_tool_call", content=content)
        # One call per step: only the first is kept (in the history too, so that every tool
        # call in the conversation has its answer).
        call = calls[0]
        call_id = getattr(call, "id", None) or f"call_{next(self._ids)}"
        fn = getattr(call, "function", None)
        name, arguments = str(getattr(fn, "name", None) or ""), getattr(fn, "arguments", None)
        self.messages.append(
            {
                "role": "assistant",
                "content": content or None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": clip(arguments or "", 4_000)},
                    }
                ],
            }
        )
        action, note = action_for_call(name, arguments)
        if len(calls) > 1:
            note = (note + " " if note else "") + "Only your first tool call was made."
        self._pending = (call_id, note)
        return action

    # ------------------------------------------------------------------ helpers

    def _request(self) -> dict[str, Any]:
        s = self.settings
        request: dict[str, Any] = {
            "model": s.model,
            "messages": self.messages,
            "tools": self.tools,
            "tool_choice": "auto",
            "temperature": s.temperature,
        }
        if s.max_tokens is not None:
            request["max_tokens"] = s.max_tokens
        if self.seed is not None:
            request["seed"] = self.seed
        return request

    def _answer_last_reply(self, obs: CompanyOSObservation) -> None:
        """Tell the model what its last reply led to: a tool message answering its call, or a
        user message when it made none. (An API error left no reply to answer: the step it
        cost shows in the next result's step count.)"""
        if self._pending is None:
            return
        to, note = self._pending
        self._pending = None
        if to == "user":
            self.messages.append({"role": "user", "content": result_message(obs, note)})
        else:
            self.messages.append(
                {"role": "tool", "tool_call_id": to, "content": result_message(obs, note)}
            )

    def _forget_old_turns(self) -> None:
        """Keep the last ``history`` turns; a turn (a reply and its answer) goes as a whole, so
        that no tool answer is left without its call."""
        keep = self.settings.history
        if keep is None or len(self._turns) <= keep:
            return
        cut = self._turns[len(self._turns) - keep] if keep else len(self.messages)
        drop = cut - self._turns[0]
        del self.messages[self._turns[0] : cut]
        self._turns = [t - drop for t in self._turns[len(self._turns) - keep :]] if keep else []
