"""What makes an evaluation reliable: every episode written the moment it ends, a run that
resumes where it stopped (and refuses to mix settings), intervals beside every rate, the
whole configuration recorded, and a real Ctrl-C that loses nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from companyos.agents.stats import Record, bootstrap, summarize, wilson
from companyos.cli import main

from .fake_llm import fake_endpoint

ROOT = Path(__file__).resolve().parents[1]
BASE = ["--agent", "random", "--suite", "test", "--difficulty", "0", "--store", "memory://"]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_wilson_and_bootstrap_intervals():
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and 0.27 < hi < 0.28  # the textbook value, 0.2775
    lo, hi = wilson(10, 10)
    assert 0.72 < lo < 0.73 and hi == 1.0
    lo, hi = wilson(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-3) and hi == pytest.approx(0.5962, abs=1e-3)
    assert bootstrap([1.0] * 5) == (1.0, 1.0)
    lo, hi = bootstrap([0.0, 1.0] * 20)
    assert lo < 0.5 < hi and bootstrap([0.0, 1.0] * 20) == (lo, hi)  # seeded: reproducible


def test_every_summary_has_its_intervals():
    records = [
        Record("a", "f", 0, seed, trial, f"e{seed}{trial}", out, 3, ret, 0, 0.1)
        for seed, outs in enumerate([("success", "success"), ("timeout", "success")])
        for trial, (out, ret) in enumerate(zip(outs, (5.0, 3.0), strict=True))
    ]
    s = summarize(records)
    assert s.success == 0.75 and s.success_ci[0] < 0.75 < s.success_ci[1]
    assert len(s.pass_k_ci) == 2 and s.pass_k_ci[1][0] <= s.pass_k[1] <= s.pass_k_ci[1][1]
    assert s.return_ci[0] < s.mean_return < s.return_ci[1]
    d = s.as_dict()
    assert d["pass_k_ci"]["2"] == list(s.pass_k_ci[1]) and d["success_ci"] == list(s.success_ci)


def test_episodes_are_streamed_and_resume_plays_only_what_is_missing(tmp_path, capsys):
    out = tmp_path / "out"
    args = [*BASE, "--per-cell", "1", "--trials", "2", "--no-plots", "--out", str(out)]
    assert main(["eval", *args, "--family", "expense_report,purchase_order"]) == 0
    first = lines(out / "episodes.jsonl")
    assert len(first) == 4 and all("transcript" in e for e in first)
    config = json.loads((out / "run.json").read_text())
    assert config["instance_ids"] == ["expense_report-d0-s1000000", "purchase_order-d0-s1000000"]
    # The same run, resumed with one episode's line lost (and a half-written line after it):
    # only that episode is played again.
    log = out / "episodes.jsonl"
    kept = log.read_text().splitlines()[:3]
    log.write_text("\n".join(kept) + '\n{"agent": "rand')
    assert main(["eval", *args, "--family", "expense_report,purchase_order", "--resume"]) == 0
    after = lines(log)
    assert len(after) == 4 and after[:3] == first[:3]
    assert after[3]["episode_id"] != first[3]["episode_id"]  # played again
    assert after[3]["total_return"] == first[3]["total_return"]  # the same episode
    res = json.loads((out / "results.json").read_text())
    assert res["config"]["episodes"] == 4 and not res["config"]["interrupted"]
    assert {e["episode_id"] for e in res["episodes"]} == {e["episode_id"] for e in after}
    # Other settings in the same directory are refused, not mixed in.
    capsys.readouterr()
    assert main(["eval", *args, "--resume"]) == 2
    assert "other settings (instance_ids)" in capsys.readouterr().err
    assert len(lines(log)) == 4


def test_the_llm_config_and_usage_are_recorded(tmp_path):
    out = tmp_path / "out"
    with fake_endpoint([]) as (url, _):
        code = main(
            [
                "eval",
                "--agent",
                "llm",
                "--llm-url",
                url,
                "--model",
                "scripted",
                "--temperature",
                "0.7",
                "--max-tokens",
                "64",
                "--instance",
                "expense_report-d0-s1",
                "--max-steps",
                "2",
                "--store",
                "memory://",
                "--no-plots",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    config = json.loads((out / "run.json").read_text())
    assert config["llm"] == {
        "base_url": url,
        "model": "scripted",
        "temperature": 0.7,
        "max_tokens": 64,
        "timeout": 60.0,
        "max_retries": 2,
        "history": None,
        "tools_in_prompt": False,
        "prompt": "full",
    }
    assert config["seed"] == 0 and config["versions"]["companyos"]
    assert "--temperature 0.7" in config["command"] and "--max-tokens 64" in config["command"]
    [episode] = lines(out / "episodes.jsonl")
    assert episode["requests"] == 2 == len(episode["transcript"])
    assert episode["prompt_tokens"] == 2 and episode["model_seconds"] >= 0
    assert episode["transcript"][0]["tool_calls"][0]["name"] == "approvalflow_list_approvals"
    md = (out / "results.md").read_text()
    assert "95% CI" in md and "| llm | all | 1 | 0.0% | 0%-79% |" in md


def _ctrl_c_as_at_a_terminal() -> None:
    """A command started in the background by a shell (``make test &``, a CI runner) inherits
    SIGINT ignored, and Python then leaves it ignored: Ctrl-C is what is tested, so the child
    gets SIGINT's default back, as a command typed at a terminal has it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_writes_what_was_done_and_resume_finishes(tmp_path):
    """A real SIGINT to a real `companyos eval` playing a slow model on two workers."""
    out = tmp_path / "out"
    with fake_endpoint([], delay=0.15) as (url, _):
        cmd = [
            sys.executable,
            "-m",
            "companyos",
            "eval",
            "--agent",
            "llm",
            "--llm-url",
            url,
            "--model",
            "scripted",
            "--suite",
            "test",
            "--difficulty",
            "0",
            "--per-cell",
            "2",
            "--max-steps",
            "3",
            "--store",
            "memory://",
            "--workers",
            "2",
            "--no-plots",
            "--out",
            str(out),
        ]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_ctrl_c_as_at_a_terminal,
        )
        log = out / "episodes.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if log.exists() and len(log.read_text().splitlines()) >= 3:
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 130, stdout + stderr
        assert "interrupted" in stdout and "--resume" in stdout
        done = lines(log)
        res = json.loads((out / "results.json").read_text())
        assert res["config"]["interrupted"] and res["config"]["planned"] == 24
        assert 3 <= len(done) < 24 and len(res["episodes"]) == len(done)
        assert "Interrupted" in (out / "results.md").read_text()
        # --resume plays the rest, and only the rest.
        resumed = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = lines(log)
    keys = [(e["family"], e["seed"], e["trial"]) for e in after]
    assert len(after) == 24 == len(set(keys)) and after[: len(done)] == done
