"""CompanyOS's own server with the CPU of each step counted: `serve_throughput.py`'s measure of
what a step itself costs inside a server, beside what the whole process pays for it.

Everything is the real `companyos serve`; only `CompanyOSEnvironment.step` is wrapped: the
calling thread's CPU clock is read as the step starts and as it returns (`time.thread_time_ns`,
a system call of well under a microsecond each, which the figure carries), and the count of
steps and their total CPU are served at ``GET /bench/step-cpu``. A step on the server's event
loop runs to its end without waiting, so its thread's CPU over it is the step's own work with
the caches as the server leaves them: the figure to set against the in-process rows of
`step_throughput.py`.

    python bench/timed_step_server.py serve --port 8000 --store memory://
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from companyos.api import server
from companyos.api.environment import CompanyOSEnvironment

_step = CompanyOSEnvironment.step
_lock = threading.Lock()
_spent = [0, 0]
"""[steps, CPU nanoseconds of their threads]."""


def step(self: CompanyOSEnvironment, action: Any, /, *args: Any, **kwargs: Any) -> Any:
    start = time.thread_time_ns()
    try:
        return _step(self, action, *args, **kwargs)
    finally:
        spent = time.thread_time_ns() - start
        with _lock:  # steps may run on the session executor's threads too
            _spent[0] += 1
            _spent[1] += spent


def step_cpu() -> dict[str, int]:
    with _lock:
        return {"steps": _spent[0], "cpu_ns": _spent[1]}


def build_app(*args: Any, **kwargs: Any) -> Any:
    app = _build_app(*args, **kwargs)
    app.add_api_route("/bench/step-cpu", step_cpu, methods=["GET"])
    return app


_build_app = server.build_app


def main() -> None:
    step.__signature__ = _step.__signature__  # type: ignore[attr-defined]
    CompanyOSEnvironment.step = step  # type: ignore[method-assign]
    server.build_app = build_app  # type: ignore[assignment]
    from companyos.cli import main as cli

    sys.exit(cli(sys.argv[1:]))


if __name__ == "__main__":
    main()
