"""Calling a rate-limited service again before its retry-after (each call keeps it closed)."""

from __future__ import annotations

from collections.abc import Iterator

from companyos.domain.model import MINUTES_PER_STEP
from companyos.events.types import FaultInjected

from ..context import Episode, Suspect

LABEL = "ignored_rate_limit"
ORDER = 40
DEFINITION = (
    "Called a rate-limited service again before the retry-after it was given (every call "
    "counts, so hammering keeps it closed). Made good by a later call that got through."
)


def find(ep: Episode) -> Iterator[Suspect]:
    for i, s in enumerate(ep.steps):
        for e in s.events:
            if not (
                isinstance(e, FaultInjected)
                and e.kind == "rate_limited"
                and e.retry_after_minutes is not None
            ):
                continue
            opens = s.step * MINUTES_PER_STEP + e.retry_after_minutes
            for j, t in ep.later(i):
                if t.step * MINUTES_PER_STEP >= opens:
                    break
                if t.call.app == e.app:
                    yield Suspect(
                        LABEL,
                        t.step,
                        f"called {e.app} at step {t.step}, before the retry-after of "
                        f"{e.retry_after_minutes} minutes it was given at step {s.step}",
                        lambda j=j, app=e.app: ep.first_after(
                            j,
                            lambda u: (
                                u.call.app == app
                                and not any(isinstance(x, FaultInjected) for x in u.events)
                            ),
                        ),
                    )
                    break
