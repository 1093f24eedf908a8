"""What the benchmarks' command lines share: the module's docstring as ``--help``, laid out as
written, a ``--json`` file for the results, and writing them there.

Standard library only: each benchmark builds its parser before its heavy imports, so that
``--help`` answers at once (`tests/test_cli_startup.py`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser whose help is ``doc`` as written (its usage lines and paragraphs kept)."""
    return argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def with_json(options: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``options`` with ``--json`` added (last, so that the help lists it last)."""
    options.add_argument("--json", type=Path, help="also write the results here")
    return options


def write_json(path: Path | None, results: Any) -> None:
    """The results as indented JSON at ``path`` (nothing without one)."""
    if path is not None:
        path.write_text(json.dumps(results, indent=2))


def with_rows(options: argparse.ArgumentParser, rows: list[str], which: str) -> None:
    """A ``--rows`` option: some of ``rows``, comma-separated (all by default); ``which`` says
    what comes along with each."""
    options.add_argument(
        "--rows",
        default=",".join(rows),
        help=f"rows to count, comma-separated; {which} (default: all of {', '.join(rows)})",
    )


def chosen_rows(value: str, rows: list[str]) -> list[str]:
    """The rows ``--rows`` names, or a message that names the known ones."""
    wanted = [r.strip() for r in value.split(",") if r.strip()]
    unknown = [r for r in wanted if r not in rows]
    if unknown or not wanted:
        what = f"unknown row(s) {', '.join(unknown)}" if unknown else "no row named"
        raise SystemExit(f"--rows: {what}; known: {', '.join(rows)}")
    return wanted
