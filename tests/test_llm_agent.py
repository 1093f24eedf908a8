"""The LLM agent against a local fake OpenAI-compatible endpoint: it completes a scripted
episode with native tool calls, remembers the conversation, takes its tools from the same
catalogue as MCP, and turns every kind of junk reply into an invalid action in the log."""

from __future__ import annotations

import json
from typing import Any

import pytest

from companyos.agents import in_process_oracle, play
from companyos.agents.llm import EndpointRefused, LLMAgent, LLMSettings
from companyos.agents.toolcalls import (
    COMPACT_SYSTEM_PROMPT,
    action_for_call,
    find_text_call,
    function_tools,
    known_prefix,
    parse_text_tool_call,
)
from companyos.api import CompanyOSEnvironment
from companyos.api.mcp import catalogue
from companyos.events.types import InvalidAction, ToolCalled

from .fake_llm import fake_endpoint, tool

INSTANCE = {"seed": 7, "task_id": "vendor_onboarding", "difficulty": 2}


def oracle_actions(**instance: Any) -> list[dict[str, Any]]:
    """The oracle's calls on an instance: a script a model could have written."""
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    actions = []
    obs = env.reset(**instance)
    oracle.reset(obs)
    while not obs.done:
        actions.append(oracle.act(obs))
        obs = env.step(actions[-1])
    assert obs.outcome == "success"
    return actions


def agent_for(url: str, **settings: Any) -> LLMAgent:
    options = {"timeout": 5.0, "max_retries": 1, **settings}
    return LLMAgent(LLMSettings(base_url=url, model="scripted", **options), seed=3)


def steps_of(env: CompanyOSEnvironment) -> list[dict[str, Any]]:
    """Per step of the current episode: the call as logged and the invalid action, if any."""
    assert env.episode is not None
    steps: list[dict[str, Any]] = []
    for r in env.store.read(env.episode.id):
        if isinstance(r.event, ToolCalled):
            steps.append({"app": r.event.app, "method": r.event.method, "params": r.event.params})
            steps[-1]["invalid"] = None
        elif isinstance(r.event, InvalidAction) and steps:
            steps[-1]["invalid"] = (r.event.code, r.event.message)
    return steps


def test_the_tools_are_the_mcp_tools_without_routing():
    tools = function_tools()
    mcp = {name: (description, schema) for name, description, schema in catalogue()[1:]}
    assert [t["function"]["name"] for t in tools] == list(mcp)
    for t in tools:
        fn = t["function"]
        description, schema = mcp[fn["name"]]
        assert t["type"] == "function" and fn["description"] == description
        assert fn["parameters"]["properties"] == {
            k: v for k, v in schema["properties"].items() if k != "episode_id"
        }
        assert fn["parameters"]["additionalProperties"] is False


def test_the_llm_agent_completes_a_scripted_episode():
    actions = oracle_actions(**INSTANCE)
    script = [tool(f"{a['app']}_{a['method']}", a["params"]) for a in actions]
    with fake_endpoint(script) as (url, fake):
        env = CompanyOSEnvironment()
        result = play(env, agent_for(url), **INSTANCE)
    assert result.outcome == "success" and result.steps == len(actions)
    assert result.total_return > 15
    assert [(s["app"], s["method"], s["params"]) for s in steps_of(env)] == [
        (a["app"], a["method"], a["params"]) for a in actions
    ]
    first, second, last = fake.requests[0], fake.requests[1], fake.requests[-1]
    assert first["model"] == "scripted" and first["tools"] == function_tools()
    assert first["seed"] == 3 and first["tool_choice"] == "auto"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "Trey Research" in first["messages"][1]["content"]
    # Memory: every earlier call and its result are in the next request.
    call_id = second["messages"][2]["tool_calls"][0]["id"]
    answer = second["messages"][3]
    assert answer["role"] == "tool" and answer["tool_call_id"] == call_id
    assert json.loads(answer["content"])["step"] == 1
    assert len(last["messages"]) == 2 + 2 * (len(actions) - 1)


def test_history_keeps_whole_turns():
    with fake_endpoint([]) as (url, fake):
        env = CompanyOSEnvironment()
        play(env, agent_for(url, history=2), max_steps=5, **INSTANCE)
    for request in fake.requests:
        roles = [m["role"] for m in request["messages"]]
        assert roles[:2] == ["system", "user"] and len(roles) <= 2 + 2 * 2
        assert roles[2:] == ["assistant", "tool"] * ((len(roles) - 2) // 2)
    assert len(fake.requests[-1]["messages"]) == 6


JUNK = [
    # (scripted replies, the call the log shows, the invalid action's code)
    (
        [tool("ticketdesk_update_ticket", '{"ticket_id": "TKT-4546", "field": ')],
        ("ticketdesk", "update_ticket"),
        "params_not_object",
    ),
    (
        [tool("ticketdesk_close_ticket", {"ticket_id": "TKT-4546"})],
        ("ticketdesk", "close_ticket"),
        "unknown_tool",
    ),
    ([tool("crm_lookup", {"name": "Trey"})], ("crm", "lookup"), "unknown_tool"),
    ([("text", "I would verify the ticket first.")], ("llm", "no_tool_call"), "unknown_tool"),
    ([("empty",)], ("llm", "empty_reply"), "unknown_tool"),
    ([("status", 500), ("status", 500)], ("llm", "api_error"), "unknown_tool"),
    ([("garbage",)], ("llm", "bad_response"), "unknown_tool"),
    ([("sleep", 1.5), ("sleep", 1.5)], ("llm", "api_error"), "unknown_tool"),
    ([("status", 400)], ("llm", "api_error"), "unknown_tool"),  # e.g. a context too long
]


def test_every_kind_of_junk_becomes_a_logged_invalid_action():
    script = [reply for replies, _, _ in JUNK for reply in replies]
    with fake_endpoint(script) as (url, _):
        env = CompanyOSEnvironment()
        result = play(env, agent_for(url, timeout=0.5), max_steps=len(JUNK), **INSTANCE)
    assert result.steps == len(JUNK) and result.outcome == "timeout"
    steps = steps_of(env)
    for step, (_, call, code) in zip(steps, JUNK, strict=True):
        assert (step["app"], step["method"]) == call
        assert step["invalid"] is not None and step["invalid"][0] == code, step
    assert steps[0]["params"].startswith('{"ticket_id"')  # the raw text, as the model sent it
    assert "update_ticket" in steps[1]["invalid"][1]  # the environment says what to do
    assert steps[3]["params"] == {"content": "I would verify the ticket first."}
    assert "InternalServerError" in steps[5]["params"]["error"]
    assert "a proxy's error page" in steps[6]["params"]["body"]
    assert "Timeout" in steps[7]["params"]["error"]
    assert "BadRequestError" in steps[8]["params"]["error"]
    assert result.errors == len(JUNK)


def test_retries_then_the_call_and_only_the_first_of_several():
    script = [
        ("status", 503),
        tool("approvalflow_list_approval_types"),
        ("tools", [("datahub_list_metrics", "{}"), ("ticketdesk_list_tickets", "{}")]),
    ]
    with fake_endpoint(script) as (url, fake):
        env = CompanyOSEnvironment()
        play(env, agent_for(url), max_steps=3, **INSTANCE)
    steps = steps_of(env)
    assert [(s["method"], s["invalid"]) for s in steps[:2]] == [
        ("list_approval_types", None),
        ("list_metrics", None),
    ]
    kept = fake.requests[-1]["messages"]
    assert len(kept[4]["tool_calls"]) == 1  # the history holds only the call that was made
    assert "Only your first tool call was made" in json.loads(kept[5]["content"])["note"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'ok <tool_call>{"name": "ticketdesk_get_ticket", "arguments": {"ticket_id": "T"}}'
            "</tool_call>",
            {"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": "T"}},
        ),
        ("no call here", {"app": "llm", "method": "no_tool_call"}),
        ("<tool_call>{oops</tool_call>", {"app": "llm", "method": "bad_tool_call"}),
        ('<tool_call>["x"]</tool_call>', {"app": "llm", "method": "bad_tool_call"}),
    ],
)
def test_text_tool_calls_parse_or_become_invalid_actions(text, expected):
    action, _ = parse_text_tool_call(text)
    assert {k: action[k] for k in expected} == expected


def test_a_name_run_on_past_a_tools_calls_that_tool_and_says_so():
    action, note = action_for_call(
        "ticketdesk_get_ticket_details_tkt_2675", {"ticket_id": "TKT-2675"}
    )
    assert action == {
        "app": "ticketdesk",
        "method": "get_ticket",
        "params": {"ticket_id": "TKT-2675"},
    }
    assert note == (
        "There is no tool ticketdesk_get_ticket_details_tkt_2675; called ticketdesk_get_ticket."
    )
    # Only at an underscore, and the longest tool it extends; anything else stays unknown.
    assert known_prefix("approvalflow_list_approval_types_all") == (
        "approvalflow_list_approval_types"
    )
    assert known_prefix("ticketdesk_get_tickets") is None
    assert action_for_call("ticketdesk_get_tickets", {})[0]["method"] == "get_tickets"


def test_a_tool_list_echoed_back_is_not_a_call():
    """A small model that repeats its prompt writes ``name(args): description`` lines: a
    signature, not a call."""
    echoed = "Tools:\n- ticketdesk_list_tickets(): List all tickets.\n- ticketdesk_get_ti"
    assert find_text_call(echoed) is None
    assert find_text_call("ticketdesk_list_tickets()").name == "ticketdesk_list_tickets"


def test_a_result_the_model_imitates_is_not_a_call():
    """SmolLM2 answers a result with a `<tool_response>` block of its own, copying messages
    that name tools: nothing in such a block is a call, closed or cut off."""
    echoed = (
        '<tool_response>\n{"error": "ticket_not_found", "message": "No ticket \'X\'. Find '
        'ticket ids with ticketdesk_list_tickets()."}\n</tool_response>'
    )
    assert find_text_call(echoed) is None
    assert find_text_call(echoed[:-20]) is None  # cut by max tokens
    after = echoed + ' <tool_call>{"name": "datahub_list_metrics", "arguments": {}}</tool_call>'
    assert find_text_call(after).name == "datahub_list_metrics"


def test_the_compact_prompt_shows_an_example_call_before_the_task():
    script = [("text", "<tool_call>")] * 3
    with fake_endpoint(script) as (url, fake):
        env = CompanyOSEnvironment()
        play(env, agent_for(url, prompt="compact", history=0), max_steps=3, **INSTANCE)
    for request in fake.requests:  # the example stays when old turns are forgotten
        roles = [m["role"] for m in request["messages"]][:4]
        assert roles == ["system", "user", "assistant", "user"]
        example, task = request["messages"][2], request["messages"][3]
        assert find_text_call(example["content"]).name == "ticketdesk_get_ticket"
        assert "TKT-0001" in example["content"] and task["content"].startswith("Task: ")
        assert "Trey Research" in task["content"]
    assert fake.requests[0]["messages"][0]["content"] == COMPACT_SYSTEM_PROMPT
    with pytest.raises(ValueError, match="prompt must be one of full, compact"):
        LLMSettings(base_url="http://x", model="m", prompt="tiny")


def test_arguments_as_given_or_raw():
    assert action_for_call("datahub_list_metrics", "") == (
        {"app": "datahub", "method": "list_metrics", "params": {}},
        None,
    )
    action, note = action_for_call("datahub_query_metric", "[1]")
    assert action["params"] == "[1]" and note


def test_a_refused_first_request_stops_with_a_message():
    """An unknown model or a missing key is a configuration problem, not the model's junk."""
    with fake_endpoint([("status", 404)]) as (url, _):
        env = CompanyOSEnvironment()
        with pytest.raises(EndpointRefused, match="check --model, the API key"):
            play(env, agent_for(url), **INSTANCE)


@pytest.mark.parametrize(
    ("text", "call"),
    [
        (
            '<tool_call>\n{"name": "ticketdesk_get_ticket", "arguments": {"ticket_id": "T"}}\n',
            ("get_ticket", {"ticket_id": "T"}),  # cut by max tokens before </tool_call>
        ),
        (
            'Sure.\n```json\n{"name": "datahub_query_metric", "parameters": {"metric": "m"}}\n```',
            ("query_metric", {"metric": "m"}),
        ),
        (
            'I will call {"function": {"name": "datahub_list_metrics", "arguments": "{}"}}.',
            ("list_metrics", {}),
        ),
        ('[{"name": "ticketdesk_list_tickets", "arguments": {}}]', ("list_tickets", {})),
        ('ticketdesk_get_ticket(ticket_id="T-1)")', ("get_ticket", {"ticket_id": "T-1)"})),
        ("ticketdesk.get_ticket({'ticket_id': 'T'})", ("get_ticket", {"ticket_id": "T"})),
        ('<function=datahub_list_metrics>{"a": 1}</function>', ("list_metrics", {"a": 1})),
    ],
)
def test_calls_written_in_the_text_in_every_common_form(text, call):
    action, note = parse_text_tool_call(text)
    assert (action["method"], action["params"]) == call and note is None


def test_a_server_without_a_tool_parser_sends_the_call_in_text():
    """The call comes back as text: it is read, the request asked for one call a step, and the
    history keeps the reply as written with the result as a tool response."""
    script = [
        ("text", '<tool_call>{"name": "ticketdesk_list_tickets", "arguments": {}}</tool_call>'),
        ("text", "ticketdesk_get_ticket(ticket_id='nope')"),
        ("text", "I am not sure what to do."),
    ]
    with fake_endpoint(script) as (url, fake):
        env = CompanyOSEnvironment()
        agent = agent_for(url)
        play(env, agent, max_steps=3, **INSTANCE)
    steps = steps_of(env)
    assert [(s["app"], s["method"]) for s in steps] == [
        ("ticketdesk", "list_tickets"),
        ("ticketdesk", "get_ticket"),
        ("llm", "no_tool_call"),
    ]
    assert steps[0]["invalid"] is None and steps[1]["params"] == {"ticket_id": "nope"}
    first = fake.requests[0]
    assert first["parallel_tool_calls"] is False and first["tool_choice"] == "auto"
    assert len(first["tools"]) == len(function_tools())
    history = fake.requests[-1]["messages"]
    assert history[2] == {"role": "assistant", "content": script[0][1]}
    assert history[3]["role"] == "user" and history[3]["content"].startswith("<tool_response>")
    assert [e["text_call"] for e in agent.transcript[:2]] == ["hermes", "function"]
    assert agent.transcript[2]["content"] == "I am not sure what to do."
    for entry in agent.transcript:
        assert entry["latency_s"] >= 0 and entry["prompt_tokens"] == 1


def test_the_history_holds_arguments_as_json():
    script = [tool("ticketdesk_get_ticket", '{"ticket_id": '), tool("datahub_list_metrics")]
    with fake_endpoint(script) as (url, fake):
        play(CompanyOSEnvironment(), agent_for(url), max_steps=2, **INSTANCE)
    call = fake.requests[-1]["messages"][2]["tool_calls"][0]["function"]
    assert call["name"] == "ticketdesk_get_ticket" and json.loads(call["arguments"]) == {}
    assert "not valid JSON" in json.loads(fake.requests[-1]["messages"][3]["content"])["note"]


def test_tools_in_the_prompt_for_a_template_that_shows_none():
    script = [("text", '<tool_call>{"name": "datahub_list_metrics", "arguments": {}}</tool_call>')]
    with fake_endpoint(script) as (url, fake):
        env = CompanyOSEnvironment()
        play(env, agent_for(url, tools_in_prompt=True), max_steps=2, **INSTANCE)
    first = fake.requests[0]
    assert "tools" not in first and "parallel_tool_calls" not in first
    system = first["messages"][0]["content"]
    assert "\n- ticketdesk_get_ticket(ticket_id): Read one ticket" in system
    assert system.endswith("</tool_call>")
    assert steps_of(env)[0]["method"] == "list_metrics"
    answer = fake.requests[-1]["messages"][3]["content"]
    assert answer.startswith("<tool_response>\n") and answer.endswith("\n</tool_response>")
    body = json.loads(answer.removeprefix("<tool_response>").removesuffix("</tool_response>"))
    # Nothing of the grader reaches the model: the tool's answer, the message, the budget.
    assert not {"reward", "return", "total_return", "progress", "milestones"} & set(body)
    assert body["data"] and "steps_remaining" in body


def test_a_server_that_refuses_optional_fields_is_asked_without_them():
    script = [
        ("status", 422, "Unsupported fields in the request: {'parallel_tool_calls'}"),
        tool("datahub_list_metrics"),
        tool("datahub_list_metrics"),
    ]
    with fake_endpoint(script) as (url, fake):
        env = CompanyOSEnvironment()
        play(env, agent_for(url + "/"), max_steps=2, **INSTANCE)
    assert "parallel_tool_calls" in fake.requests[0]
    assert all("parallel_tool_calls" not in r for r in fake.requests[1:])
    assert [s["invalid"] for s in steps_of(env)] == [None, None]
