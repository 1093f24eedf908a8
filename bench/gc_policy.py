"""The server's garbage-collection policy (`api.heap`) against CPython's default thresholds.

The same server twice over, side by side, on memory and on SQLite: one with the policy, one
with CPython's defaults (`gc_server.py` launches each and records its collector's work). A
client replays recorded episodes over `/ws`, resets included (a new instance is built at each,
as a training loop drawing fresh seeds pays), rounds alternating between the servers. Per
round: the server's CPU per step with its resets (from /proc), the seconds its collections took
per step, its longest single collection, and the slowest answer the client waited for. The
heap grows as a serving process's does (every episode played stays in the episode cache, and
on memory in the store), so later rounds pay more for each full collection.

    python bench/gc_policy.py [--steps N] [--rounds R] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_options


def options() -> argparse.ArgumentParser:
    parser = bench_options.parser(__doc__)
    parser.add_argument("--steps", type=int, default=2000, help="steps per round (default 2000)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds (default 6)")
    return bench_options.with_json(parser)


if __name__ == "__main__":
    options().parse_args()  # --help answers here, before the imports below (seconds)

import asyncio  # noqa: E402

import websockets  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from serve_throughput import Episodes, recorded  # noqa: E402

from tests.serving import ServerProcess, process_cpu  # noqa: E402

POLICIES = {"server": "the policy (api.heap)", "cpython": "CPython's defaults"}


class Server:
    def __init__(self, store: str, policy: str, tmp: Path) -> None:
        self.log = tmp / f"{policy}-{store.split(':')[0]}.json"
        self.process = ServerProcess(store)
        serve = self.process.cmd[self.process.cmd.index("serve") :]
        self.process.cmd = [sys.executable, str(ROOT / "bench" / "gc_server.py"), policy,
                            str(self.log), *serve]  # fmt: skip

    def collected(self) -> dict[str, Any]:
        """The collector's record so far (asked of the server by a signal)."""
        self.log.unlink(missing_ok=True)
        os.kill(self.process.pid, signal.SIGUSR1)
        for _ in range(200):
            if self.log.exists() and self.log.stat().st_size:
                return json.loads(self.log.read_text())
            time.sleep(0.01)
        raise TimeoutError(f"the server did not write {self.log}")


async def play(url: str, episodes: Episodes) -> list[float]:
    """Every answer's wait in seconds (resets and steps)."""
    waits = []
    async with websockets.connect(url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        for kwargs, actions in episodes:
            for message in [{"type": "reset", "data": kwargs}] + [
                {"type": "step", "data": a} for a in actions
            ]:
                t = time.perf_counter()
                await ws.send(json.dumps(message))
                reply = json.loads(await ws.recv())
                waits.append(time.perf_counter() - t)
                assert reply["type"] == "observation", reply
    return waits


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = options().parse_args(argv)
    console = Console()
    episodes = recorded(args.steps)
    steps = sum(len(a) for _, a in episodes)
    tmp = Path(tempfile.mkdtemp(prefix="companyos-gc-bench-"))
    urls = {"memory": lambda policy: "memory://",
            "SQLite": lambda policy: f"sqlite:///{tmp / f'{policy}.db'}"}  # fmt: skip
    servers = {
        (store, policy): Server(url(policy), policy, tmp)
        for store, url in urls.items()
        for policy in POLICIES
    }
    rounds: dict[tuple[str, str], list[dict[str, float]]] = {k: [] for k in servers}
    try:
        started = {k: s.process.start() for k, s in servers.items()}
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("rounds", total=args.rounds * len(servers))
            for _ in range(args.rounds):
                for key, s in servers.items():
                    cpu = process_cpu(s.process.pid)
                    before, c = s.collected(), cpu()  # also starts "longest" afresh
                    waits = asyncio.run(play(started[key], episodes))
                    spent, after = cpu() - c, s.collected()
                    rounds[key].append(
                        {
                            "cpu": spent / steps,
                            "gc": (after["seconds"] - before["seconds"]) / steps,
                            "full": after["collections"][2] - before["collections"][2],
                            "longest": after["longest"],
                            "slowest": max(waits),
                        }
                    )
                    progress.advance(task)
    finally:
        for s in servers.values():
            s.process.stop()
    table = Table(
        title=f"Garbage collection in the server ({steps} steps and {len(episodes)} resets a "
        f"round over /ws, {args.rounds} rounds; median per round, longest over all)"
    )
    for col in ("store", "collector", "CPU/step", "in GC", "full GCs", "longest GC", "slowest"):
        table.add_column(col, justify="left" if col in ("store", "collector") else "right")
    results: dict[str, Any] = {"steps_per_round": steps, "rounds": args.rounds, "rows": {}}
    for (store, policy), rs in rounds.items():
        row = {
            "cpu_per_step": statistics.median(r["cpu"] for r in rs),
            "gc_per_step": statistics.median(r["gc"] for r in rs),
            "full_collections": sum(r["full"] for r in rs),
            "longest_collection": max(r["longest"] for r in rs),
            "slowest_answer": max(r["slowest"] for r in rs),
            "rounds": rs,
        }
        results["rows"][f"{store}, {policy}"] = row
        table.add_row(
            store,
            POLICIES[policy],
            f"{row['cpu_per_step'] * 1e6:,.0f} us",
            f"{row['gc_per_step'] * 1e6:,.1f} us",
            str(row["full_collections"]),
            f"{row['longest_collection'] * 1e3:,.0f} ms",
            f"{row['slowest_answer'] * 1e3:,.0f} ms",
        )
    console.print(table)
    bench_options.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
