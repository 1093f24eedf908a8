"""What the two instruction-counting benchmarks share (`step_instructions.py`,
`serve_instructions.py`): Valgrind's callgrind started with instrumentation off, switched on and
off around what is counted, and its total read back.

Standard library only: the benchmarks check for Valgrind before their heavy imports.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

TOGGLE = "starmap_next"
"""The C function that runs each counted call when only calls are counted: `itertools.starmap`'s
``next``, which nothing a step runs uses (a nested use would switch counting off inside it)."""


def require(bench: str) -> None:
    """Stop with what to install where Valgrind (or its control program) is missing."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit(
            f"{bench}: Valgrind is not installed, so nothing was counted; install it "
            "(Debian: apt-get install valgrind) and run again"
        )


def argv(out: Path, *, calls_only: bool) -> list[str]:
    """The command prefix that runs a program under callgrind with instrumentation off, its
    counts written to ``out``; ``calls_only``: count only inside `TOGGLE`."""
    toggle = ["--collect-atstart=no", f"--toggle-collect={TOGGLE}"] if calls_only else []
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        *toggle,
        "--cache-sim=no",
        f"--callgrind-out-file={out}",
    ]


def control(pid: int, *args: str) -> None:
    """``callgrind_control`` ``args`` to the process ``pid`` (``-i on`` / ``-i off``); it
    returns once the process has taken the command."""
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def total(out: Path) -> int:
    """The instructions counted, from the counts file callgrind writes as its program ends."""
    found = re.search(r"^totals: (\d+)", out.read_text(), re.MULTILINE) if out.exists() else None
    if found is None:
        raise SystemExit(f"callgrind wrote no totals to {out}: did the program exit cleanly?")
    return int(found.group(1))


def tail(log: Path) -> str:
    """The end of a child's log, for an error message."""
    return log.read_text(errors="replace")[-3000:]
