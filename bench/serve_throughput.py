"""Serving throughput on loopback: steps/s over `/ws` and over stateful HTTP (`POST /step` with
the `episode_id`), and the server's own CPU per step (user + system time of the server process,
read from /proc around each episode's steps: resets are not counted, a new instance of a
generated family costing milliseconds), each with the ratio to a no-op OpenEnv
environment served the same way (OpenEnv's `create_app` under uvicorn, one worker) in the same
run. The CPU figure is what a server pays per step whatever else the machine runs; the wall
figure also carries the client's time and the machine's load.

The client replays recorded calls of realistic episodes (the oracle mixed with random calls),
one request at a time, so the figure is latency-bound like an agent's loop. CompanyOS runs on
its default durable store (SQLite, a commit per step) and, to separate serving from storage, on
the in-memory store; and, to separate the step from serving it, as the same server whose steps
do no work (`null_step_server.py`: each answers its episode's reset observation, tools left
out): the real server's CPU a step less that one's is what the step itself costs a server.

A second table measures that cost directly, over `/ws`: the same servers, memory and SQLite,
with each step's own CPU counted inside them (`timed_step_server.py`: the thread's CPU clock
read as the step starts and as it returns), beside the whole process's CPU a step. The step
alone, set against `step_throughput.py`'s in-process rows, says what a server's surroundings
do to a step's cost; the rest is serving it (and, on SQLite, the store's checkpoint thread).

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

import bench_options


def options() -> argparse.ArgumentParser:
    parser = bench_options.parser(__doc__)
    parser.add_argument("--steps", type=int, default=3000, help="steps per round (default 3000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    return bench_options.with_json(parser)


if __name__ == "__main__":
    options().parse_args()  # --help answers here, before the imports below (seconds)

import httpx  # noqa: E402
import websockets  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from workload import record_episodes  # noqa: E402

from tests.serving import ServerProcess, process_cpu  # noqa: E402

Episodes = list[tuple[dict[str, Any], list[dict[str, Any]]]]


def recorded(n: int) -> Episodes:
    return [
        (kw, [a.model_dump(exclude={"metadata"}, exclude_none=True) for a in actions])
        for kw, actions in record_episodes(n)
    ]


Rate = tuple[float, float]
"""Steps per second (wall) and the server's CPU seconds per step, both over steps only."""


async def ws_rate(url: str, episodes: Episodes, noop: bool, cpu: Callable[[], float]) -> Rate:
    steps, elapsed, spent = 0, 0.0, 0.0
    async with websockets.connect(url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        for kwargs, actions in episodes:
            await ws.send(json.dumps({"type": "reset", "data": kwargs}))
            await ws.recv()
            c, t = cpu(), time.perf_counter()
            for a in actions:
                await ws.send(json.dumps({"type": "step", "data": {"value": 1} if noop else a}))
                reply = json.loads(await ws.recv())
                assert reply["type"] == "observation", reply
            elapsed += time.perf_counter() - t
            spent += cpu() - c
            steps += len(actions)
    return steps / elapsed, spent / steps


def http_rate(url: str, episodes: Episodes, noop: bool, cpu: Callable[[], float]) -> Rate:
    steps, elapsed, spent = 0, 0.0, 0.0
    with httpx.Client(base_url=url, timeout=30) as client:
        for kwargs, actions in episodes:
            obs = client.post("/reset", json=kwargs).json()["observation"]
            eid = obs.get("episode_id")
            c, t = cpu(), time.perf_counter()
            for a in actions:
                body = {"action": {"value": 1} if noop else {**a, "episode_id": eid}}
                r = client.post("/step", json=body)
                assert r.status_code == 200, r.text
            elapsed += time.perf_counter() - t
            spent += cpu() - c
            steps += len(actions)
    return steps / elapsed, spent / steps


def step_cpu(url: str) -> tuple[int, int]:
    """(steps, their CPU nanoseconds) so far, from a `timed_step_server.py` server."""
    got = httpx.get(url + "/bench/step-cpu", timeout=30).json()
    return int(got["steps"]), int(got["cpu_ns"])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = options().parse_args(argv)
    console = Console()
    episodes = recorded(args.steps)
    n = sum(len(a) for _, a in episodes)
    tmp = Path(tempfile.mkdtemp(prefix="companyos-serve-bench-"))
    rates: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    servers = {
        "noop": ServerProcess(
            "",
            "--ws-per-message-deflate",
            "false",
            module="noop_server:app",
            extra_path=ROOT / "bench",
        ),
        "durable": ServerProcess(f"sqlite:///{tmp / 'bench.db'}"),
        "memory": ServerProcess("memory://"),
        "null": ServerProcess("memory://"),
    }
    servers["memory, step timed"] = ServerProcess("memory://")
    servers["SQLite, step timed"] = ServerProcess(f"sqlite:///{tmp / 'timed.db'}")
    # The same `companyos serve`, its steps doing no work (`null_step_server.py`), or with each
    # step's own CPU counted (`timed_step_server.py`).
    servers["null"].cmd[1:3] = [str(ROOT / "bench" / "null_step_server.py")]
    for timed in ("memory, step timed", "SQLite, step timed"):
        servers[timed].cmd[1:3] = [str(ROOT / "bench" / "timed_step_server.py")]
    step_cpus: dict[str, list[float]] = {}
    try:
        urls = {k: s.start() for k, s in servers.items()}

        def ws(noop: bool) -> Callable[[str, Callable[[], float]], Rate]:
            return lambda u, cpu: asyncio.run(ws_rate(u, episodes, noop, cpu))

        def http(noop: bool) -> Callable[[str, Callable[[], float]], Rate]:
            return lambda u, cpu: http_rate(u, episodes, noop, cpu)

        runs: dict[str, tuple[str, Callable[[str, Callable[[], float]], Rate]]] = {
            "/ws: no-op OpenEnv env": ("noop", ws(True)),
            "/ws: CompanyOS, SQLite": ("durable", ws(False)),
            "/ws: CompanyOS, memory": ("memory", ws(False)),
            "/ws: CompanyOS, steps doing nothing": ("null", ws(False)),
            "HTTP: no-op OpenEnv env": ("noop", http(True)),
            "HTTP (stateful): CompanyOS, SQLite": ("durable", http(False)),
            "HTTP (stateful): CompanyOS, memory": ("memory", http(False)),
            "HTTP (stateful): CompanyOS, steps doing nothing": ("null", http(False)),
        }
        timed = ("memory, step timed", "SQLite, step timed")
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("rounds", total=args.rounds * (len(runs) + len(timed)))
            for _ in range(args.rounds):
                for name, (which, run) in runs.items():
                    rate, cpu_step = run(urls[which], process_cpu(servers[which].pid))
                    rates.setdefault(name, []).append(rate)
                    cpus.setdefault(name, []).append(cpu_step)
                    progress.advance(task)
                for which in timed:
                    before = step_cpu(urls[which])
                    _, cpu_step = ws(False)(urls[which], process_cpu(servers[which].pid))
                    after = step_cpu(urls[which])
                    cpus.setdefault(which, []).append(cpu_step)
                    step_cpus.setdefault(which, []).append(
                        (after[1] - before[1]) / 1e9 / max(1, after[0] - before[0])
                    )
                    progress.advance(task)
    finally:
        for s in servers.values():
            s.stop()
    med = {k: statistics.median(v) for k, v in rates.items()}
    cpu = {k: statistics.median(v) for k, v in cpus.items()}
    step_alone = {k: statistics.median(v) for k, v in step_cpus.items()}
    table = Table(title=f"Serving throughput on loopback ({n} steps x {args.rounds} rounds)")
    cols = ("transport and environment", "steps/s", "x no-op", "server CPU/step", "x no-op")
    for col in cols:
        table.add_column(col, justify="left" if col.startswith("transport") else "right")
    results: dict[str, Any] = {"steps_per_round": n, "rounds": args.rounds, "configs": {}}
    for name, rate in med.items():
        ref = "/ws: no-op OpenEnv env" if name.startswith("/ws") else "HTTP: no-op OpenEnv env"
        # Ratios above 1 are better than the no-op: steps/s over theirs, their CPU over ours.
        r_wall, r_cpu = rate / med[ref], cpu[ref] / cpu[name] if cpu[name] else float("nan")
        table.add_row(
            name, f"{rate:,.0f}", f"{r_wall:.2f}", f"{cpu[name] * 1e6:,.0f} us", f"{r_cpu:.2f}"
        )
        results["configs"][name] = {
            "median": rate,
            "all": rates[name],
            "ratio_to_noop": r_wall,
            "server_cpu_per_step": cpu[name],
            "server_cpu_all": cpus[name],
            "cpu_ratio_to_noop": r_cpu,
        }
    console.print(table)
    inside = Table(title="Inside the server: a /ws step's own CPU (median of the rounds)")
    for col in ("store", "server CPU a step", "the step alone", "serving it", "step share"):
        inside.add_column(col, justify="left" if col == "store" else "right")
    results["step_inside_server"] = {}
    for which, alone in step_alone.items():
        whole = cpu[which]
        inside.add_row(
            which.split(",")[0],
            f"{whole * 1e6:,.0f} us",
            f"{alone * 1e6:,.0f} us",
            f"{(whole - alone) * 1e6:,.0f} us",
            f"{alone / whole:.0%}",
        )
        results["step_inside_server"][which] = {
            "server_cpu_per_step": whole,
            "step_cpu": alone,
            "step_cpu_all": step_cpus[which],
        }
    console.print(inside)
    console.print(
        "the step alone: its thread's CPU from entering to leaving CompanyOSEnvironment.step "
        "(timed_step_server.py); compare step_throughput.py's in-process rows."
    )
    bench_options.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
