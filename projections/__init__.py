"""Projections: pure folds of the log into world state, milestones, rewards, observations and
summaries."""

from __future__ import annotations

from .milestones import (
    Milestone,
    MilestoneGraph,
    achieved,
    graph_for,
    milestones_for,
    progress,
)
from .mistakes import LABELS, Mistake, analyse, decisive, mistakes
from .observation import render_result, render_world, tool_manifest
from .replay import Replay, StepRecord, cached_rewards, replay, resume
from .reward import (
    PROFILES,
    RewardProfile,
    ScoreState,
    StepScore,
    dominance_margin,
    get_profile,
    initial_score,
    score_step,
)
from .summary import EpisodeSummary, Headline, headline, summarize

__all__ = [
    "LABELS",
    "PROFILES",
    "EpisodeSummary",
    "Headline",
    "Milestone",
    "MilestoneGraph",
    "Mistake",
    "Replay",
    "RewardProfile",
    "ScoreState",
    "StepRecord",
    "StepScore",
    "achieved",
    "analyse",
    "cached_rewards",
    "decisive",
    "dominance_margin",
    "get_profile",
    "graph_for",
    "headline",
    "initial_score",
    "milestones_for",
    "mistakes",
    "progress",
    "render_result",
    "render_world",
    "replay",
    "resume",
    "score_step",
    "summarize",
    "tool_manifest",
]
