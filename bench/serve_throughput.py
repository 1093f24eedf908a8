"""Serving throughput on loopback: steps/s over `/ws` and over stateful HTTP (`POST /step` with
the `episode_id`), each with the ratio to a no-op OpenEnv environment served the same way
(OpenEnv's `create_app` under uvicorn, one worker) in the same run.

The client replays recorded calls of realistic episodes (the oracle mixed with random calls),
one request at a time, so the figure is latency-bound like an agent's loop. CompanyOS runs on
its default durable store (SQLite, a commit per step) and, to separate serving from storage, on
the in-memory store.

    python bench/serve_throughput.py [--steps N] [--rounds R] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import websockets
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from workload import record_episodes  # noqa: E402

from tests.serving import running_server  # noqa: E402

Episodes = list[tuple[dict[str, Any], list[dict[str, Any]]]]


def recorded(n: int) -> Episodes:
    return [
        (kw, [a.model_dump(exclude={"metadata"}, exclude_none=True) for a in actions])
        for kw, actions in record_episodes(n)
    ]


async def ws_rate(url: str, episodes: Episodes, noop: bool) -> float:
    steps, elapsed = 0, 0.0
    async with websockets.connect(url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        for kwargs, actions in episodes:
            await ws.send(json.dumps({"type": "reset", "data": kwargs}))
            await ws.recv()
            t = time.perf_counter()
            for a in actions:
                await ws.send(json.dumps({"type": "step", "data": {"value": 1} if noop else a}))
                reply = json.loads(await ws.recv())
                assert reply["type"] == "observation", reply
            elapsed += time.perf_counter() - t
            steps += len(actions)
    return steps / elapsed


def http_rate(url: str, episodes: Episodes, noop: bool) -> float:
    steps, elapsed = 0, 0.0
    with httpx.Client(base_url=url, timeout=30) as client:
        for kwargs, actions in episodes:
            obs = client.post("/reset", json=kwargs).json()["observation"]
            eid = obs.get("episode_id")
            t = time.perf_counter()
            for a in actions:
                body = {"action": {"value": 1} if noop else {**a, "episode_id": eid}}
                r = client.post("/step", json=body)
                assert r.status_code == 200, r.text
            elapsed += time.perf_counter() - t
            steps += len(actions)
    return steps / elapsed


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=3000, help="steps per round (default 3000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    console = Console()
    episodes = recorded(args.steps)
    n = sum(len(a) for _, a in episodes)
    tmp = Path(tempfile.mkdtemp(prefix="companyos-serve-bench-"))
    rates: dict[str, list[float]] = {}
    with (
        running_server(
            "",
            "--ws-per-message-deflate",
            "false",
            module="noop_server:app",
            extra_path=ROOT / "bench",
        ) as noop,
        running_server(f"sqlite:///{tmp / 'bench.db'}") as durable,
        running_server("memory://") as memory,
    ):
        runs: dict[str, Callable[[], float]] = {
            "/ws: no-op OpenEnv env": lambda: asyncio.run(ws_rate(noop, episodes, True)),
            "/ws: CompanyOS, SQLite": lambda: asyncio.run(ws_rate(durable, episodes, False)),
            "/ws: CompanyOS, memory": lambda: asyncio.run(ws_rate(memory, episodes, False)),
            "HTTP: no-op OpenEnv env": lambda: http_rate(noop, episodes, True),
            "HTTP (stateful): CompanyOS, SQLite": lambda: http_rate(durable, episodes, False),
            "HTTP (stateful): CompanyOS, memory": lambda: http_rate(memory, episodes, False),
        }
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("rounds", total=args.rounds * len(runs))
            for _ in range(args.rounds):
                for name, run in runs.items():
                    rates.setdefault(name, []).append(run())
                    progress.advance(task)
    med = {k: statistics.median(v) for k, v in rates.items()}
    table = Table(title=f"Serving throughput on loopback ({n} steps x {args.rounds} rounds)")
    for col in ("transport and environment", "median steps/s", "ratio to no-op"):
        table.add_column(col, justify="left" if col.startswith("transport") else "right")
    results: dict[str, Any] = {"steps_per_round": n, "rounds": args.rounds, "configs": {}}
    for name, rate in med.items():
        ref = (
            med["/ws: no-op OpenEnv env"]
            if name.startswith("/ws")
            else med["HTTP: no-op OpenEnv env"]
        )
        table.add_row(name, f"{rate:,.0f}", f"{rate / ref:.2f}")
        results["configs"][name] = {"median": rate, "all": rates[name], "ratio_to_noop": rate / ref}
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
