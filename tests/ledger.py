"""The reliability table: each reliability test records what it did and what it found here,
and the test session prints the sum at its end (`make reliability` at full scale, `make test`
at the quick one).

Figures are measured by the tests that assert on them: a row can only show "0 lost" if the test
that counted the losses passed. Records are JSON lines in a directory shared by the pytest-xdist
workers (one file per process), named by ``COMPANYOS_LEDGER_DIR``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

LEDGER_DIR = "COMPANYOS_LEDGER_DIR"
SCALE = "COMPANYOS_RELIABILITY"

COLUMNS: dict[str, str] = {
    "faults": "faults injected",
    "episodes": "episodes driven",
    "events": "events written",
    "lost": "events lost",
    "torn": "torn steps",
    "chain_failures": "hash-chain failures",
    "http_5xx": "5xx responses",
    "fuzz_cases": "fuzz cases tried",
    "limits": "limits enforced",
}


def full_scale() -> bool:
    """`make reliability` sets COMPANYOS_RELIABILITY=full: longer runs, more of everything."""
    return os.environ.get(SCALE) == "full"


def scaled(quick: int, full: int) -> int:
    return full if full_scale() else quick


def record(phase: str, note: str = "", **figures: int) -> None:
    """Add figures to ``phase``'s row (figures of one phase from several tests add up)."""
    unknown = set(figures) - set(COLUMNS)
    if unknown:
        raise KeyError(f"unknown ledger columns {sorted(unknown)}")
    directory = os.environ.get(LEDGER_DIR)
    if not directory:
        return  # not under the test session's hooks (e.g. a test run by hand)
    line = json.dumps({"phase": phase, "note": note, **figures})
    with open(Path(directory) / f"{os.getpid()}.jsonl", "a") as f:
        f.write(line + "\n")


def read(directory: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(directory.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line]
    return rows


ORDER = ("crash", "concurrency", "replicas", "fuzz", "limits", "access", "soak")
"""Rows in this order of their phase's first word (then by name)."""


def _rank(phase: str) -> tuple[int, str]:
    word = phase.split(":", 1)[0]
    return (ORDER.index(word) if word in ORDER else len(ORDER), phase)


def summarise(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Phase -> summed figures (and the notes, joined)."""
    out: dict[str, dict[str, Any]] = {}
    for r in sorted(records, key=lambda r: _rank(r["phase"])):
        row = out.setdefault(r["phase"], {c: 0 for c in COLUMNS} | {"notes": []})
        for column in COLUMNS:
            row[column] += int(r.get(column, 0))
        if r.get("note"):
            row["notes"].append(r["note"])
    return out


def table(records: Iterable[dict[str, Any]]) -> str:
    rows = summarise(records)
    if not rows:
        return ""
    total = {c: sum(r[c] for r in rows.values()) for c in COLUMNS}
    header = ["phase", *COLUMNS.values()]
    body = [[p, *(f"{r[c]:,}" for c in COLUMNS)] for p, r in rows.items()]
    body.append(["total", *(f"{total[c]:,}" for c in COLUMNS)])
    widths = [max(len(str(x[i])) for x in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (str(c).rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return "| " + " | ".join([first, *rest]) + " |"

    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(b) for b in body]
    notes = [f"- {p}: {'; '.join(r['notes'])}" for p, r in rows.items() if r["notes"]]
    return "\n".join(out + (["", *notes] if notes else []))
