"""SmolLM2-135M-Instruct, a real model, plays CompanyOS through `companyos eval --agent llm`
behind `transformers serve` (an OpenAI-compatible endpoint on the CPU). Success is not
expected of a 135M model; what is checked is that every reply is logged, turned into a call
the environment records (valid or invalid), stored raw in the log, and accounted in tokens
and time."""

from __future__ import annotations

import json

import pytest

from companyos.cli import main
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.events.types import AgentReplied, InvalidAction, ToolCalled, replies_stream

from .real_model import needs_real_model, served_model
from .serving import free_port

pytestmark = needs_real_model


@pytest.mark.timeout(3600)  # minutes of CPU on a shared machine
def test_smollm2_plays_real_episodes_through_eval(tmp_path):
    out, store = tmp_path / "out", sqlite_url(tmp_path / "events.db")
    with served_model(free_port(), tmp_path / "serve.log") as url:
        model = json.loads(__import__("httpx").get(f"{url}/models").text)["data"][0]["id"]
        code = main(
            [
                "eval",
                "--agent",
                "llm",
                "--llm-url",
                url,
                "--model",
                model,
                "--instance",
                "expense_report-d0-s1000000,vendor_onboarding-d0-s1000000",
                "--max-steps",
                "2",
                "--max-tokens",
                "48",
                "--temperature",
                "0.7",
                "--prompt",
                "compact",
                "--llm-timeout",
                "600",
                "--store",
                store,
                "--no-plots",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 2
    sql = SQLEventStore(store)
    try:
        for e in episodes:
            assert e["steps"] == 2 and e["outcome"] in ("timeout", "failure", "success")
            assert e["requests"] == 2 and e["prompt_tokens"] > 1000 and e["completion_tokens"] > 0
            events = [r.event for r in sql.read(e["episode_id"])]
            calls = [ev for ev in events if isinstance(ev, ToolCalled)]
            assert len(calls) == 2 and events[0].agent == f"llm:{model}"[:64]
            for entry, call in zip(e["transcript"], calls, strict=True):
                # The raw reply is logged; the call the log holds is what the reply said.
                assert isinstance(entry["content"], str) and entry["latency_s"] > 0
                if call.app == "llm":  # no usable call: the reply itself is in the log
                    assert call.method in ("no_tool_call", "bad_tool_call")
                    assert call.params["content"][:40] == entry["content"][:40]
                else:  # a call, read from the text or parsed by the server
                    assert entry.get("text_call") or entry.get("tool_calls")
            # The raw replies are in the log too, beside the episode, one per step.
            replies = [r.event for r in sql.read(replies_stream(e["episode_id"]))]
            assert [r.step for r in replies] == [1, 2]
            for reply, entry in zip(replies, e["transcript"], strict=True):
                assert isinstance(reply, AgentReplied) and reply.content == entry.get("content", "")
                assert reply.completion_tokens == entry.get("completion_tokens")
            # Every invalid call is an event with a message, and counted as an error.
            invalid = [ev for ev in events if isinstance(ev, InvalidAction)]
            assert all(ev.message for ev in invalid) and len(invalid) <= e["errors"]
    finally:
        sql.close()
    res = json.loads((out / "results.json").read_text())
    assert res["config"]["llm"]["model"] == model and res["config"]["llm"]["max_tokens"] == 48
    assert res["summary"]["llm"]["all"]["prompt_tokens"] == sum(
        e["prompt_tokens"] for e in episodes
    )
