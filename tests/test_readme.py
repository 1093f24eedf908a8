"""The README's examples run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_five_line_example_runs(tmp_path):
    first = python_blocks()[0]
    assert len(first.strip().splitlines()) == 5
    done = subprocess.run(
        [sys.executable, "-c", first], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "STALE" in done.stdout


def test_readme_gives_the_two_commands_first():
    text = (ROOT / "README.md").read_text()
    assert text.index("make serve") < text.index("make test") < text.index("```python")
