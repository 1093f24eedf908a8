"""Instructions a step executes, counted by Valgrind's callgrind: a figure the machine's noise
cannot move, beside `step_throughput.py`'s times, which it can (on a shared VM the same step
measures 90-145 us from one run to the next, too much to see a 3% change).

Each row runs in a process of its own under callgrind with instrumentation off while it builds
its workload and plays it once; then it is switched on and the row plays the workload again,
each step (or reset) called through ``itertools.starmap``, and only what runs inside starmap's
``next`` is counted (``--toggle-collect``): the steps, not the loop around them. Rows:

- the original-style step (`original_model.py`) on the scripted vendor-onboarding workload
  (`workload.script_original`): the reference;
- CompanyOS on the memory store, the same workload (`workload.script_companyos`);
- CompanyOS on the memory store, the serving workload (`workload.record_episodes`: the oracle
  mixed with random calls, every family and level), against the same reference;
- resets: the original's against CompanyOS's warm reset (an instance seen before), as
  `step_throughput.py` times them.

What the counts are and are not: user-space instructions of the whole process (the kernel's
work is not in them), not cycles (a cache miss costs nothing here), and code that picks its
routine by the CPU (OpenSSL's SHA-256, libc's memcpy) takes a generic one under Valgrind, so
hashing counts more than it runs. The ratio says how much more work a step does; the timed
rows say what it costs on this machine.

Needs Valgrind (Debian: apt-get install valgrind); without it the benchmark says so and stops.

    python bench/step_instructions.py [--episodes N] [--rows R,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import bench_options
import callgrind

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

ROWS: dict[str, str] = {
    "original": "original-style step, scripted (reference)",
    "companyos": "CompanyOS step, memory, scripted",
    "serving": "CompanyOS step, memory, serving workload",
    "original-reset": "original-style reset (reference)",
    "warm-reset": "CompanyOS reset, warm (instance seen before)",
}
REFERENCE = {
    "original": "original",
    "companyos": "original",
    "serving": "original",
    "original-reset": "original-reset",
    "warm-reset": "original-reset",
}


def options() -> argparse.ArgumentParser:
    parser = bench_options.parser(__doc__)
    parser.add_argument(
        "--episodes",
        type=int,
        default=40,
        help="scripted episodes counted (default 40; the serving row plays as many steps)",
    )
    bench_options.with_rows(parser, list(ROWS), "each with its reference")
    parser.add_argument("--child", choices=sorted(ROWS), help=argparse.SUPPRESS)
    return bench_options.with_json(parser)


Episodes = list[tuple[Any, Any, list[Any]]]
"""(a reset, uncounted; the step function; its calls, each counted): a step row's workload."""


def _workload(row: str, episodes: int) -> tuple[Episodes, int]:
    """The row's workload and how many counted calls it makes. Built and played once, uncounted."""
    sys.path.insert(0, str(HERE))
    from original_model import OriginalStyleEnv
    from workload import TASK, as_episodes, record_episodes, script_companyos, script_original

    from companyos.api import CompanyOSEnvironment

    seeds = range(episodes)
    if row == "original-reset":
        original = OriginalStyleEnv()
        return [(None, original.reset, [s % 20 for s in seeds])], len(seeds)
    if row == "original":
        original = OriginalStyleEnv()
        played = [
            (lambda s=s: original.reset(s), original.step, calls)
            for s, calls in script_original(original, seeds)
        ]
        return played, sum(len(c) for _, _, c in played)
    ours = CompanyOSEnvironment()
    if row == "warm-reset":
        for s in range(20):
            ours.reset(seed=s, task_id=TASK)
        return [(None, lambda s: ours.reset(seed=s, task_id=TASK), [s % 20 for s in seeds])], len(
            seeds
        )
    if row == "companyos":
        recorded = as_episodes(script_companyos(ours, seeds))
    else:  # as many steps as the scripted rows make
        recorded = record_episodes(
            sum(len(c) for _, c in script_original(OriginalStyleEnv(), seeds))
        )
    played = [(lambda kw=kw: ours.reset(**kw), ours.step, actions) for kw, actions in recorded]
    return played, sum(len(c) for _, _, c in played)


def _play(workload: Episodes) -> None:
    """Each reset called directly; each call through starmap, where counting happens."""
    import itertools

    for reset, fn, calls in workload:
        if reset is not None:
            reset()
        for _ in itertools.starmap(fn, [(c,) for c in calls]):
            pass


def child(row: str, episodes: int) -> None:
    """Runs under callgrind: builds the row's workload and plays it once, then waits for the
    parent to switch instrumentation on and plays it again."""
    workload, units = _workload(row, episodes)
    _play(workload)
    print(f"READY {units}", flush=True)
    sys.stdin.readline()
    _play(workload)
    print("DONE", flush=True)
    sys.stdin.readline()


def count(row: str, episodes: int, work: Path) -> tuple[int, int]:
    """(instructions counted, steps or resets they were for) of one row, in a child process."""
    out = work / f"{row}.out"
    cmd = [
        *callgrind.argv(out, calls_only=True),
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        row,
        "--episodes",
        str(episodes),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same dict layouts every run
    log = work / f"{row}.log"
    with log.open("w") as errors:  # a file, not a pipe nobody reads while the row plays
        p = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=env,
            cwd=ROOT,
        )
    assert p.stdin is not None and p.stdout is not None
    try:
        line = p.stdout.readline()
        if not line.startswith("READY"):
            raise SystemExit(f"{row}: the child failed before counting:\n{callgrind.tail(log)}")
        units = int(line.split()[1])
        callgrind.control(p.pid, "-i", "on")
        p.stdin.write("\n")
        p.stdin.flush()
        line = p.stdout.readline()
        callgrind.control(p.pid, "-i", "off")
        p.communicate("\n")
    finally:
        if p.poll() is None:  # failed: leave no process behind
            p.kill()
            p.wait()
    if not line.startswith("DONE") or p.returncode != 0:
        raise SystemExit(f"{row}: the child failed while counting:\n{callgrind.tail(log)}")
    counted = callgrind.total(out)
    if counted == 0:
        raise SystemExit(
            f"{row}: callgrind counted nothing inside {callgrind.TOGGLE}: this Python's library "
            "has no symbol of that name (a stripped build?); the counts need one that has"
        )
    return counted, units


def main() -> None:
    args = options().parse_args()
    if args.child:
        child(args.child, args.episodes)
        return
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    wanted = bench_options.chosen_rows(args.rows, list(ROWS))
    rows = [r for r in ROWS if r in wanted or r in {REFERENCE[w] for w in wanted}]
    callgrind.require("step_instructions")
    console = Console(width=100)
    counted: dict[str, tuple[int, int]] = {}
    with tempfile.TemporaryDirectory() as tmp, Progress(console=console, transient=True) as bar:
        task = bar.add_task("counting under callgrind", total=len(rows))
        for row in rows:
            counted[row] = count(row, args.episodes, Path(tmp))
            bar.advance(task)
    per = {row: n / units for row, (n, units) in counted.items()}
    table = Table(title=f"Instructions per call, counted by callgrind ({args.episodes} episodes)")
    table.add_column("row")
    table.add_column("calls", justify="right")
    table.add_column("instructions", justify="right")
    table.add_column("ratio", justify="right")
    results: dict[str, Any] = {"episodes": args.episodes, "rows": {}}
    for row in rows:
        label = ROWS[row]
        ratio = per[REFERENCE[row]] / per[row]
        table.add_row(label, f"{counted[row][1]:,}", f"{per[row] / 1e3:,.1f} k", f"{ratio:.3f}x")
        results["rows"][row] = {
            "label": label,
            "calls": counted[row][1],
            "instructions": counted[row][0],
            "per_call": per[row],
            "reference": REFERENCE[row],
            "ratio": ratio,
        }
    console.print(table)
    console.print(
        "ratio: the reference's instructions per call over the row's (above 1: fewer). User-space"
        " instructions only; hashing takes generic code under Valgrind and counts more than it"
        " runs."
    )
    bench_options.write_json(args.json, results)


if __name__ == "__main__":
    main()
