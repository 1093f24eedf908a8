"""Between chat models and CompanyOS: the tools as function schemas, a model's tool call as an
action, an observation as the text a model reads, and every way a reply can go wrong as an
action the environment logs as invalid.

Shared by the LLM agent (an OpenAI-compatible endpoint, with or without a tool parser) and the
GRPO example. The schemas are the MCP tools' own (`api.mcp.app_tools`, read from the one
catalogue), so a model sees exactly what validates its call. A call written in the reply's text
(a server with no tool parser for the model) is read in the forms open models write: Hermes
``<tool_call>`` blocks, JSON objects (bare or in a ```json fence), Llama's ``<function=...>``
and function-call syntax ``tool(a="x")``.

Junk never raises: it becomes a call to the pseudo-app ``llm`` (``no_tool_call``,
``api_error``, ...) whose parameters say what came back. The environment refuses it like any
unknown tool (an `InvalidAction` with a message, and a penalty), so the episode's log shows
every reply the model got wrong and analytics can count them by kind.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
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

    A name that runs on past a tool's (`known_prefix`) calls that tool, and the note says so.
    Any other unknown name still goes to the environment, split the way MCP does (``app_method``),
    so that its answer ("Unknown app ...; did you mean ...") is what the model reads. Arguments
    that are not a JSON object go as the raw text, which the environment refuses with the
    tool's signature."""
    spec = BY_NAME.get(name)
    renamed = None
    if spec is None and (known := known_prefix(name)) is not None:
        spec, renamed = BY_NAME[known], f"There is no tool {clip(name, 120)}; called {known}."
    app, method = (spec.app, spec.method) if spec else name.partition("_")[::2]
    action, note = _with_arguments(app, method, arguments)
    return action, " ".join(n for n in (renamed, note) if n) or None


def known_prefix(name: str) -> str | None:
    """The tool whose name ``name`` extends at an underscore (``ticketdesk_get_ticket_details``
    -> ``ticketdesk_get_ticket``), the longest if several do; None if none does. Small models
    copy a tool's name and run on into the task's words; the call they meant is not in doubt,
    and the arguments still have to fit that tool's signature."""
    found = [n for n in BY_NAME if name.startswith(n + "_")]
    return max(found, key=len) if found else None


def _with_arguments(app: str, method: str, arguments: Any) -> tuple[dict[str, Any], str | None]:
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


def arguments_json(arguments: Any) -> str:
    """A call's arguments as the JSON text of an object, what the conversation history holds
    (chat templates and servers parse it back): a dict or JSON-object text as canonical JSON,
    anything else as ``{}`` (the note answering the call says what was wrong with it)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return "{}"
    return json.dumps(arguments if isinstance(arguments, dict) else {}, ensure_ascii=False)


# ------------------------------------------------------------------ tool calls written in text
#
# A server without a tool parser for the model (or a model that ignores the template's format)
# returns the call in the reply's text. These are the formats open models write, tried in
# order; the first call found is the action.

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|<\|im_end\|>|$)", re.S)
"""Hermes / Qwen / SmolLM: ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` (an
unclosed block at the end of a reply cut by max tokens counts too)."""
_FUNCTION_TAG = re.compile(r"<function=([\w.\-]+)>\s*(.*?)\s*(?:</function>|$)", re.S)
"""Llama 3.1's built-in form: ``<function=name>{...}</function>``."""
_FENCE = re.compile(r"```(?:json|tool_call|tool)?\s*\n?(.*?)```", re.S)


@dataclass(frozen=True, slots=True)
class TextCall:
    """A tool call found in a reply's text: the name as written, and its arguments (a dict,
    or the raw text when they did not parse)."""

    name: str
    arguments: Any
    format: str
    """Which form it was written in (``hermes``, ``json``, ``fenced_json``, ``function``,
    ``function_tag``): analytics can count what a model writes."""


def _json_objects(text: str) -> list[Any]:
    """Every JSON value that starts at a ``{`` or ``[`` in ``text`` and parses, outermost
    first, left to right."""
    decoder = json.JSONDecoder()
    found, i = [], 0
    while True:
        starts = [j for j in (text.find("{", i), text.find("[", i)) if j != -1]
        if not starts:
            return found
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            i = start + 1
            continue
        found.append(value)
        i = end


def _call_of(value: Any) -> tuple[str, Any] | None:
    """(name, arguments) of a JSON value shaped like a call: ``{"name", "arguments"}`` (or
    ``parameters``/``args``/``input``), OpenAI's ``{"function": {...}}``, the same wrapped in a
    one-call list or under ``tool_calls``, or ``{"tool": name, ...}``."""
    if isinstance(value, list) and value:
        return _call_of(value[0])
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("tool_calls"), list):
        return _call_of(value["tool_calls"])
    if isinstance(value.get("function"), dict):
        return _call_of(value["function"])
    name = value.get("name", value.get("tool", value.get("tool_name")))
    if not isinstance(name, str) or not name:
        return None
    for key in ("arguments", "parameters", "args", "input", "params"):
        if key in value:
            return name, value[key]
    return name, {}


def _python_call(text: str) -> TextCall | None:
    """``tool_name(a="x", b=2)`` or ``tool_name({"a": "x"})`` for a known tool name (also
    written ``app.method``), arguments read as Python literals (never evaluated)."""
    names = "|".join(re.escape(n) for n in sorted(BY_NAME, key=len, reverse=True))
    dotted = "|".join(re.escape(f"{s.app}.{s.method}") for s in BY_NAME.values())
    for found in re.finditer(rf"\b({names}|{dotted})\s*\(", text):
        name = found.group(1).replace(".", "_")
        start = found.end() - 1
        depth, end, quote, k = 0, None, "", start - 1
        while k + 1 < len(text):
            k += 1
            ch = text[k]
            if quote:
                if ch == "\\":
                    k += 1  # an escaped character, whatever it is
                elif ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth == 0:
                    end = k
                    break
        if end is None or text[end + 1 : end + 2] == ":":
            continue  # unclosed, or a signature (``name(arg): what it does``) echoed, not a call
        try:
            node = ast.parse("f" + text[start : end + 1], mode="eval").body
            assert isinstance(node, ast.Call)
            if node.args:
                if len(node.args) != 1 or node.keywords:
                    continue
                arguments = ast.literal_eval(node.args[0])
            else:
                arguments = {
                    kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None
                }
        except (SyntaxError, ValueError, AssertionError, TypeError, RecursionError):
            continue
        return TextCall(name, arguments, "function")
    return None


_ECHOED_RESULT = re.compile(r"<tool_response>.*?(?:</tool_response>|$)", re.S)
"""A ``<tool_response>`` block a model writes itself (a small one imitates the results it
has read): what it holds is a result's text, whose messages name tools
(``ticketdesk_list_tickets()``), not a call."""


def find_text_call(text: str) -> TextCall | str | None:
    """The first tool call written in ``text`` outside any ``<tool_response>`` block the
    model wrote; a string saying what was wrong when a block meant as a call (a
    ``<tool_call>`` block) does not parse; None when there is no call."""
    text = _ECHOED_RESULT.sub(" ", text)
    hermes = _HERMES.search(text)
    if hermes is not None:
        body = hermes.group(1)
        for value in _json_objects(body):
            call = _call_of(value)
            if call is not None:
                return TextCall(call[0], call[1], "hermes")
        return f"the <tool_call> block is not a JSON object with a name: {clip(body, 200)!r}"
    tag = _FUNCTION_TAG.search(text)
    if tag is not None:
        values = _json_objects(tag.group(2))
        return TextCall(tag.group(1), values[0] if values else tag.group(2), "function_tag")
    for fence in _FENCE.finditer(text):
        for value in _json_objects(fence.group(1)):
            call = _call_of(value)
            if call is not None:
                return TextCall(call[0], call[1], "fenced_json")
    for value in _json_objects(text):
        call = _call_of(value)
        if call is not None:
            return TextCall(call[0], call[1], "json")
    return _python_call(text)


def parse_text_tool_call(text: str) -> tuple[dict[str, Any], str | None]:
    """The action of the first tool call written in ``text`` (any form `find_text_call`
    reads), or a logged invalid action when there is none or it does not parse."""
    found = find_text_call(text)
    if found is None:
        return junk("no_tool_call", content=text), NO_CALL_NOTE
    if isinstance(found, str):
        return junk("bad_tool_call", content=text, error=found), BAD_CALL_NOTE
    return action_for_call(found.name.replace(".", "_"), found.arguments)


NO_CALL_NOTE = (
    "Your reply called no tool. Call exactly one tool, as "
    '<tool_call>{"name": "...", "arguments": {...}}</tool_call>.'
)
BAD_CALL_NOTE = 'The tool call did not parse: write {"name": "...", "arguments": {...}}.'


# ------------------------------------------------------------------ tools in the prompt

TOOLS_HEADER = "\n\nTools:"
TOOLS_FOOTER = (
    "\n\nTo call a tool, reply with only:\n<tool_call>\n"
    '{"name": <tool-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def tool_line(tool: dict[str, Any]) -> str:
    """One tool as a line a small model reads: ``- name(arg, arg): first sentence.``. The
    catalogue's descriptions open with the dotted signature (``ticketdesk.get_ticket(...): ``),
    which is dropped: a model copies what it sees, and only the flat name is a tool."""
    f = tool.get("function", tool)
    args = ", ".join(f.get("parameters", {}).get("properties", {}) or {})
    text = str(f.get("description", "")).split("): ", 1)[-1].split(". ")[0]
    return f"\n- {f['name']}({args}): {text}"


def system_prompt_with_tools(tools: list[dict[str, Any]], system: str = SYSTEM_PROMPT) -> str:
    """The system prompt with the tools listed in it, exactly as `HERMES_CHAT_TEMPLATE` (the
    template the local model is served and trained with) renders ``tools``: one line per tool
    and the Hermes ``<tool_call>`` form. For a server whose chat template shows no tools."""
    return system + TOOLS_HEADER + "".join(tool_line(t) for t in tools) + TOOLS_FOOTER


COMPACT_SYSTEM_PROMPT = (
    "You are an operations assistant. You do a task by calling tools, one per turn. "
    "Look things up before you act; do not guess ids or names."
)
"""The system prompt for a small model (``prompt="compact"``): a 135M model loses the task in
the long one, and echoes it instead of calling a tool."""

EXAMPLE_TASK = "Task: Read ticket TKT-0001.\n\nYou have 5 steps. Call one tool per turn."
EXAMPLE_CALL = (
    '<tool_call>\n{"name": "ticketdesk_get_ticket", "arguments": {"ticket_id": "TKT-0001"}}'
    "\n</tool_call>"
)


def one_shot() -> list[dict[str, Any]]:
    """An example turn before the task (``prompt="compact"``): a made-up task and the call
    that answers it, as text in the Hermes form. A 135M model writes that form when it has
    seen it once, and not from the format's description alone. Its ticket is in no world
    (their ids run from TKT-1000 to TKT-9999), so the example gives nothing away."""
    return [
        {"role": "user", "content": EXAMPLE_TASK},
        {"role": "assistant", "content": EXAMPLE_CALL},
    ]


def tool_response(content: str) -> str:
    """A tool's answer as a user message, the way Qwen2.5's template renders a tool message."""
    return f"<tool_response>\n{content}\n</tool_response>"
