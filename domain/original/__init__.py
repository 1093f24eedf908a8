"""The original CompanyOS's fixed worlds: its five tasks under its own task ids
(`task_vendor_onboarding`, ...), the seed deciding only the chance draws."""

from __future__ import annotations

from .worlds import (
    METRIC_BY_NAME,
    ROLE_NAMES,
    TAGS,
    TASK_IDS,
    TASKS,
    OriginalTask,
    draw_task,
    episode_events,
    resolve_task,
)

__all__ = [
    "METRIC_BY_NAME",
    "ROLE_NAMES",
    "TAGS",
    "TASKS",
    "TASK_IDS",
    "OriginalTask",
    "draw_task",
    "episode_events",
    "resolve_task",
]
