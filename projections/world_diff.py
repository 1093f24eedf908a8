"""What changed between two rendered worlds (`render_world` output), as a flat list of changes
a person can read and a page can highlight.

Lists of records (tickets, metrics, people, approvals) are matched by their identity, not their
position, so a new approval shows as one added record rather than a shifted list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

IDENTITY_KEYS = ("approval_id", "ticket_id", "metric", "email", "name", "id")
"""Keys that name a record in a rendered list, tried in this order."""

Op = Literal["added", "removed", "changed"]
Path = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Change:
    path: Path
    """Keys from the world's root; a record in a list is named by its identity."""
    op: Op
    before: Any = None
    after: Any = None

    def as_dict(self) -> dict[str, Any]:
        return {"path": list(self.path), "op": self.op, "before": self.before, "after": self.after}


def _names(items: list[Any], key: str) -> bool:
    values = [i.get(key) if isinstance(i, dict) else None for i in items]
    return all(isinstance(v, str) for v in values) and len(set(values)) == len(values)


def _identity(before: list[Any], after: list[Any]) -> str | None:
    """The key that names every record of both lists uniquely, if there is one."""
    if not before and not after:
        return None
    for key in IDENTITY_KEYS:
        if _names(before, key) and _names(after, key):
            return key
    return None


def _keyed(items: list[Any], key: str) -> dict[str, Any]:
    return {i[key]: i for i in items}


def diff(before: Any, after: Any, path: Path = ()) -> list[Change]:
    """Changes that turn ``before`` into ``after``, leaves first-class: a changed field is one
    change at that field's path; an added or removed record is one change at the record's."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[Change] = []
        # In document order (before's keys, then new ones), so changes read top to bottom.
        for k in [*before, *(k for k in after if k not in before)]:
            sub = (*path, str(k))
            if k not in after:
                out.append(Change(sub, "removed", before=before[k]))
            elif k not in before:
                out.append(Change(sub, "added", after=after[k]))
            else:
                out.extend(diff(before[k], after[k], sub))
        return out
    if isinstance(before, list) and isinstance(after, list):
        key = _identity(before, after)
        if key is None:
            # Lists of plain values (chaos kinds, tags) read best as one before/after.
            return [Change(path, "changed", before=before, after=after)]
        old, new = _keyed(before, key), _keyed(after, key)
        out = []
        for ident in [*old, *(i for i in new if i not in old)]:
            sub = (*path, ident)
            if ident not in new:
                out.append(Change(sub, "removed", before=old[ident]))
            elif ident not in old:
                out.append(Change(sub, "added", after=new[ident]))
            else:
                out.extend(diff(old[ident], new[ident], sub))
        return out
    return [Change(path, "changed", before=before, after=after)]
