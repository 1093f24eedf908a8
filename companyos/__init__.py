"""CompanyOS: an event-sourced OpenEnv environment of chaotic enterprise workflows.

The public names live in the layer packages; the common ones are re-exported lazily here so
that `import companyos` stays cheap (the OpenEnv server stack is heavy to import):

    from companyos import CompanyOSEnvironment, CompanyOSAction
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "CompanyOSEnvironment": "companyos.api",
    "CompanyOSAction": "companyos.api",
    "CompanyOSObservation": "companyos.api",
    "CompanyOSState": "companyos.api",
    "ResetError": "companyos.api",
    "open_store": "companyos.events",
    "InMemoryEventStore": "companyos.events",
    "ConcurrencyConflict": "companyos.events",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'companyos' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
