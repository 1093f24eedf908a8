"""`companyos eval`: pass^k, the acceptance runs (the oracle reliably succeeds, the random agent
about never does), workers in-process and against a server, the outputs, the LLM agent
through the command, and errors that say what to do."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from companyos.agents.registry import AGENTS
from companyos.agents.stats import Record, pass_hat_k, summarize
from companyos.cli import main
from companyos.domain import ORIGINAL_FAMILIES
from companyos.events.sql import SQLEventStore, sqlite_url

from .fake_llm import fake_endpoint, tool
from .serving import free_port, running_server
from .test_llm_agent import oracle_actions


def evaluate(tmp_path: Path, *args: str, out: str = "out") -> dict[str, Any]:
    assert main(["eval", *args, "--out", str(tmp_path / out)]) == 0
    return json.loads((tmp_path / out / "results.json").read_text())


def outcomes(results: dict[str, Any]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return {
        (e["agent"], e["family"], e["difficulty"], e["seed"], e["trial"]): (
            e["outcome"],
            e["steps"],
            e["total_return"],
        )
        for e in results["episodes"]
    }


# ------------------------------------------------------------------ pass^k


def test_pass_hat_k_is_taus_estimate():
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0
    assert pass_hat_k(4, 2, 1) == 0.5
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)  # C(2,2)/C(4,2)
    assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)
    with pytest.raises(ValueError):
        pass_hat_k(2, 1, 3)


def test_pass_k_averages_over_instances():
    def rec(seed: int, trial: int, ok: bool) -> Record:
        return Record("a", "f", 2, seed, trial, "e", "success" if ok else "timeout", 5, 1.0, 0, 0.1)

    # one instance always succeeds, one half the time: pass^1 = 0.75, pass^2 = (1 + 1/6) / 2
    records = [rec(1, t, True) for t in range(4)] + [rec(2, t, t < 2) for t in range(4)]
    s = summarize(records)
    assert s.instances == 2 and s.episodes == 8
    assert s.pass_k == pytest.approx((0.75, (1 + 1 / 6) / 2, 0.5, 0.5))
    assert s.pass_k[0] == s.success


# ------------------------------------------------------------------ acceptance


def test_oracle_passes_every_trial_and_everything_is_written(tmp_path):
    """The acceptance run on a slice of the test suite (the full one is in the README):
    every instance, every trial, succeeds: pass^4 = 1.0. Episodes are stored, labelled."""
    store = sqlite_url(tmp_path / "events.db")
    res = evaluate(
        tmp_path, "--agent", "oracle", "--per-cell", "1", "--trials", "4", "--store", store
    )
    summary = res["summary"]["oracle"]
    assert res["config"]["episodes"] == 12 * 4 * 4 == len(res["episodes"])
    assert summary["all"]["success"] == 1.0
    assert summary["all"]["pass_k"] == {"1": 1.0, "2": 1.0, "3": 1.0, "4": 1.0}
    assert len(summary["by_family_and_difficulty"]) == 48
    assert all(c["pass_k"]["4"] == 1.0 for c in summary["by_family_and_difficulty"])
    out = tmp_path / "out"
    for png in ("success_by_difficulty.png", "return_distribution.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "results.md").read_text()
    assert res["config"]["command"] in md and "| oracle | all | 192 | 100.0% |" in md
    assert "companyos eval --agent oracle --suite test --per-cell 1 --trials 4" in md
    # Every episode is in the log, labelled with its agent, with the outcome reported.
    sql = SQLEventStore(store)
    try:
        for e in res["episodes"][:20]:
            records = sql.read(e["episode_id"])
            assert records[0].event.agent == "oracle"
            assert records[-1].type == "EpisodeEnded" and records[-1].event.outcome == "success"
    finally:
        sql.close()


def test_random_agent_on_the_original_workflows_at_the_original_chaos(tmp_path):
    """About as rarely as the original's random agent (~2%), and a lower return than its
    -2.04: repeating a rewarded action no longer pays."""
    res = evaluate(
        tmp_path,
        "--agent",
        "random",
        "--suite",
        "original",
        "--difficulty",
        "2",
        "--per-cell",
        "8",
        "--trials",
        "2",
        "--store",
        "memory://",
        "--no-plots",
    )
    ours = res["original_comparison"]["ours"]["random"]
    assert ours["episodes"] == 5 * 8 * 2
    assert ours["success"] <= 0.05
    assert ours["mean_return"] < res["original_comparison"]["published"]["random"]["mean_return"]
    assert {e["family"] for e in res["episodes"]} == set(ORIGINAL_FAMILIES)
    # Trials of one instance differ: the agent draws a seed per trial.
    by_trial = outcomes(res)
    assert any(
        by_trial[(a, f, d, s, 0)] != by_trial[(a, f, d, s, 1)]
        for (a, f, d, s, t) in by_trial
        if t == 0
    )


def test_workers_in_process_give_the_same_episodes(tmp_path):
    args = ["--agent", "random,naive", "--suite", "test", "--per-cell", "1", "--no-plots"]
    store = sqlite_url(tmp_path / "events.db")
    one = evaluate(tmp_path, *args, "--store", store, out="one")
    two = evaluate(tmp_path, *args, "--store", store, "--workers", "2", out="two")
    assert outcomes(one) == outcomes(two)
    assert len({e["episode_id"] for e in one["episodes"] + two["episodes"]}) == 2 * 96
    sql = SQLEventStore(store)
    try:
        assert len(sql.streams(limit=1000)) >= 2 * 96
    finally:
        sql.close()


def test_workers_against_a_server_play_the_same_episodes(tmp_path):
    args = ["--agent", "random,oracle", "--suite", "test", "--difficulty", "2", "--per-cell", "1"]
    inproc = evaluate(tmp_path, *args, "--store", "memory://", "--no-plots", out="local")
    with running_server(sqlite_url(tmp_path / "server.db")) as url:
        for workers in ("1", "2"):
            res = evaluate(tmp_path, *args, "--url", url, "--workers", workers, "--no-plots")
            assert outcomes(res) == outcomes(inproc)  # the same episodes wherever played
            assert res["summary"]["oracle"]["all"]["success"] == 1.0


def test_the_llm_agent_through_eval(tmp_path):
    instance = {"seed": 1_000_000, "task_id": "expense_report", "difficulty": 1}
    actions = oracle_actions(**instance)
    store = sqlite_url(tmp_path / "events.db")
    with fake_endpoint([tool(f"{a['app']}_{a['method']}", a["params"]) for a in actions]) as (
        url,
        _,
    ):
        res = evaluate(
            tmp_path,
            "--agent",
            "llm",
            "--llm-url",
            url,
            "--model",
            "scripted",
            "--instance",
            "expense_report-d1-s1000000",
            "--store",
            store,
            "--no-plots",
        )
    [episode] = res["episodes"]
    assert episode["outcome"] == "success" and episode["steps"] == len(actions)
    assert res["config"]["llm"]["base_url"] == url and res["config"]["llm"]["model"] == "scripted"
    assert res["config"]["llm"]["temperature"] == 0.0 and res["config"]["versions"]["python"]
    assert episode["requests"] == len(actions) and episode["prompt_tokens"] == len(actions)
    sql = SQLEventStore(store)
    try:
        assert sql.read(episode["episode_id"])[0].event.agent == "llm:scripted"
    finally:
        sql.close()


# ------------------------------------------------------------------ errors that say what to do


def test_help_describes_every_agent_and_output(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    out = capsys.readouterr().out
    for name in AGENTS:
        assert f"\n  {name} " in out
    for word in ("pass^k", "--workers", "--url", "results.json", "return_distribution.png"):
        assert word in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--agent", "gpt"], "unknown agent 'gpt': choose from random, naive, honest, oracle, llm"),
        (["--suite", "test"], "name at least one agent with --agent"),
        (["--agent", "oracle", "--family", "payroll"], "unknown family 'payroll'"),
        (
            ["--agent", "oracle", "--suite", "train", "--family", "contract_renewal"],
            "is not in the train suite",
        ),
        (["--agent", "oracle", "--difficulty", "5"], "difficulty must be one of [0, 1, 2, 3]"),
        (["--agent", "oracle", "--instance", "nope"], "not an instance id: 'nope'"),
        (["--agent", "llm"], "the llm agent needs an OpenAI-compatible endpoint and a model"),
        (
            ["--agent", "oracle", "--url", "http://127.0.0.1:{port}"],
            "start one with `companyos serve`",
        ),
        (
            ["--agent", "llm", "--model", "m", "--llm-url", "http://127.0.0.1:{port}/v1"],
            "cannot reach the LLM endpoint",
        ),
    ],
)
def test_errors_say_what_to_do(args, says, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    port = str(free_port())
    args = [a.replace("{port}", port) for a in args]
    assert main(["eval", *args, "--store", "memory://", "--out", str(tmp_path)]) == 2
    assert says in capsys.readouterr().err


def test_a_refusing_endpoint_stops_eval_with_a_message(tmp_path, capsys):
    with fake_endpoint([("status", 401)]) as (url, _):
        args = ["eval", "--agent", "llm", "--llm-url", url, "--model", "nope", "--per-cell", "1"]
        assert main([*args, "--store", "memory://", "--out", str(tmp_path)]) == 2
    assert "refused the first request" in capsys.readouterr().err


def test_an_unreachable_endpoint_costs_steps_not_a_crash():
    from companyos.agents import play
    from companyos.agents.llm import LLMAgent, LLMSettings
    from companyos.api import CompanyOSEnvironment

    url = f"http://127.0.0.1:{free_port()}/v1"
    agent = LLMAgent(LLMSettings(base_url=url, model="m", max_retries=0, timeout=1.0))
    started = time.perf_counter()
    r = play(CompanyOSEnvironment(), agent, seed=1, task_id=0, difficulty=0, max_steps=3)
    assert r.outcome == "timeout" and r.steps == 3 and r.errors == 3
    assert time.perf_counter() - started < 30
