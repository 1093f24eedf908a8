"""`companyos serve` with its garbage collector's work recorded, for `gc_policy.py`.

    python bench/gc_server.py POLICY LOG serve-args...

POLICY is ``server`` (the server's own policy, `api.heap`) or ``cpython`` (the same server with
CPython's default thresholds). On SIGUSR1 the process writes to LOG, as JSON, the seconds spent
in collections so far, the number of collections per generation and the longest pause since
the last report.
"""

from __future__ import annotations

import gc
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from companyos.api import heap
from companyos.cli import main


def record(log: Path) -> None:
    seen: dict[str, Any] = {"seconds": 0.0, "collections": [0, 0, 0], "longest": 0.0}
    started = [0.0]

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        took = time.perf_counter() - started[0]
        seen["seconds"] += took
        seen["collections"][info["generation"]] += 1
        seen["longest"] = max(seen["longest"], took)

    gc.callbacks.append(callback)

    def report(*_: Any) -> None:
        log.write_text(json.dumps(seen))
        seen["longest"] = 0.0  # the longest since the last report

    signal.signal(signal.SIGUSR1, report)


if __name__ == "__main__":
    policy, log, args = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    if policy == "cpython":
        heap.THRESHOLDS = gc.get_threshold()
    elif policy != "server":
        sys.exit(f"gc_server.py: POLICY is server or cpython, not {policy!r}")
    record(log)
    sys.exit(main(args))
