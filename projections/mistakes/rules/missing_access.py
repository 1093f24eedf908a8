"""Needing restricted data and not asking for access to it."""

from __future__ import annotations

from collections.abc import Iterator

from companyos.events.types import ActionRejected

from ..context import Episode, Suspect, find_metric, param

LABEL = "missing_access"
ORDER = 120
DEFINITION = (
    "Needed data from a restricted dataset and had not requested access to it: was refused "
    "the data, or submitted or decided on it. Made good by a later access request."
)


def find(ep: Episode) -> Iterator[Suspect]:
    yield from ep.data_mistakes(LABEL)
    for i, s in enumerate(ep.steps):
        for e in s.events:
            if not (isinstance(e, ActionRejected) and e.code == "permission_denied"):
                continue
            m = find_metric(ep.before[i], param(s.call, "metric_name"))
            dataset = m.dataset if m is not None else None
            if not dataset or dataset in ep.requested(i):
                continue
            # Being refused is how an agent learns the data is restricted; the mistake is
            # not asking (before or after).
            yield Suspect(
                LABEL,
                s.step,
                f"was refused {m.name if m else '?'} (restricted dataset {dataset!r}) without "
                "having requested access",
                lambda i=i, dataset=dataset: next(
                    (t.step for j, t in ep.later(i) if dataset in ep.requested(j)), None
                ),
            )
