"""A real tool called with arguments it cannot take, or naming nothing. A failed read that a
later call of the same tool corrected is harmless: it stays in the table, never decisive."""

from __future__ import annotations

from collections.abc import Iterator

from companyos.events.types import ActionRejected, InvalidAction

from ..context import BAD_REFERENCE, PSEUDO_APP, READS, Episode, Suspect, tool, understood

LABEL = "invalid_params"
ORDER = 30
DEFINITION = (
    "Called a real tool with parameters it cannot accept: malformed or missing arguments, or "
    "an id or name that names nothing. Made good by a later call of the same tool that it "
    "understood; a failed read made good so is harmless (never decisive)."
)


def find(ep: Episode) -> Iterator[Suspect]:
    for i, s in enumerate(ep.steps):
        if s.call.app == PSEUDO_APP:
            continue
        for e in s.events:
            if isinstance(e, InvalidAction) and e.code != "unknown_tool":
                why = f"{s.call.app}.{s.call.method} refused its parameters ({e.code})"
            elif isinstance(e, ActionRejected) and e.code in BAD_REFERENCE:
                why = f"{s.call.app}.{s.call.method} named nothing it could act on ({e.code})"
            else:
                continue
            same = tool(s)
            good = ep.first_after(i, lambda t, same=same: tool(t) == same and understood(t))
            yield Suspect(
                LABEL,
                s.step,
                why,
                lambda good=good: good,
                harmless=same in READS and good is not None,
            )
            break
