"""`bench/serve_instructions.py` (in `make bench`): the instructions a `/ws` step costs a
server, counted under Valgrind's callgrind. It must count the steps' windows and nothing around
them (a server's start and warm-up are hundreds of millions of instructions, a reset of a new
instance tens of millions), give every row its ratio to the no-op reference, and say what to do
where Valgrind is missing."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from .helpers import needs_valgrind, run_bench


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_bench("serve_instructions.py", *args, env=env)


@needs_valgrind
def test_the_counts_are_the_steps_and_every_row_has_its_ratio(tmp_path):
    out = tmp_path / "counts.json"
    done = _run("--steps", "20", "--warm", "40", "--rows", "step", "--json", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(out.read_text())
    rows = got["rows"]
    # The step alone needs its server and the loop beside it; the reference always comes.
    assert set(rows) == {"noop", "memory", "step", "loop"}
    assert got["warm_steps"] >= 40
    steps = rows["noop"]["steps"]
    assert 20 <= steps <= 60 and all(r["steps"] == steps for r in rows.values())
    noop, memory = rows["noop"]["per_step"], rows["memory"]["per_step"]
    # A no-op step served is some hundreds of thousands of instructions. CompanyOS's episodes
    # are a few steps each, and a reset of a new instance costs tens of millions: had the
    # resets been counted, a step would come to several million.
    assert 100_000 < noop < 3_000_000
    assert 100_000 < memory < 2_500_000
    assert rows["noop"]["ratio"] == 1.0
    assert rows["memory"]["ratio"] == pytest.approx(noop / memory)
    # The step alone is a part of its server's step, and the same steps in a loop execute
    # about as many instructions (the server adds serving around the step, not work inside).
    alone, looped = rows["step"]["per_step"], rows["loop"]["per_step"]
    assert 0 < alone < memory
    assert looped == pytest.approx(alone, rel=0.15)
    for label in ("no-op OpenEnv env (reference)", "CompanyOS, memory", "the step alone"):
        assert label in done.stdout
    for line in done.stdout.splitlines():
        assert len(line) <= 80


def test_without_valgrind_it_says_what_to_install(tmp_path):
    done = _run("--steps", "1", env={**os.environ, "PATH": str(tmp_path)})
    assert done.returncode != 0
    assert "Valgrind is not installed" in done.stderr
    assert "apt-get install valgrind" in done.stderr


@needs_valgrind
def test_an_unknown_row_is_named_with_the_known_ones():
    done = _run("--rows", "memory,nope")
    assert done.returncode != 0
    assert "unknown row(s) nope" in done.stderr and "sqlite" in done.stderr
