"""The GRPO example trains: a tiny randomly initialised model with a tokenizer built locally
plays real CompanyOS episodes on a real server, and TRL takes an optimisation step on their
returns. Needs the `train` extra (TRL, PyTorch); skipped without it unless
COMPANYOS_REQUIRE_TRAIN=1 (set by .ci/run, which installs the extra)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections import Counter
from importlib.util import find_spec
from pathlib import Path

import httpx
import pytest

from companyos.events.sql import sqlite_url

from .serving import running_server

ROOT = Path(__file__).resolve().parents[1]

if os.environ.get("COMPANYOS_REQUIRE_TRAIN") != "1" and not (
    find_spec("trl") and find_spec("torch")
):
    pytest.skip(
        "the train extra is not installed: pip install -e '.[train]'", allow_module_level=True
    )


def test_grpo_trains_a_tiny_model_on_rewards_from_real_episodes(tmp_path):
    report = tmp_path / "report.json"
    with running_server(sqlite_url(tmp_path / "server.db")) as url:
        done = subprocess.run(
            [
                sys.executable,
                str(ROOT / "examples" / "train_grpo.py"),
                "--tiny",
                "--url",
                url,
                "--steps",
                "1",
                "--batch",
                "4",
                "--generations",
                "2",
                "--episode-steps",
                "3",
                "--max-new-tokens",
                "8",
                "--lr",
                "1e-2",
                "--output-dir",
                str(tmp_path / "out"),
                "--report",
                str(report),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1"},
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        result = json.loads(report.read_text())
        episodes = result["episodes"]
        # Every reward is the return of an episode the server stored, labelled, finished.
        for e in episodes:
            stored = httpx.get(f"{url}/episodes/{e['episode_id']}").json()
            assert stored["agent"] == "grpo"
            assert stored["outcome"] in ("success", "failure", "timeout")
            assert stored["total_return"] == pytest.approx(e["return"])
            assert stored["steps"] == e["steps"] and e["model_tokens"] > 0
    assert result["global_step"] == 1 and len(episodes) == 4
    assert sorted(Counter(e["instance"] for e in episodes).values()) == [2, 2]  # 2 groups of 2
    [logged] = [h for h in result["log_history"] if "reward" in h]
    assert logged["reward"] == pytest.approx(statistics.mean(e["return"] for e in episodes))
    groups: dict[str, set[float]] = {}
    for e in episodes:
        groups.setdefault(e["instance"], set()).add(e["return"])
    if any(len(returns) > 1 for returns in groups.values()):
        assert result["parameter_change"] > 0  # the optimiser stepped on a real advantage
    else:  # every group's episodes scored alike: GRPO's advantages are all zero
        assert result["parameter_change"] == 0
