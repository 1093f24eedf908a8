"""The in-process OpenEnv API (environment, wire models, episode aggregate)."""

from __future__ import annotations

from .environment import CompanyOSEnvironment
from .episode import Episode, EpisodeNotFound, ResetError
from .models import CompanyOSAction, CompanyOSObservation, CompanyOSState

__all__ = [
    "CompanyOSAction",
    "CompanyOSEnvironment",
    "CompanyOSObservation",
    "CompanyOSState",
    "Episode",
    "EpisodeNotFound",
    "ResetError",
]
