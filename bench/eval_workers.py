"""How much `companyos eval --workers 2` gains over `--workers 1`, three ways:

- in-process (worker processes, the environment is CPU-bound Python);
- against a server, a CPU-bound agent (random: client and server share the machine's cores);
- against a server, an LLM agent whose model takes 30 ms a reply (a local fake endpoint):
  waiting dominates, as with real models, and workers overlap it.

    python bench/eval_workers.py [--rounds 3]

Each run is its own `companyos eval` process; rounds alternate one and two workers (machines
are noisy); medians of the run times that `eval` reports (the play itself, not start-up) are
compared.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fake_llm import fake_endpoint  # noqa: E402
from tests.serving import running_server  # noqa: E402


def seconds(out: Path, *args: str) -> tuple[float, int]:
    """One `companyos eval` in a process of its own, as a user runs it (forked workers copy
    their parent: a fresh one is small)."""
    cmd = [sys.executable, "-m", "companyos", "eval", *args, "--no-plots", "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    config = json.loads((out / "results.json").read_text())["config"]
    return config["seconds"], config["episodes"]


def compare(tmp: Path, rounds: int, *args: str) -> tuple[float, float, int]:
    times: dict[int, list[float]] = {1: [], 2: []}
    episodes = 0
    for i in range(rounds):
        for workers in (1, 2):
            t, episodes = seconds(tmp / f"w{workers}-{i}", *args, "--workers", str(workers))
            times[workers].append(t)
    return statistics.median(times[1]), statistics.median(times[2]), episodes


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    baseline = ["--suite", "test", "--per-cell", "5"]
    rows = []
    with tempfile.TemporaryDirectory() as d, ExitStack() as stack:
        tmp = Path(d)
        rows.append(
            (
                "in-process: random, naive, oracle",
                *compare(
                    tmp / "a",
                    args.rounds,
                    "--agent",
                    "random,naive,oracle",
                    "--suite",
                    "test",
                    "--per-cell",
                    "10",
                    "--store",
                    "memory://",
                ),
            )
        )
        url = stack.enter_context(running_server(f"sqlite:///{tmp}/server.db"))
        rows.append(
            (
                "server: random",
                *compare(tmp / "b", args.rounds, "--agent", "random", *baseline, "--url", url),
            )
        )
        llm_url, _ = stack.enter_context(fake_endpoint([], delay=0.03))
        llm = ["--agent", "llm", "--model", "fake", "--llm-url", llm_url, "--max-steps", "5"]
        rows.append(
            (
                "server: llm (30 ms a reply)",
                *compare(
                    tmp / "c",
                    args.rounds,
                    *llm,
                    "--suite",
                    "test",
                    "--per-cell",
                    "1",
                    "--difficulty",
                    "0,2",
                    "--url",
                    url,
                ),
            )
        )
    table = Table("configuration", "episodes", "1 worker (s)", "2 workers (s)", "ratio")
    for name, one, two, episodes in rows:
        table.add_row(name, str(episodes), f"{one:.2f}", f"{two:.2f}", f"{one / two:.2f}x")
    Console().print(table)


if __name__ == "__main__":
    main_()
