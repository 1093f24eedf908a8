"""Serving on every core, and the batched API, on loopback.

- `companyos serve --workers 1` against `--workers 2` (one SQLite file): aggregate steps/s of
  many concurrent sessions over `/ws` and over stateful HTTP (`POST /step` naming the episode,
  on a keep-alive connection as HTTP clients keep one), with the p99 latency of a step; at 256
  sessions too.
- The batched API: steps of 64 episodes sent one message each over one `/ws` session, against
  one message for all 64 (`step_batch`), per-episode-step throughput.

The load generator runs in this process (asyncio) on the same two cores: it takes CPU from the
server, as a real client on the same machine would. HTTP requests are written and read directly
on keep-alive connections (`KeepAlive`): through httpx the client alone took a core and capped
both servers at the same rate.

Both servers run side by side and their rows are measured alternately, ``--rounds`` times
each (the median is shown), so that the machine's other load hits one worker and two alike.

    python bench/serve_workers.py [--seconds S] [--rounds R] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import websockets
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.serving import ServerProcess, wait_listening  # noqa: E402

METRIC = {"metric_name": "vendor_compliance_score"}
CALLS = [
    {"app": "ticketdesk", "method": "list_tickets", "params": {}},
    {"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": "T-001"}},
    {"app": "datahub", "method": "query_metric", "params": METRIC},
    {"app": "datahub", "method": "get_approver", "params": {"role": "CFO"}},
]
RESET = {"task_id": "task_vendor_onboarding", "max_steps": 1000}


class Start:
    """Every session resets first; the clock starts when the last is ready."""

    def __init__(self, sessions: int, seconds: float) -> None:
        self.waiting, self.seconds = sessions, seconds
        self.go = asyncio.Event()
        self.at = self.until = 0.0

    async def ready(self) -> float:
        self.waiting -= 1
        if self.waiting == 0:
            self.at = time.perf_counter()
            self.until = self.at + self.seconds
            self.go.set()
        await self.go.wait()
        return self.until


async def ws_session(url: str, start: Start, lat: list[float]) -> int:
    steps = 0
    async with websockets.connect(url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        await ws.send(json.dumps({"type": "reset", "data": RESET}))
        await ws.recv()
        until = await start.ready()
        while time.perf_counter() < until:
            t = time.perf_counter()
            await ws.send(json.dumps({"type": "step", "data": CALLS[steps % len(CALLS)]}))
            reply = json.loads(await ws.recv())
            lat.append(time.perf_counter() - t)
            assert reply["type"] == "observation", reply
            steps += 1
    return steps


class KeepAlive:
    """A keep-alive HTTP/1.1 connection spoken directly over asyncio streams. The load must
    not be the bottleneck: an httpx request costs the client about 0.8 ms of CPU, so httpx
    clients on these two cores could ask for no more than about 1,200 steps/s, one worker or
    two; this asks for the same requests at a fraction of that."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, url: str) -> KeepAlive:
        host, port = url.removeprefix("http://").split(":")
        return cls(*await asyncio.open_connection(host, int(port)))

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body).encode()
        self.writer.write(
            b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(data), data)
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, json.loads(await self.reader.readexactly(length))

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def http_session(url: str, start: Start, lat: list[float]) -> int:
    steps = 0
    # Keep-alive, as HTTP clients do: a session's connection stays with the process that
    # accepted it until it is reopened (tests/test_workers.py steps across processes).
    http = await KeepAlive.open(url)
    try:
        _, reset = await http.post("/reset", RESET)
        eid = reset["observation"]["episode_id"]
        until = await start.ready()
        while time.perf_counter() < until:
            t = time.perf_counter()
            body = {"action": {**CALLS[steps % len(CALLS)], "episode_id": eid}}
            status, answer = await http.post("/step", body)
            lat.append(time.perf_counter() - t)
            assert status == 200 and answer["observation"]["error"] != "conflict", answer
            steps += 1
    finally:
        await http.close()
    return steps


def load(url: str, kind: str, sessions: int, seconds: float) -> tuple[float, float]:
    """Aggregate steps/s and p99 latency (s) of ``sessions`` concurrent sessions."""

    async def main() -> tuple[float, float]:
        lat: list[float] = []
        play = ws_session if kind == "ws" else http_session
        start = Start(sessions, seconds)
        done = await asyncio.gather(*(play(url, start, lat) for _ in range(sessions)))
        elapsed = time.perf_counter() - start.at
        lat.sort()
        return sum(done) / elapsed, lat[int(0.99 * (len(lat) - 1))]

    return asyncio.run(main())


async def batch_rate(url: str, episodes: int, rounds: int, batched: bool) -> float:
    async with websockets.connect(url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        data = {"batch": [{**RESET, "seed": s} for s in range(episodes)]}
        await ws.send(json.dumps({"type": "reset", "data": data}))
        results = json.loads(await ws.recv())["data"]["observation"]["results"]
        ids = [r["observation"]["episode_id"] for r in results]
        t = time.perf_counter()
        for i in range(rounds):
            calls = [{**CALLS[i % len(CALLS)], "episode_id": e} for e in ids]
            if batched:
                await ws.send(json.dumps({"type": "step", "data": {"batch": calls}}))
                reply = json.loads(await ws.recv())
                assert len(reply["data"]["observation"]["results"]) == episodes
            else:
                for c in calls:
                    await ws.send(json.dumps({"type": "step", "data": {"batch": [c]}}))
                    await ws.recv()
        return episodes * rounds / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=6.0, help="per measurement")
    parser.add_argument(
        "--rounds", type=int, default=2, help="measurements of each row (the median is shown)"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    console = Console()
    tmp = Path(tempfile.mkdtemp(prefix="companyos-workers-"))
    rows: dict[str, dict[str, Any]] = {}
    sessions = (16, 64, 256)
    # Both servers run side by side and their measurements alternate, row by row and round by
    # round: what the machine's other load does in the meantime hits both alike.
    servers = {
        workers: ServerProcess(
            f"sqlite:///{tmp}/w{workers}.db",
            "--workers",
            str(workers),
            "--max-sessions",
            "512",
        )
        for workers in (1, 2)
    }
    runs: dict[str, list[tuple[float, float]]] = {}
    try:
        urls = {}
        for workers, server in servers.items():
            urls[workers] = server.start(timeout=300)
            wait_listening(server.port, workers)  # every worker up before the sessions connect
        for _ in range(args.rounds):
            for kind in ("ws", "http"):
                for n in sessions:
                    for workers, url in urls.items():
                        runs.setdefault(f"{kind} {n} {workers}", []).append(
                            load(url, kind, n, args.seconds)
                        )
    finally:
        for server in servers.values():
            server.stop()
    for key, measured in runs.items():
        rows[key] = {
            "rate": statistics.median(r for r, _ in measured),
            "p99": statistics.median(p for _, p in measured),
            "rates": [r for r, _ in measured],
        }
    table = Table(
        title=f"Aggregate steps/s, SQLite, median of {args.rounds} x {args.seconds:.0f} s (2 cores)"
    )
    for col in ("transport", "sessions", "1 worker", "p99", "2 workers", "p99", "2 / 1"):
        table.add_column(col, justify="right")
    out: dict[str, Any] = {"rows": rows}
    for kind in ("ws", "http"):
        for n in sessions:
            one, two = rows[f"{kind} {n} 1"], rows[f"{kind} {n} 2"]
            table.add_row(
                "/ws" if kind == "ws" else "HTTP (stateful)",
                str(n),
                f"{one['rate']:,.0f}",
                f"{one['p99'] * 1e3:.0f} ms",
                f"{two['rate']:,.0f}",
                f"{two['p99'] * 1e3:.0f} ms",
                f"{two['rate'] / one['rate']:.2f}x",
            )
        peak = max(rows[f"{kind} {n} 2"]["rate"] for n in sessions)
        at256 = rows[f"{kind} 256 2"]["rate"] / peak
        out[f"{kind}_256_vs_peak"] = at256
        console.print(f"{kind}: 2 workers at 256 sessions = {at256:.2f}x their peak")
    console.print(table)

    server = ServerProcess(f"sqlite:///{tmp}/batch.db")
    url = server.start(timeout=300)
    try:
        # Alternating, five times 16 rounds of 64 steps each way: one figure is a few tenths
        # of a second, which the machine's other load can swing by half.
        singles, batches = [], []
        for _ in range(5):
            singles.append(asyncio.run(batch_rate(url, 64, 16, batched=False)))
            batches.append(asyncio.run(batch_rate(url, 64, 16, batched=True)))
        single, batched = statistics.median(singles), statistics.median(batches)
    finally:
        server.stop()
    bt = Table(title="64 episodes over one /ws session, SQLite: episode-steps/s")
    for col in ("a message per step", "one message per 64 steps", "ratio"):
        bt.add_column(col, justify="right")
    bt.add_row(f"{single:,.0f}", f"{batched:,.0f}", f"{batched / single:.2f}x")
    console.print(bt)
    out["batch"] = {
        "single": single,
        "batched": batched,
        "ratio": batched / single,
        "ratios": [b / s for s, b in zip(singles, batches, strict=True)],
    }
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
