"""The LLM agent: any OpenAI-compatible chat completions endpoint (vLLM, SGLang, llama.cpp's
server, Ollama, transformers serve, a hosted API).

Each turn sends the whole conversation so far (the system prompt, the task, then every call
the model made with its result) and the app tools as function schemas, with
``parallel_tool_calls: false`` (one call per step), and takes the reply's first tool call as
the action. A server with no tool parser for the model returns the call in the text: it is read
there (`toolcalls.find_text_call`: Hermes blocks, JSON, function-call syntax). With
``tools_in_prompt`` the tools are described in the system prompt instead and every call is read
from the text: for a model whose chat template shows it no tools (SmolLM2's).

The conversation holds every call's arguments as JSON text (templates parse them back), and
never anything of the grader: the model reads tool results, messages and the step budget, no
reward, return or progress. Every reply is kept in `transcript` (raw content and tool calls,
tokens, latency) for the evaluation's log.

Whatever else comes back becomes a logged invalid action and a note the model reads next turn,
never an exception:

=====================  =============================================================
reply                  action sent to the environment
=====================  =============================================================
a known tool           that call (arguments that are not a JSON object go raw, and the
                       environment refuses them with the tool's signature)
a call in the text     that call, read from the text
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
import json
import time
from dataclasses import dataclass
from typing import Any

import openai

from companyos.api.models import CompanyOSObservation
from companyos.domain.inputs import number_problem, printable

from .toolcalls import (
    COMPACT_SYSTEM_PROMPT,
    NO_CALL_NOTE,
    SYSTEM_PROMPT,
    TextCall,
    action_for_call,
    arguments_json,
    clip,
    find_text_call,
    function_tools,
    junk,
    one_shot,
    result_message,
    system_prompt_with_tools,
    task_message,
    tool_response,
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
    tools_in_prompt: bool = False
    """Describe the tools in the system prompt (Hermes form) and read every call from the
    reply's text, sending no ``tools``: for a model whose chat template shows it no tools."""
    prompt: str = "full"
    """``full``: the system prompt that explains the systems' faults. ``compact``: a short one
    and an example call before the task, for a small model (SmolLM2-135M makes no valid call
    with the full one, and about half its first calls are valid with this)."""

    def __post_init__(self) -> None:
        if self.prompt not in PROMPTS:
            raise ValueError(f"prompt must be one of {', '.join(PROMPTS)}: {self.prompt!r}")

    def as_config(self) -> dict[str, Any]:
        """Everything here that changes results (the key is left out)."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "history": self.history,
            "tools_in_prompt": self.tools_in_prompt,
            "prompt": self.prompt,
        }


PROMPTS = ("full", "compact")


OPTIONAL_FIELDS = ("parallel_tool_calls", "tool_choice", "seed")
"""Request fields some OpenAI-compatible servers refuse (transformers serve answers 422 to
them): dropped, for that server, once it has refused them by name."""
_refused_fields: dict[str, set[str]] = {}


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
        self.transcript: list[dict[str, Any]] = []
        """Every reply of this episode: step, raw content and tool calls, tokens, latency."""

    def reset(self, observation: CompanyOSObservation) -> None:
        compact = self.settings.prompt == "compact"
        system = COMPACT_SYSTEM_PROMPT if compact else SYSTEM_PROMPT
        if self.settings.tools_in_prompt:
            system = system_prompt_with_tools(self.tools, system)
        self.messages = [
            {"role": "system", "content": system},
            *(one_shot() if compact else []),
            {"role": "user", "content": task_message(observation)},
        ]
        self.transcript = []
        self._turns = []
        self._pending = None
        self._answered = False  # has the endpoint answered in this episode?

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        """The next call, carrying the model's raw reply (``reply``), which the environment
        logs beside the episode before it makes the call."""
        action = self._act(observation)
        return {**action, "reply": reply_of(self.transcript[-1])}

    def _act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        self._answer_last_reply(observation)
        self._forget_old_turns()
        self._turns.append(len(self.messages))
        entry: dict[str, Any] = {"step": observation.step + 1}
        self.transcript.append(entry)
        started = time.perf_counter()
        try:
            response = self._create()
        except openai.APIError as exc:  # retries spent (or a status not worth retrying)
            entry["latency_s"] = round(time.perf_counter() - started, 4)
            entry["error"] = clip(f"{type(exc).__name__}: {exc}")
            if not self._answered and _refused(exc):
                raise EndpointRefused(
                    f"the LLM endpoint {self.settings.base_url} refused the first request of "
                    f"an episode ({type(exc).__name__}: {exc}); check --model, the API key "
                    "and the endpoint's options"
                ) from exc
            return junk("api_error", error=f"{type(exc).__name__}: {exc}")
        entry["latency_s"] = round(time.perf_counter() - started, 4)
        self._answered = True
        _record_usage(entry, response)
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):  # not a chat completion at all (an HTML page, ...)
            entry["error"] = "not a chat completion"
            return junk("bad_response", body=response)
        if not choices:
            entry["error"] = "no choices"
            return junk("empty_reply")
        message = getattr(choices[0], "message", None)
        entry["finish_reason"] = getattr(choices[0], "finish_reason", None)
        content = getattr(message, "content", None) or ""
        calls = getattr(message, "tool_calls", None) or []
        if not isinstance(content, str) or not isinstance(calls, list):
            entry["error"] = "malformed message"
            return junk("bad_response", body=message)
        entry["content"] = content
        if calls:
            entry["tool_calls"] = [_raw_call(c) for c in calls]
        if calls and not self.settings.tools_in_prompt:
            return self._native_call(content, calls)
        return self._text_call(content, entry)

    def _native_call(self, content: str, calls: list[Any]) -> dict[str, Any]:
        """The server parsed the reply's tool calls: the first is the action."""
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
                        "function": {
                            "name": clip(name, 200),
                            "arguments": arguments_json(arguments),
                        },
                    }
                ],
            }
        )
        action, note = action_for_call(name, arguments)
        if len(calls) > 1:
            note = (note + " " if note else "") + "Only your first tool call was made."
        self._pending = (call_id, note)
        return action

    def _text_call(self, content: str, entry: dict[str, Any]) -> dict[str, Any]:
        """No parsed tool call: read one from the text. The history keeps the reply as the
        model wrote it, and the answer comes as a user message (there is no call id to answer
        a tool message to)."""
        self.messages.append({"role": "assistant", "content": content})
        found = find_text_call(content)
        if not isinstance(found, TextCall):
            self._pending = ("user", NO_CALL_NOTE if found is None else f"Not a call: {found}.")
            return junk(
                "no_tool_call" if found is None else "bad_tool_call",
                content=content,
                **({} if found is None else {"error": found}),
            )
        entry["text_call"] = found.format
        action, note = action_for_call(found.name.replace(".", "_"), found.arguments)
        self._pending = ("text", note)
        return action

    # ------------------------------------------------------------------ helpers

    def _request(self) -> dict[str, Any]:
        s = self.settings
        request: dict[str, Any] = {
            "model": s.model,
            "messages": self.messages,
            "temperature": s.temperature,
        }
        if not s.tools_in_prompt:
            request |= {"tools": self.tools, "tool_choice": "auto", "parallel_tool_calls": False}
        if s.max_tokens is not None:
            request["max_tokens"] = s.max_tokens
        if self.seed is not None:
            request["seed"] = self.seed
        for field in _refused_fields.get(s.base_url, ()):
            request.pop(field, None)
        return request

    def _create(self) -> Any:
        """One chat completion; a server that refuses an optional field by name (400 or 422)
        is asked again without it, and never sent it again."""
        while True:
            try:
                return self.client.chat.completions.create(**self._request())
            except openai.APIStatusError as exc:
                named = [
                    f
                    for f in OPTIONAL_FIELDS
                    if exc.status_code in (400, 422)
                    and f in str(exc)
                    and f not in _refused_fields.get(self.settings.base_url, set())
                ]
                if not named:
                    raise
                _refused_fields.setdefault(self.settings.base_url, set()).update(named)

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
        elif to == "text":
            answer = tool_response(result_message(obs, note))
            self.messages.append({"role": "user", "content": answer})
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


def _record_usage(entry: dict[str, Any], response: Any) -> None:
    usage = getattr(response, "usage", None)
    for key in ("prompt_tokens", "completion_tokens"):
        value = getattr(usage, key, None)
        if isinstance(value, int):
            entry[key] = value


def reply_of(entry: dict[str, Any]) -> dict[str, Any]:
    """A transcript entry as the action's ``reply`` (`api.models.AgentReply`)."""
    # A model can write a NUL or a lone surrogate: the log keeps it escaped (`printable`), as
    # no store can keep it raw and the log must not lose the reply.
    calls = entry.get("tool_calls")
    reply = {
        "content": clip(printable(entry.get("content") or "", REPLY_CLIP), REPLY_CLIP),
        "tool_calls": clip(json.dumps(calls), REPLY_CLIP) if calls else None,
        "error": clip(printable(entry["error"], 4_000), 4_000) if entry.get("error") else None,
    }
    for key in ("prompt_tokens", "completion_tokens", "latency_s"):
        value = entry.get(key)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and number_problem(value) is None and value >= 0:
            reply[key] = value
    if isinstance(entry.get("finish_reason"), str):
        reply["finish_reason"] = clip(printable(entry["finish_reason"], 60), 60)
    return {k: v for k, v in reply.items() if v is not None}


REPLY_CLIP = 16_000
"""Characters of a reply's text logged (the wire model takes 16,384)."""


def _raw_call(call: Any) -> dict[str, Any]:
    """A tool call as the server returned it (for the transcript)."""
    fn = getattr(call, "function", None)
    arguments = getattr(fn, "arguments", None)
    return {
        "name": clip(str(getattr(fn, "name", "")), 200),
        "arguments": arguments
        if isinstance(arguments, str)
        else json.dumps(arguments, default=str),
    }
