"""Serving on every core, and the batched API, on loopback.

- `companyos serve --workers 1` against `--workers 2` (one SQLite file): aggregate steps/s of
  many concurrent sessions over `/ws` and over stateful HTTP (`POST /step` naming the episode,
  on a keep-alive connection as HTTP clients keep one), with the p99 latency of a step; at 256
  sessions too. The CPU a step of each row is read too (the server's from `/proc`, all its
  processes and threads; the load generator's own), and with it how many cores' worth each
  kept busy: one worker that already keeps more than a core busy leaves less for a second
  to add, whatever the server does.
- The batched API: steps of 64 episodes sent one message each over one `/ws` session, against
  one message for all 64 (`step_batch`), per-episode-step throughput, and the server's own CPU
  an episode-step (read from `/proc` around the steps: steadier on a shared machine than
  steps/s, which carry the client's time too).

The load generator runs in this process (asyncio) on the same two cores: it takes CPU from the
server, as a real client on the same machine would. HTTP requests are written and read directly
on keep-alive connections (`KeepAlive`), WebSocket frames directly on their sockets
(`RawSocket`): through httpx the client alone took a core and capped both servers at the same
rate, and the `websockets` library costs it 40% more than `RawSocket`. Each session plays its
episode to the end and starts another (a step on an ended episode is only a refusal). The
machine's own ceiling is measured too: two CPU-bound processes at once against one alone (on a
shared host two vCPUs need not add up to two).

Both servers run side by side and their rows are measured alternately, ``--rounds`` times
each (the median is shown), so that the machine's other load hits one worker and two alike.

    python bench/serve_workers.py [--seconds S] [--rounds R] [--json out.json]
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import multiprocessing
import os
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import bench_options
import orjson
import websockets
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.serving import ServerProcess, process_cpu, tree_cpu, wait_listening  # noqa: E402

METRIC = {"metric_name": "vendor_compliance_score"}
CALLS = [
    {"app": "ticketdesk", "method": "list_tickets", "params": {}},
    {"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": "T-001"}},
    {"app": "datahub", "method": "query_metric", "params": METRIC},
    {"app": "datahub", "method": "get_approver", "params": {"role": "CFO"}},
]
RESET = {"task_id": "task_vendor_onboarding", "max_steps": 1000}
"""Each session plays its episode to the end (its 1,000 steps at most) and then starts another,
as a training loop does: a session at 16 concurrent sessions makes more than 1,000 steps in a
measurement, and a step on an ended episode is only a refusal (before it reset, the 16-session
rows counted such steps, half of them with two workers, and looked faster than they were)."""


class Start:
    """Every session resets first; the clock starts when the last is ready."""

    def __init__(self, sessions: int, seconds: float, server_cpu: Callable[[], float]) -> None:
        self.waiting, self.seconds = sessions, seconds
        self.go = asyncio.Event()
        self.at = self.until = 0.0
        self.server_cpu = server_cpu
        self.cpu_at = (0.0, 0.0)
        """(the server's CPU seconds, this load generator's) when the clock started."""

    async def ready(self) -> float:
        self.waiting -= 1
        if self.waiting == 0:
            self.cpu_at = (self.server_cpu(), time.process_time())
            self.at = time.perf_counter()
            self.until = self.at + self.seconds
            self.go.set()
        await self.go.wait()
        return self.until


class RawSocket:
    """A WebSocket client spoken directly over asyncio streams (RFC 6455: the upgrade, masked
    text frames out, whole frames in, pings answered), for the same reason as `KeepAlive`: the
    `websockets` library costs the client about 100 us of CPU a step, a third of what the
    server spends on it, and on these two cores that CPU is taken from the servers (one
    worker or two alike, but two workers need the second core). OpenEnv's own client is
    `websockets`; the batch rows below use it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, url: str, path: str = "/ws") -> RawSocket:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        key = base64.b64encode(os.urandom(16))
        writer.write(
            b"GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
            % (path.encode(), host.encode(), key)
        )
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(head.decode("latin-1").splitlines()[0])
        return cls(reader, writer)

    def _frame(self, opcode: int, payload: bytes) -> bytes:
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        mask = os.urandom(4)
        keys = (mask * (n // 4 + 1))[:n]
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes(keys, "big")).to_bytes(n, "big")
        return head + mask + masked

    async def send(self, text: bytes) -> None:
        self.writer.write(self._frame(0x1, text))

    async def recv(self) -> bytes:
        parts: list[bytes] = []
        while True:
            b0, b1 = await self.reader.readexactly(2)
            n = b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", await self.reader.readexactly(8))
            payload = await self.reader.readexactly(n)  # a server's frames are not masked
            opcode = b0 & 0x0F
            if opcode == 0x9:  # ping
                self.writer.write(self._frame(0xA, payload))
                continue
            if opcode == 0x8:
                raise ConnectionError(f"closed by the server: {payload[2:].decode()!r}")
            parts.append(payload)
            if b0 & 0x80:  # FIN: the message is whole
                return b"".join(parts)

    async def close(self) -> None:
        with contextlib.suppress(OSError):
            self.writer.write(self._frame(0x8, struct.pack("!H", 1000)))
            self.writer.close()
            await self.writer.wait_closed()


STEP_FRAMES = [orjson.dumps({"type": "step", "data": c}) for c in CALLS]
RESET_FRAME = orjson.dumps({"type": "reset", "data": RESET})


async def ws_session(url: str, start: Start, lat: list[float]) -> int:
    steps = 0
    ws = await RawSocket.open(url)
    try:
        await ws.send(RESET_FRAME)
        await ws.recv()
        until = await start.ready()
        while time.perf_counter() < until:
            t = time.perf_counter()
            await ws.send(STEP_FRAMES[steps % len(STEP_FRAMES)])
            reply = orjson.loads(await ws.recv())
            lat.append(time.perf_counter() - t)
            assert reply["type"] == "observation", reply
            steps += 1
            if reply["data"]["done"]:
                # As an agent's loop does: a step on an ended episode would be a cheap refusal.
                await ws.send(RESET_FRAME)
                await ws.recv()
    finally:
        await ws.close()
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
        data = orjson.dumps(body)
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
        return status, orjson.loads(await self.reader.readexactly(length))

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
            if answer["done"]:
                _, reset = await http.post("/reset", RESET)
                eid = reset["observation"]["episode_id"]
    finally:
        await http.close()
    return steps


class Run(NamedTuple):
    rate: float
    """Aggregate steps/s."""
    p99: float
    """Seconds."""
    server: float
    """The server's CPU seconds a step (all its processes and threads)."""
    client: float
    """This load generator's CPU seconds a step."""


def load(
    url: str, kind: str, sessions: int, seconds: float, server_cpu: Callable[[], float]
) -> Run:
    """``sessions`` concurrent sessions for ``seconds``."""

    async def main() -> Run:
        lat: list[float] = []
        play = ws_session if kind == "ws" else http_session
        start = Start(sessions, seconds, server_cpu)
        done = await asyncio.gather(*(play(url, start, lat) for _ in range(sessions)))
        elapsed = time.perf_counter() - start.at
        server, client = server_cpu() - start.cpu_at[0], time.process_time() - start.cpu_at[1]
        lat.sort()
        steps = sum(done)
        return Run(steps / elapsed, lat[int(0.99 * (len(lat) - 1))], server / steps, client / steps)

    return asyncio.run(main())


def busy(row: dict[str, Any]) -> float:
    """Cores' worth of CPU a row kept busy: its rate at the server's and the load generator's
    CPU a step."""
    return row["rate"] * (row["server"] + row["client"])


async def batch_rate(
    url: str, episodes: int, rounds: int, batched: bool, cpu: Callable[[], float]
) -> tuple[float, float]:
    """Episode-steps per second and the server's CPU seconds an episode-step (``cpu`` reads
    the server's CPU seconds), over the steps only: the batch's reset comes before."""
    async with websockets.connect(url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        data = {"batch": [{**RESET, "seed": s} for s in range(episodes)]}
        await ws.send(json.dumps({"type": "reset", "data": data}))
        results = json.loads(await ws.recv())["data"]["observation"]["results"]
        ids = [r["observation"]["episode_id"] for r in results]
        used, t = cpu(), time.perf_counter()
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
        steps = episodes * rounds
        return steps / (time.perf_counter() - t), (cpu() - used) / steps


def _spin(n: int) -> float:
    t = time.perf_counter()
    x = 0
    for i in range(n):
        x += i * i
    return time.perf_counter() - t


def ceiling(work: int = 12_000_000, repeats: int = 5) -> list[float]:
    """How much more two CPU-bound Python processes get done at once than one alone, on this
    machine now: the most any two-worker ratio can reach here, whatever the server does (two
    vCPUs of a shared host need not add up to two of one)."""
    ctx = multiprocessing.get_context("spawn")
    ratios = []
    with ctx.Pool(2) as pool:
        pool.map(_spin, [1000, 1000])  # both processes up
        for _ in range(repeats):
            alone = pool.apply(_spin, (work,))
            t = time.perf_counter()
            pool.map(_spin, [work, work], chunksize=1)
            pair = time.perf_counter() - t
            ratios.append(2 * alone / pair)
    return ratios


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = bench_options.parser(__doc__)
    parser.add_argument("--seconds", type=float, default=6.0, help="per measurement")
    parser.add_argument(
        "--rounds", type=int, default=2, help="measurements of each row (the median is shown)"
    )
    args = bench_options.with_json(parser).parse_args(argv)
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
    runs: dict[str, list[Run]] = {}
    tops = ceiling()  # before and after the measurements: the host's load drifts
    try:
        urls, cpus = {}, {}
        for workers, server in servers.items():
            urls[workers] = server.start(timeout=300)
            wait_listening(server.port, workers)  # every worker up before the sessions connect
            cpus[workers] = tree_cpu(server.pid)
        for _ in range(args.rounds):
            for kind in ("ws", "http"):
                for n in sessions:
                    for workers, url in urls.items():
                        runs.setdefault(f"{kind} {n} {workers}", []).append(
                            load(url, kind, n, args.seconds, cpus[workers])
                        )
    finally:
        for server in servers.values():
            server.stop()
    for key, measured in runs.items():
        rows[key] = {
            "rate": statistics.median(r.rate for r in measured),
            "p99": statistics.median(r.p99 for r in measured),
            "server": statistics.median(r.server for r in measured),
            "client": statistics.median(r.client for r in measured),
            "rates": [r.rate for r in measured],
        }
    tops += ceiling()
    top = statistics.median(tops)
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
    console.print(
        f"Two CPU-bound processes at once on this machine: {top:.2f}x one alone (the ceiling of"
        " any 2 / 1 above, before the load generator takes its share of the same cores)"
    )
    out["two_process_ceiling"] = {"median": top, "runs": tops}
    ct = Table(title="CPU a step (server: all its processes; client: the load generator)")
    for col in ("", "sessions", "server 1", "server 2", "client", "busy 1", "busy 2", "at most"):
        ct.add_column(col, justify="right")
    for kind in ("ws", "http"):
        for n in sessions:
            one, two = rows[f"{kind} {n} 1"], rows[f"{kind} {n} 2"]
            one["busy"], two["busy"] = busy(one), busy(two)
            one["at_most"] = 2 / one["busy"]
            ct.add_row(
                "/ws" if kind == "ws" else "HTTP",
                str(n),
                f"{one['server'] * 1e6:,.0f} us",
                f"{two['server'] * 1e6:,.0f} us",
                f"{one['client'] * 1e6:,.0f} us",
                f"{one['busy']:.2f}",
                f"{two['busy']:.2f}",
                f"{one['at_most']:.2f}x",
            )
    console.print(ct)
    console.print(
        "busy: cores' worth of CPU used (server and client) with 1 and 2 workers. One worker"
        " already keeping more than one core busy (its threads, the kernel's socket work, the"
        " client) leaves less to gain: 'at most' is 2 cores over that, the most 2 / 1 could be"
        " while a step costs what it costs one worker (the two-process ceiling lowers it more)."
    )

    server = ServerProcess(f"sqlite:///{tmp}/batch.db")
    url = server.start(timeout=300)
    try:
        # Alternating, five times 16 rounds of 64 steps each way: one figure is a few tenths
        # of a second, which the machine's other load can swing by half.
        cpu = process_cpu(server.pid)
        singles, batches = [], []
        for _ in range(5):
            singles.append(asyncio.run(batch_rate(url, 64, 16, False, cpu)))
            batches.append(asyncio.run(batch_rate(url, 64, 16, True, cpu)))
        single = statistics.median(r for r, _ in singles)
        batched = statistics.median(r for r, _ in batches)
        cpu_single = statistics.median(c for _, c in singles)
        cpu_batched = statistics.median(c for _, c in batches)
    finally:
        server.stop()
    bt = Table(title="64 episodes over one /ws session, SQLite (median of 5)")
    for col in ("", "a message per step", "one message per 64 steps", "ratio"):
        bt.add_column(col, justify="right")
    bt.add_row("episode-steps/s", f"{single:,.0f}", f"{batched:,.0f}", f"{batched / single:.2f}x")
    bt.add_row(
        "server CPU a step",
        f"{cpu_single * 1e6:,.0f} us",
        f"{cpu_batched * 1e6:,.0f} us",
        f"{cpu_single / cpu_batched:.2f}x",
    )
    console.print(bt)
    out["batch"] = {
        "single": single,
        "batched": batched,
        "ratio": batched / single,
        "ratios": [b[0] / s[0] for s, b in zip(singles, batches, strict=True)],
        "server_cpu_single": cpu_single,
        "server_cpu_batched": cpu_batched,
        "cpu_ratio": cpu_single / cpu_batched,
        "cpu_ratios": [s[1] / b[1] for s, b in zip(singles, batches, strict=True)],
    }
    bench_options.write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
