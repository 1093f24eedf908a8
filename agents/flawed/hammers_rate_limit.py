"""Ignores rate limits: when a service answers that it is rate-limited and says when to come
back, it makes the same call again at once, and again, until one gets through (and it never
paces its calls to a limit it was told)."""

from __future__ import annotations

from typing import Any

from companyos.api.models import CompanyOSObservation
from companyos.domain.honest import Seen
from companyos.domain.model import MINUTES_PER_STEP

from .base import Flawed, action


class HammersRateLimit(Flawed):
    name = label = "ignored_rate_limit"
    counts_refused = True  # each call counts against the limit, refused or not

    def choose(self, seen: Seen | None, observation: CompanyOSObservation) -> dict[str, Any]:
        solver = self.solver
        assert solver is not None
        last = solver.last
        if seen is None or seen.error != "rate_limited" or last is None:
            return action(self.honest(seen))
        solver.observe(seen)
        app = last[0]
        wait = solver.down_until.pop(app, seen.clock) - seen.clock
        solver.limits.pop(app, None)
        solver.retry, solver.last = True, last  # at once, as if it were a blip
        if wait > MINUTES_PER_STEP:
            self.mark()  # the next step comes before the retry-after
        return action(solver.act(None))
