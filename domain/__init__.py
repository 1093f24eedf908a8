"""The simulation, pure: the three apps as deciders, the world they share, the chaos dial,
the scenario templates and the oracle. No I/O, no clock, no global randomness."""

from __future__ import annotations

from .catalogue import APPS, BY_NAME, TOOLS, manifest
from .chaos import DIFFICULTIES, LEVELS, ORIGINAL_DIFFICULTY, ChaosProfile, profile
from .decider import decide_step
from .limits import DEFAULT_LIMITS, Limits
from .model import World
from .oracle import Call, plan
from .rng import KeyedRNG
from .scenarios import SCENARIO_IDS, SCENARIOS, UnknownScenario, build_episode, resolve_scenario
from .world import evolve, fold

__all__ = [
    "APPS",
    "BY_NAME",
    "DEFAULT_LIMITS",
    "DIFFICULTIES",
    "LEVELS",
    "ORIGINAL_DIFFICULTY",
    "SCENARIOS",
    "SCENARIO_IDS",
    "TOOLS",
    "Call",
    "ChaosProfile",
    "KeyedRNG",
    "Limits",
    "UnknownScenario",
    "World",
    "build_episode",
    "decide_step",
    "evolve",
    "fold",
    "manifest",
    "plan",
    "profile",
    "resolve_scenario",
]
