"""Instructions a `/ws` step costs a server, counted by Valgrind's callgrind: the figure that
`serve_throughput.py` reads as CPU time from /proc, which a shared machine's noise moves (the
`/ws` ratio against the no-op measured 0.66x and 0.80x an hour apart on one machine), as a
count that it does not (1-2% from run to run: the server's idle timers inside the counted
windows).

Each server runs under callgrind with instrumentation off. It starts, and a warm-up of episodes
is played uncounted (first calls import and build what later ones reuse). Then for each counted
episode the reset is played uncounted, instrumentation is switched on (`callgrind_control -i
on`), the episode's steps are sent over the `/ws` session one message each, and it is switched
off before the next reset. What is counted is every instruction the server process executes in
user space in those windows, all its threads (the event loop, the store's checkpointer), as
/proc counts CPU; the kernel's socket work is not in it. The servers count side by side (a
count does not depend on the machine's load).

Rows, `serve_throughput.py`'s servers on its serving workload (the oracle mixed with random
calls, every family and level):

- the no-op OpenEnv environment behind OpenEnv's own `create_app`, each step `{"value": 1}`:
  the reference;
- CompanyOS on the memory store, and on SQLite (a commit per step);
- CompanyOS with steps that do nothing (`null_step_server.py`): what serving a step costs;
- the step alone inside the memory server (`counted_step_server.py`: only what runs inside
  `CompanyOSEnvironment.step`), beside the same steps played in a loop in a process of their
  own (`CompanyOSEnvironment` on the memory store, the warm-up first, as `step_instructions.py`
  counts): a step that executes as many instructions in both yet takes longer in a server
  (`serve_throughput.py`'s second table) costs more a instruction there, not more work.

Needs Valgrind (Debian: apt-get install valgrind); without it the benchmark says so and stops.

    python bench/serve_instructions.py [--steps N] [--warm N] [--rows R,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import bench_options
import callgrind

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

ROWS: dict[str, str] = {
    "noop": "no-op OpenEnv env (reference)",
    "memory": "CompanyOS, memory",
    "sqlite": "CompanyOS, SQLite",
    "null": "CompanyOS, steps doing nothing",
    "step": "CompanyOS, memory: the step alone",
    "loop": "the same steps in a loop, in process",
}
NEEDS = {"step": ("memory", "loop"), "loop": ("memory", "step")}
"""Rows printed beside another (the step alone is a share of its server's count)."""


def options() -> argparse.ArgumentParser:
    parser = bench_options.parser(__doc__)
    parser.add_argument(
        "--steps", type=int, default=300, help="steps counted per server (default 300)"
    )
    parser.add_argument(
        "--warm", type=int, default=150, help="steps played first, uncounted (default 150)"
    )
    parser.add_argument("--child-loop", type=Path, help=argparse.SUPPRESS)
    bench_options.with_rows(parser, list(ROWS), "the no-op reference always")
    return bench_options.with_json(parser)


if __name__ == "__main__":
    _args = options().parse_args()  # --help answers here, before the imports below
    if _args.child_loop is None:
        callgrind.require("serve_instructions")

import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from typing import Any  # noqa: E402

import websockets  # noqa: E402

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from tests.serving import ServerProcess  # noqa: E402

Episodes = list[tuple[dict[str, Any], list[dict[str, Any]]]]


def _server(row: str, work: Path) -> ServerProcess:
    """The row's server, its command run under callgrind with instrumentation off."""
    if row == "noop":
        server = ServerProcess(
            "",
            "--ws-per-message-deflate",
            "false",
            module="noop_server:app",
            extra_path=HERE,
            env={"PYTHONHASHSEED": "0"},
        )
    else:
        store = f"sqlite:///{work / 'events.db'}" if row == "sqlite" else "memory://"
        server = ServerProcess(store, env={"PYTHONHASHSEED": "0"})
        script = {"null": "null_step_server.py", "step": "counted_step_server.py"}.get(row)
        if script is not None:  # `python -m companyos` -> `python bench/<script>`
            server.cmd[1:3] = [str(HERE / script)]
    server.cmd = [
        *callgrind.argv(work / f"{row}.out", calls_only=row == "step"),
        *server.cmd,
    ]
    return server


async def _control(pid: int, *args: str) -> None:
    await asyncio.to_thread(callgrind.control, pid, *args)


async def _drive(url: str, pid: int, warm: Episodes, counted: Episodes, noop: bool) -> int:
    """Play ``warm`` uncounted, then ``counted`` with instrumentation on over each episode's
    steps only; the steps counted."""
    steps = 0
    ws_url = url.replace("http://", "ws://") + "/ws"
    async with websockets.connect(ws_url, max_size=None) as ws:
        for i, (kwargs, actions) in enumerate([*warm, *counted]):
            await ws.send(json.dumps({"type": "reset", "data": kwargs}))
            await ws.recv()
            count = i >= len(warm)
            if count:
                await _control(pid, "-i", "on")
            for a in actions:
                await ws.send(json.dumps({"type": "step", "data": {"value": 1} if noop else a}))
                reply = json.loads(await ws.recv())
                if reply.get("type") != "observation":
                    raise RuntimeError(f"a step was not answered with an observation: {reply}")
            if count:
                await _control(pid, "-i", "off")
                steps += len(actions)
    return steps


def child_loop(path: Path) -> None:
    """Runs under callgrind: plays the warm-up, then waits for the parent to switch
    instrumentation on and plays the counted episodes, each step through starmap (what
    ``--toggle-collect`` counts) and each reset directly (not counted)."""
    import itertools

    from companyos.api import CompanyOSAction, CompanyOSEnvironment, heap

    warm, counted = json.loads(path.read_text())
    env = CompanyOSEnvironment()
    heap.settle()  # the server's collector policy, which `companyos serve` applies
    typed = [(kw, [CompanyOSAction.model_validate(a) for a in acts]) for kw, acts in warm + counted]
    for i, (kwargs, actions) in enumerate(typed):
        if i == len(warm):
            print("READY", flush=True)
            sys.stdin.readline()
        env.reset(**kwargs)
        for _ in itertools.starmap(env.step, [(a,) for a in actions]):
            pass
    print("DONE", flush=True)
    sys.stdin.readline()


async def _loop(warm: Episodes, counted: Episodes, work: Path) -> tuple[int, int]:
    """(instructions, steps) of the counted episodes played in a loop under callgrind."""
    played = work / "episodes.json"
    played.write_text(json.dumps([warm, counted]))
    out, log = work / "loop.out", work / "loop.log"
    with log.open("wb") as err:  # a file, not a pipe nobody reads while the loop runs
        proc = await asyncio.create_subprocess_exec(
            *callgrind.argv(out, calls_only=True),
            sys.executable,
            str(Path(__file__).resolve()),
            "--child-loop",
            str(played),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            env={**os.environ, "PYTHONHASHSEED": "0"},
            cwd=ROOT,
        )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        if not (await proc.stdout.readline()).startswith(b"READY"):
            raise SystemExit(f"the loop failed before counting:\n{callgrind.tail(log)}")
        await _control(proc.pid, "-i", "on")
        proc.stdin.write(b"\n")
        await proc.stdin.drain()
        line = await proc.stdout.readline()
        await _control(proc.pid, "-i", "off")
        await proc.communicate(b"\n")
        if not line.startswith(b"DONE") or proc.returncode != 0:
            raise SystemExit(f"the loop failed while counting:\n{callgrind.tail(log)}")
    finally:
        if proc.returncode is None:  # failed or cancelled: leave no process behind
            proc.kill()
            await proc.wait()
    return callgrind.total(out), sum(len(a) for _, a in counted)


def _stop(server: ServerProcess) -> None:
    """SIGTERM, and wait: under Valgrind a server takes a while to shut down and write its
    counts."""
    proc = server.proc
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _split(episodes: Episodes, warm: int) -> tuple[Episodes, Episodes]:
    """The first episodes making at least ``warm`` steps, and the rest."""
    done = 0
    for i, (_, actions) in enumerate(episodes):
        if done >= warm:
            return episodes[:i], episodes[i:]
        done += len(actions)
    return episodes, []


async def _count_all(
    rows: list[str], warm: Episodes, counted: Episodes, work: Path
) -> dict[str, tuple[int, int]]:
    servers = {row: _server(row, work) for row in rows if row != "loop"}
    loop = asyncio.ensure_future(_loop(warm, counted, work)) if "loop" in rows else None
    try:
        # Started and driven side by side: a start under Valgrind takes tens of seconds.
        started = await asyncio.gather(*(asyncio.to_thread(s.start, 600) for s in servers.values()))
        urls = dict(zip(servers, started, strict=True))
        steps = await asyncio.gather(
            *(_drive(urls[row], s.pid, warm, counted, row == "noop") for row, s in servers.items())
        )
        looped = await loop if loop is not None else None
    finally:
        if loop is not None and not loop.done():
            loop.cancel()
        for server in servers.values():
            _stop(server)
    # uvicorn ends on SIGTERM by raising it again once shut down: -SIGTERM is a clean exit.
    clean = (0, -signal.SIGTERM)
    bad = [r for r, s in servers.items() if s.proc is not None and s.proc.returncode not in clean]
    if bad:
        raise SystemExit(f"server(s) {', '.join(bad)} exited with an error under Valgrind")
    got = {
        row: (callgrind.total(work / f"{row}.out"), n)
        for row, n in zip(servers, steps, strict=True)
    }
    if looped is not None:
        got["loop"] = looped
    return got


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = options().parse_args(argv)
    if args.child_loop is not None:
        child_loop(args.child_loop)
        return {}
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table
    from serve_throughput import recorded

    wanted = bench_options.chosen_rows(args.rows, list(ROWS))
    needed = {"noop", *wanted, *(n for w in wanted for n in NEEDS.get(w, ()))}
    rows = [r for r in ROWS if r in needed]
    warm, counted = _split(recorded(args.warm + args.steps), args.warm)
    console = Console(width=80)
    with tempfile.TemporaryDirectory() as tmp, Progress(console=console, transient=True) as bar:
        bar.add_task(f"{len(rows)} servers counting under callgrind", total=None)
        got = asyncio.run(_count_all(rows, warm, counted, Path(tmp)))
    per = {row: n / steps for row, (n, steps) in got.items()}
    table = Table(title="Instructions a /ws step costs the server (callgrind)")
    for col in ("server", "steps", "a step", "ratio"):
        table.add_column(col, justify="left" if col == "server" else "right")
    results: dict[str, Any] = {"warm_steps": sum(len(a) for _, a in warm), "rows": {}}
    for row in rows:
        if row in ("step", "loop"):
            continue
        ratio = per["noop"] / per[row]
        table.add_row(ROWS[row], f"{got[row][1]:,}", f"{per[row] / 1e3:,.0f} k", f"{ratio:.2f}x")
        results["rows"][row] = {
            "label": ROWS[row],
            "steps": got[row][1],
            "instructions": got[row][0],
            "per_step": per[row],
            "ratio": ratio,
        }
    console.print(table)
    console.print(
        "ratio: the no-op server's instructions a step over the row's (above 1: fewer). User"
        " space only, every thread of the server; resets and the warm-up are not counted."
    )
    if "step" in per:
        alone, whole, looped = per["step"], per["memory"], per["loop"]
        split = Table(title="The memory server's step: the step itself and serving it")
        for col in ("server", "the step alone", "serving it", "in a loop", "server / loop"):
            split.add_column(col, justify="right")
        split.add_row(
            f"{whole / 1e3:,.0f} k",
            f"{alone / 1e3:,.0f} k ({alone / whole:.0%})",
            f"{(whole - alone) / 1e3:,.0f} k",
            f"{looped / 1e3:,.0f} k",
            f"{alone / looped:.2f}x",
        )
        console.print(split)
        console.print(
            "the step alone: what runs inside CompanyOSEnvironment.step in the server"
            " (counted_step_server.py); in a loop: the same steps played in a process of their"
            " own."
        )
        for row in ("step", "loop"):
            results["rows"][row] = {
                "label": ROWS[row],
                "steps": got[row][1],
                "instructions": got[row][0],
                "per_step": per[row],
                "share": per[row] / whole,
            }
    bench_options.write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
