"""Flawed agents: observation-only agents with one realistic flaw each (`base`), the fixtures
that show failure analysis names the flaw. Each module is one flaw, found here by itself (adding
a flaw is adding a module); its ``label`` is what the analysis should call a failure it
caused (its rule: `projections/mistakes/rules/<label>.py`)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable

from .base import Flawed


def _discover() -> dict[str, Callable[[], Flawed]]:
    found: dict[str, Callable[[], Flawed]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Flawed) and cls is not Flawed and cls.__module__ == module.__name__:
                key = f"{cls.label}:{cls.flaw}" if cls.flaw else cls.label
                if key in found:
                    raise TypeError(f"two flawed agents for {key}: give one a `flaw`")
                found[key] = cls
    return found


FLAWED: dict[str, Callable[[], Flawed]] = _discover()
"""Each flawed agent by the label of its flaw (``label:flaw`` when two flaws share a label)."""

__all__ = ["FLAWED", "Flawed"]
