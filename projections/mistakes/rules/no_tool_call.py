"""A reply with no tool call: the agent wrote prose (gave up, asked, explained) instead of
acting. Not a hallucinated tool: it named no tool at all."""

from __future__ import annotations

from collections.abc import Iterator

from ..context import PSEUDO_APP, Episode, Suspect, text, understood

LABEL = "no_tool_call"
ORDER = 10
DEFINITION = (
    "Replied without calling a tool (prose, an empty reply, a call the agent could not "
    "write): it gave up or did not act. Made good when it goes back to work with a real call."
)


def find(ep: Episode) -> Iterator[Suspect]:
    for i, s in enumerate(ep.steps):
        if s.call.app != PSEUDO_APP:
            continue
        said = text((s.call.params or {}).get("content") if isinstance(s.call.params, dict) else "")
        quote = f": {said[:60]!r}" if said else ""
        yield Suspect(
            LABEL,
            s.step,
            f"replied without a tool call ({s.call.method}){quote}",
            lambda i=i: ep.first_after(i, lambda t: t.call.app != PSEUDO_APP and understood(t)),
        )
