"""CompanyOS's own server with steps that do no work: `serve_throughput.py`'s measure of what
the server costs around a step.

Everything but the step is the real thing: `companyos serve` with its options, middleware and
OpenEnv's handlers, the action read and checked, a real reset. A step answers, without finding
its episode, deciding, scoring or writing anything, the observation its episode's reset sent,
with the tools left out (a step's answer never lists them): the answer written and sent is a
real observation of a step's size. The server's CPU a step here, against the real server's, splits
a step into what the step itself costs and what serving it costs; against the no-op OpenEnv
env, it says what CompanyOS's serving adds or saves.

    python bench/null_step_server.py serve --port 8000 --store memory://
"""

from __future__ import annotations

import sys
from typing import Any

from companyos.api.environment import CompanyOSEnvironment
from companyos.api.models import CompanyOSObservation, observation_from, unwrap

_reset = CompanyOSEnvironment.reset
_ANSWERS: dict[str | None, CompanyOSObservation] = {}
"""Each episode's answer to a step (over HTTP every request has an environment of its own)."""
_NO_EPISODE = observation_from({**CompanyOSObservation().__dict__, "message": "no episode"})


def reset(self: CompanyOSEnvironment, *args: Any, **kwargs: Any) -> CompanyOSObservation:
    obs = _reset(self, *args, **kwargs)
    _ANSWERS[obs.episode_id] = observation_from({**obs.__dict__, "tools": []})
    return obs


async def step_async(self: CompanyOSEnvironment, action: Any, /, **kwargs: Any) -> Any:
    call = unwrap(action)  # what a real step does with the action first
    named = getattr(call, "episode_id", None)
    own = self.episode.id if self.episode is not None else None
    return _ANSWERS.get(named or own, _NO_EPISODE)


def main() -> None:
    CompanyOSEnvironment.reset = reset  # type: ignore[method-assign]
    CompanyOSEnvironment.step_async = step_async  # type: ignore[method-assign]
    from companyos.cli import main as cli

    sys.exit(cli(sys.argv[1:]))


if __name__ == "__main__":
    main()
