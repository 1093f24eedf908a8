"""The command line answers `--help` without importing what only the commands need: the
OpenEnv server stack (gradio and all), web servers, databases, plotting, model clients. Checked
by the modules a fresh interpreter has loaded, not by timing (`bench/cli_startup.py` times it)."""

from __future__ import annotations

import json
import subprocess
import sys

from companyos.cli import build_parser

HEAVY = {
    "openenv",
    "gradio",
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "sqlmodel",
    "duckdb",
    "matplotlib",
    "numpy",
    "pandas",
    "openai",
    "httpx",
    "torch",
    "transformers",
    "trl",
    "rich",
    "mcp",
}

PROBE = """
import contextlib, io, json, sys
from companyos.cli import main
seen = {}
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(argv)
    seen[" ".join(argv)] = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps(seen))
"""


def loaded(*argvs: list[str]) -> dict[str, set[str]]:
    """Per command line, in the order given, the top-level modules loaded once it has run
    (each run after the ones before it, in one fresh interpreter)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argvs)], capture_output=True, text=True, check=True
    )
    return {k: set(v) for k, v in json.loads(done.stdout.splitlines()[-1]).items()}


def test_the_probe_sees_heavy_imports():
    # The check can fail: a command that does its job (listing the catalogue in a table) is
    # seen importing what it needs.
    assert "rich" in loaded(["tasks"])["tasks"]


def test_help_imports_nothing_heavy():
    subcommands = sorted(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    argvs = [["--help"], *[[sub, "--help"] for sub in subcommands]]
    assert len(argvs) > 8
    for argv, modules in loaded(*argvs).items():
        heavy = modules & HEAVY
        assert not heavy, f"`companyos {argv}` imported {sorted(heavy)}"


BENCH_PROBE = """
import contextlib, io, json, runpy, sys
sys.argv = [sys.argv[1], "--help"]
with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
    runpy.run_path(sys.argv[0], run_name="__main__")
print(json.dumps([out.getvalue(), sorted({m.split(".")[0] for m in sys.modules})]))
"""


SERVING = {"openenv", "gradio", "fastapi", "uvicorn", "torch", "transformers"}
"""What makes an import take seconds (OpenEnv's server stack imports gradio)."""


def test_the_benchmarks_answer_help_before_their_heavy_imports():
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "bench"
    # Every script that reads options (bench_options, the helper they share, reads none).
    scripts = [p for p in sorted(bench.glob("*.py")) if "parse_args(" in p.read_text()]
    assert len(scripts) >= 7  # every benchmark with options
    for script in scripts:
        done = subprocess.run(
            [sys.executable, "-c", BENCH_PROBE, str(script)],
            capture_output=True,
            text=True,
            check=True,
            cwd=bench,
        )
        text, modules = json.loads(done.stdout.splitlines()[-1])
        assert text.startswith("usage:"), (script.name, text[:200])
        assert not (SERVING & set(modules)), (script.name, sorted(SERVING & set(modules)))
