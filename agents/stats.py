"""What an evaluation reports: success, return, steps and pass^k, per group of episodes.

pass^k is tau-bench's reliability measure: the chance that *all* k trials of a task succeed.
For a task tried n times with c successes, the unbiased estimate is C(c, k) / C(n, k); a
group's pass^k is the mean over its tasks (here: instances, one family, difficulty and seed).
pass^1 is the success rate; pass^k falls with k unless the agent is consistent.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import asdict, dataclass
from math import comb
from typing import Any


@dataclass(frozen=True, slots=True)
class Record:
    """One evaluated episode."""

    agent: str
    family: str
    difficulty: int
    seed: int
    trial: int
    episode_id: str
    outcome: str | None
    steps: int
    total_return: float
    errors: int
    seconds: float

    @property
    def success(self) -> bool:
        return self.outcome == "success"

    @property
    def instance(self) -> tuple[str, int, int]:
        return (self.family, self.difficulty, self.seed)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "success": self.success}


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that k trials drawn from n (c of them successes) all succeed."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n, not n={n} c={c} k={k}")
    return comb(c, k) / comb(n, k)


@dataclass(frozen=True, slots=True)
class Summary:
    episodes: int
    instances: int
    success: float
    mean_return: float
    mean_steps: float
    mean_errors: float
    pass_k: tuple[float, ...]
    """pass^1 .. pass^k, k the fewest trials any instance of the group had."""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["pass_k"] = {str(i + 1): v for i, v in enumerate(self.pass_k)}
        return out


def summarize(records: list[Record]) -> Summary:
    by_instance: dict[tuple[str, int, int], list[bool]] = defaultdict(list)
    for r in records:
        by_instance[r.instance].append(r.success)
    k = min(len(v) for v in by_instance.values())
    pass_k = tuple(
        statistics.mean(pass_hat_k(len(v), sum(v), j) for v in by_instance.values())
        for j in range(1, k + 1)
    )
    return Summary(
        episodes=len(records),
        instances=len(by_instance),
        success=float(statistics.mean(r.success for r in records)),
        mean_return=float(statistics.mean(r.total_return for r in records)),
        mean_steps=float(statistics.mean(r.steps for r in records)),
        mean_errors=float(statistics.mean(r.errors for r in records)),
        pass_k=pass_k,
    )


def group(records: Iterable[Record], key: Callable[[Record], Hashable]) -> dict[Any, Summary]:
    """A summary per value of ``key``, in the order the values first appear."""
    return {g: summarize(rs) for g, rs in group_records(records, key).items()}


def report(records: list[Record]) -> dict[str, dict[str, Any]]:
    """Per agent: every (family, difficulty) cell, every difficulty, every family, and all."""
    out: dict[str, dict[str, Any]] = {}
    for agent, mine in group_records(records, lambda r: r.agent).items():
        out[agent] = {
            "cells": group(mine, lambda r: (r.family, r.difficulty)),
            "difficulty": group(sorted(mine, key=lambda r: r.difficulty), lambda r: r.difficulty),
            "family": group(mine, lambda r: r.family),
            "all": summarize(mine),
        }
    return out


def group_records(
    records: Iterable[Record], key: Callable[[Record], Hashable]
) -> dict[Any, list[Record]]:
    """The records per value of ``key``, in the order the values first appear."""
    groups: dict[Any, list[Record]] = {}
    for r in records:
        groups.setdefault(key(r), []).append(r)
    return groups
