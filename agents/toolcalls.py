"""Between chat models and CompanyOS: the tools as function schemas, a model's tool call as an
action, an observation as the text a model reads, and every way a reply can go wrong as an
action the environment logs as invalid.

Shared by the LLM agent (an OpenAI-compatible endpoint with native tool calling) and the GRPO
example (a local model whose text is parsed for Hermes-style ``<tool_call>`` blocks). The
schemas are the MCP tools' own (`api.mcp.app_tools`, read from the one catalogue), so a model
sees exactly what validates its call.

Junk never raises: it becomes a call to the pseudo-app ``llm`` (``no_tool_call``,
``api_error``, ...) whose parameters say what came back. The environment refuses it like any
unknown tool (an `InvalidAction` with a message, and a penalty), so the episode's log shows
every reply the model got wrong and analytics can count them by kind.
"""

from __future__ import annotations

import json
import re
from typing import Any

from companyos.api.mcp import app_tools, tool_result
from companyos.api.models import CompanyOSObservation
from companyos.domain import BY_NAME

JUNK_APP = "llm"
"""The pseudo-app of replies that are not a usable tool call; no such app exists, so every
call to it is logged as an invalid action."""
CLIP = 1_000
"""Characters of a model's text kept in a logged parameter (the store refuses strings over
4,096 characters, and 16 KiB a call)."""

SYSTEM_PROMPT = """\
You are an operations assistant at a company. You complete a task by calling tools of three \
apps: TicketDesk (tickets), DataHub (metrics and the approver directory) and ApprovalFlow \
(approval requests). Call exactly one tool per turn; after each call you get its result, a \
message, and how many steps remain.

The systems are unreliable, as real ones are: a call may fail transiently (try it again), a \
metric may be stale (refresh it before you trust it), a person may be out of office (the \
directory names who covers for them), an approver takes time to decide (check the request's \
status), and a request may be rejected (escalate it, or fix what the rejection says). Look \
things up rather than guess ids, names or numbers. The episode ends when the task is done or \
the steps run out."""


def function_tools() -> list[dict[str, Any]]:
    """The app tools in the OpenAI ``tools`` format (also what Hugging Face chat templates
    take): ``{"type": "function", "function": {name, description, parameters}}``."""
    return [
        {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema},
        }
        for name, description, schema in app_tools()
    ]


def clip(text: Any, limit: int = CLIP) -> str:
    text = text if isinstance(text, str) else repr(text)
    return text if len(text) <= limit else text[:limit] + "..."


def junk(kind: str, **details: Any) -> dict[str, Any]:
    """An action that records a reply that was not a usable call (``kind`` names what)."""
    return {
        "app": JUNK_APP,
        "method": kind,
        "params": {
            k: v if isinstance(v, int | float | bool) else clip(v) for k, v in details.items()
        },
    }


def action_for_call(name: str, arguments: Any) -> tuple[dict[str, Any], str | None]:
    """The action for a tool call by flat name (``ticketdesk_get_ticket``) with ``arguments``
    as the model gave them (a JSON string, or already a dict), and a note for the model when
    the call could not be taken as it stands.

    An unknown name still goes to the environment, split the way MCP does (``app_method``),
    so that its answer ("Unknown app ...; did you mean ...") is what the model reads. Arguments
    that are not a JSON object go as the raw text, which the environment refuses with the
    tool's signature."""
    spec = BY_NAME.get(name)
    app, method = (spec.app, spec.method) if spec else name.partition("_")[::2]
    if isinstance(arguments, dict):
        return {"app": app, "method": method, "params": arguments}, None
    raw = "" if arguments is None else str(arguments)
    if not raw.strip():
        return {"app": app, "method": method, "params": {}}, None
    try:
        params = json.loads(raw)
    except ValueError as exc:
        note = f"The arguments were not valid JSON ({exc}); send a JSON object."
        return {"app": app, "method": method, "params": clip(raw)}, note
    if not isinstance(params, dict):
        return {"app": app, "method": method, "params": clip(raw)}, "Send arguments as an object."
    return {"app": app, "method": method, "params": params}, None


def task_message(obs: CompanyOSObservation) -> str:
    """The first user message of an episode."""
    return (
        f"Task: {obs.task}\n\nYou have {obs.max_steps} steps. It is {obs.time}. "
        "Call one tool per turn."
    )


def result_message(obs: CompanyOSObservation, note: str | None = None) -> str:
    """What a model reads after a call, as JSON: what an MCP client gets back from the same
    call (the tool's result under ``data``, the message, the error code, the step budget;
    nothing of the grader: no reward, return or progress), the simulated time, and a note from
    the agent when its reply could not be used as it stood."""
    body = {k: v for k, v in tool_result(obs).items() if k != "episode_id"}
    body["time"] = obs.time
    if note:
        body["note"] = note
    return json.dumps(body, default=str)


_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


def parse_text_tool_call(text: str) -> tuple[dict[str, Any], str | None]:
    """The action of the first Hermes-style ``<tool_call>{"name": ..., "arguments": ...}
    </tool_call>`` block in generated text (the format of Qwen2.5 and other open chat models),
    or a logged invalid action when there is none or it does not parse."""
    found = _TOOL_CALL.search(text)
    if found is None:
        return junk("no_tool_call", content=text), "Reply with one <tool_call> block."
    try:
        call = json.loads(found.group(1))
    except ValueError as exc:
        return junk("bad_tool_call", content=found.group(1), error=str(exc)), "Bad JSON."
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return junk("bad_tool_call", content=found.group(1)), 'Give {"name", "arguments"}.'
    return action_for_call(call["name"], call.get("arguments"))
