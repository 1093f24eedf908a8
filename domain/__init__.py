"""The simulation, pure: the three apps as deciders, the world they share, the chaos dial,
the scenario templates and the oracle. No I/O, no clock, no global randomness."""

from __future__ import annotations

from .catalogue import APPS, BY_NAME, TOOLS, manifest
from .chaos import DIFFICULTIES, LEVELS, ORIGINAL_DIFFICULTY, ChaosProfile, profile
from .decider import decide_step
from .families import FAMILIES, FAMILY_NAMES, ORIGINAL_FAMILIES
from .instances import (
    GENERATOR,
    HELD_OUT,
    SUITES,
    Instance,
    UnknownScenario,
    build_episode,
    build_instance,
    fingerprint,
    instance_id,
    parse_instance_id,
    resolve_family,
)
from .limits import DEFAULT_LIMITS, Limits
from .model import World
from .oracle import Call, plan
from .rng import KeyedRNG
from .world import evolve, fold

__all__ = [
    "APPS",
    "BY_NAME",
    "DEFAULT_LIMITS",
    "DIFFICULTIES",
    "FAMILIES",
    "FAMILY_NAMES",
    "GENERATOR",
    "HELD_OUT",
    "LEVELS",
    "ORIGINAL_DIFFICULTY",
    "ORIGINAL_FAMILIES",
    "SUITES",
    "TOOLS",
    "Call",
    "ChaosProfile",
    "Instance",
    "KeyedRNG",
    "Limits",
    "UnknownScenario",
    "World",
    "build_episode",
    "build_instance",
    "decide_step",
    "evolve",
    "fingerprint",
    "fold",
    "instance_id",
    "manifest",
    "parse_instance_id",
    "plan",
    "profile",
    "resolve_family",
]
