"""Canonical JSON as the stores use it: each result kept, as a log keeps every event's JSON.

orjson returns its working buffer shrunk in place. While such buffers are kept, each later
dumps call pays 2-3 us more on this machine (its allocation no longer reuses freed memory);
`events.chain.canonical` returns a copy instead, and the buffer is freed at once. This times
both ways on payloads of growing size, interleaved so that drift hits both alike, and prints
the ratio (the reference is orjson's own result, kept).

    python bench/canonical_json.py [--calls N] [--rounds R]
"""

from __future__ import annotations

import argparse

import bench_options


def options() -> argparse.ArgumentParser:
    parser = bench_options.parser(__doc__)
    parser.add_argument("--calls", type=int, default=20_000, help="calls a round (20000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, best kept (5)")
    return parser


if __name__ == "__main__":
    options().parse_args()  # --help answers before the imports below

import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import orjson  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from companyos.events.chain import canonical  # noqa: E402


def _orjson_own(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def kept_calls(dump: Callable[[Any], bytes], payload: dict[str, Any], calls: int) -> float:
    """Median seconds a call while every result is kept."""
    kept: list[bytes] = []
    times: list[float] = []
    clock = time.perf_counter
    for _ in range(calls):
        t = clock()
        out = dump(payload)
        times.append(clock() - t)
        kept.append(out)
    return statistics.median(times)


def payloads() -> list[dict[str, Any]]:
    call = {"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": "T-101"}}
    return [
        {**call, "refused": None, "step": 3},
        {f"field_{i}": "value " * 3 for i in range(8)},
        {f"field_{i}": "value " * 3 for i in range(30)},
        {f"field_{i}": "value " * 3 for i in range(120)},
    ]


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    args = options().parse_args(argv)
    table = Table(title="Canonical JSON, every result kept (median a call, best round)")
    for col in ("bytes", "orjson's result (reference)", "canonical (a copy)", "ratio"):
        table.add_column(col, justify="right")
    rows = []
    for payload in payloads():
        own, copy = float("inf"), float("inf")
        for _ in range(args.rounds):
            own = min(own, kept_calls(_orjson_own, payload, args.calls))
            copy = min(copy, kept_calls(canonical, payload, args.calls))
        size = len(canonical(payload))
        rows.append({"bytes": size, "orjson_us": own * 1e6, "canonical_us": copy * 1e6})
        table.add_row(
            str(size), f"{own * 1e6:.2f} us", f"{copy * 1e6:.2f} us", f"{own / copy:.2f}x"
        )
    Console(width=80).print(table)
    return rows


if __name__ == "__main__":
    main()
