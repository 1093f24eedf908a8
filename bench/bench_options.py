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
