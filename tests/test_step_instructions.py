"""`bench/step_instructions.py` (in `make bench`): instructions per step counted under
Valgrind's callgrind. It must count the calls and nothing around them (the workload's set-up,
the imports, the interpreter's start are many times a step), print every row with its reference
and ratio, and say what to do where Valgrind is missing."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from .helpers import needs_valgrind, run_bench


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_bench("step_instructions.py", *args, env=env)


@needs_valgrind
def test_the_counts_are_the_calls_and_each_row_has_its_reference(tmp_path):
    out = tmp_path / "counts.json"
    done = _run("--episodes", "2", "--rows", "companyos", "--json", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert set(rows) == {"original", "companyos"}  # the row and its reference, nothing else
    original, ours = rows["original"], rows["companyos"]
    # Two scripted episodes of the vendor-onboarding trace: a dozen steps each.
    assert 15 <= original["calls"] <= 40 and 15 <= ours["calls"] <= 40
    # A step of the original-style model is tens of thousands of instructions; the process
    # around it (Python's start, the imports, the recorded workload) is hundreds of millions:
    # any of it counted would put the figure far out of this range.
    assert 5_000 < original["per_call"] < 200_000
    assert original["per_call"] < ours["per_call"] < 5_000_000
    assert ours["ratio"] == pytest.approx(original["per_call"] / ours["per_call"])
    assert original["ratio"] == 1.0
    for row in ("original-style step, scripted (reference)", "CompanyOS step, memory, scripted"):
        assert row in done.stdout
    for line in done.stdout.splitlines():
        assert len(line) <= 100


@needs_valgrind
def test_twice_the_episodes_count_about_twice_the_instructions(tmp_path):
    """Per call, the figure does not depend on how many calls were counted: nothing is counted
    once per run (set-up, start-up) beside them."""
    figures = []
    for episodes in ("2", "6"):
        out = tmp_path / f"{episodes}.json"
        done = _run("--episodes", episodes, "--rows", "original-reset", "--json", str(out))
        assert done.returncode == 0, done.stderr[-3000:]
        figures.append(json.loads(out.read_text())["rows"])
    two, six = (f["original-reset"] for f in figures)
    assert six["calls"] == 3 * two["calls"]
    assert six["instructions"] == pytest.approx(3 * two["instructions"], rel=0.1)


def test_without_valgrind_it_says_what_to_install(tmp_path):
    done = _run("--episodes", "1", env={**os.environ, "PATH": str(tmp_path)})
    assert done.returncode != 0
    assert "Valgrind is not installed" in done.stderr
    assert "apt-get install valgrind" in done.stderr


def test_an_unknown_row_is_named_with_the_known_ones():
    done = _run("--rows", "companyos,nope")
    assert done.returncode != 0
    assert "unknown row(s) nope" in done.stderr and "warm-reset" in done.stderr
