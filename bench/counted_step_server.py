"""CompanyOS's own server with each step run inside ``itertools.starmap``'s ``next``:
`serve_instructions.py`'s way to count, under callgrind's ``--toggle-collect=starmap_next``,
the instructions of the steps alone inside a server (nothing a step runs uses starmap).

Everything is the real `companyos serve`; only `CompanyOSEnvironment.step` is wrapped, as
`timed_step_server.py` wraps it to time it.

    python bench/counted_step_server.py serve --port 8000 --store memory://
"""

from __future__ import annotations

import functools
import itertools
import sys
from typing import Any

from companyos.api.environment import CompanyOSEnvironment

_step = CompanyOSEnvironment.step


def step(self: CompanyOSEnvironment, action: Any, /, *args: Any, **kwargs: Any) -> Any:
    return next(itertools.starmap(functools.partial(_step, self, action, *args, **kwargs), [()]))


def main() -> None:
    step.__signature__ = _step.__signature__  # type: ignore[attr-defined]
    CompanyOSEnvironment.step = step  # type: ignore[method-assign]
    from companyos.cli import main as cli

    sys.exit(cli(sys.argv[1:]))


if __name__ == "__main__":
    main()
