"""The in-process OpenEnv API (environment, wire models, episode aggregate).

The names are imported lazily: `companyos.api.settings` and the other light modules must not
pull in the OpenEnv server stack, which the command line pays for on every call otherwise
(`companyos --help` included). When it is imported, it comes without OpenEnv's web UI
(`openenv_import`)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from . import openenv_import

openenv_import.install()

if TYPE_CHECKING:
    from .environment import CompanyOSEnvironment
    from .episode import Episode, EpisodeNotFound, ResetError
    from .models import CompanyOSAction, CompanyOSObservation, CompanyOSState

_EXPORTS = {
    "CompanyOSAction": ".models",
    "CompanyOSEnvironment": ".environment",
    "CompanyOSObservation": ".models",
    "CompanyOSState": ".models",
    "Episode": ".episode",
    "EpisodeNotFound": ".episode",
    "ResetError": ".episode",
}

__all__ = [
    "CompanyOSAction",
    "CompanyOSEnvironment",
    "CompanyOSObservation",
    "CompanyOSState",
    "Episode",
    "EpisodeNotFound",
    "ResetError",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
