"""How long the command line takes to answer `--help`, against `python -c pass` measured in the
same run (the interpreter's own start-up, which no CLI can beat), and against importing the
OpenEnv server stack (what every call cost before the CLI imported it only where used).

    python bench/cli_startup.py [--rounds 7]

Each command is its own process, as a user runs it; rounds interleave the commands (machines
are noisy) and the medians of wall time and of CPU time (user + system, the process's own:
less sensitive to other load on the machine) are compared.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

from rich.console import Console
from rich.table import Table

PY = sys.executable
COMMANDS: dict[str, list[str]] = {
    "python -c pass": [PY, "-c", "pass"],
    "companyos --help": [PY, "-m", "companyos", "--help"],
    **{
        f"companyos {sub} --help": [PY, "-m", "companyos", sub, "--help"]
        for sub in ("serve", "eval", "analyze", "tasks", "episodes")
    },
    "import the OpenEnv stack": [PY, "-c", "import companyos.api.environment"],
}


def once(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "80"})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    walls: dict[str, list[float]] = {name: [] for name in COMMANDS}
    cpus: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for cmd in COMMANDS.values():  # warm the file cache and the bytecode
        once(cmd)
    for _ in range(args.rounds):
        for name, cmd in COMMANDS.items():
            wall, cpu = once(cmd)
            walls[name].append(wall)
            cpus[name].append(cpu)
    base_wall = statistics.median(walls["python -c pass"])
    base_cpu = statistics.median(cpus["python -c pass"])
    table = Table(title=f"CLI start-up, medians of {args.rounds} runs each")
    for column in ("command", "wall s", "x pass", "CPU s", "x pass"):
        table.add_column(column, justify="left" if column == "command" else "right")
    for name in COMMANDS:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        table.add_row(
            name, f"{wall:.3f}", f"{wall / base_wall:.1f}", f"{cpu:.3f}", f"{cpu / base_cpu:.1f}"
        )
    Console(width=100).print(table)


if __name__ == "__main__":
    main()
