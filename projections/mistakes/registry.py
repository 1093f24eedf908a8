"""The label rules and the taxonomy: every label with its definition.

Each module of `rules/` is one label (``LABEL``, ``DEFINITION``, ``ORDER``, ``find``) and is
found here by itself: adding a label is adding a module. ``ORDER`` places it in the tie-break
order, which follows the workflow (the call itself, tickets, access, data, routing, outcomes);
the verdicts about a whole episode come after (`verdicts`)."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from . import rules, verdicts


def _discover() -> tuple[ModuleType, ...]:
    found = [
        importlib.import_module(f"{rules.__name__}.{info.name}")
        for info in pkgutil.iter_modules(rules.__path__)
    ]
    for module in found:
        for name in ("LABEL", "DEFINITION", "ORDER", "find"):
            if not hasattr(module, name):
                raise TypeError(f"rule module {module.__name__} has no {name}")
    labels = [m.LABEL for m in found]
    if len(set(labels)) != len(labels):
        raise TypeError(f"two rule modules share a label: {sorted(labels)}")
    return tuple(sorted(found, key=lambda m: (m.ORDER, m.LABEL)))


RULES: tuple[ModuleType, ...] = _discover()
"""Rules that find mistakes at steps, each one label, in tie-break order."""

LABELS: dict[str, str] = {
    **{rule.LABEL: rule.DEFINITION for rule in RULES},
    **verdicts.DEFINITIONS,
}
"""Every label with its definition (docs/failure_taxonomy.md), in tie-break order: the step
rules, then the verdicts about a whole episode or its instance."""

RANK = {label: i for i, label in enumerate(LABELS)}
