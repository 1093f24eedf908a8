"""What an evaluation reports: success, return, steps and pass^k, per group of episodes.

pass^k is tau-bench's reliability measure: the chance that *all* k trials of a task succeed.
For a task tried n times with c successes, the unbiased estimate is C(c, k) / C(n, k); a
group's pass^k is the mean over its tasks (here: instances, one family, difficulty and seed).
pass^1 is the success rate; pass^k falls with k unless the agent is consistent.

Every rate comes with a 95% interval: Wilson's score interval for the success rate (episodes
are the trials), a bootstrap over instances for pass^k (trials of one instance are not
independent, instances are: resampled with replacement, a fixed seed, so that reports are
reproducible), and the normal interval of the mean return.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import asdict, dataclass, field, fields
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
    prompt_tokens: int = 0
    """Tokens the model read over the episode (as its endpoint counted them; 0: no model)."""
    completion_tokens: int = 0
    requests: int = 0
    """Model requests (one a step, retries by the client not counted)."""
    model_seconds: float = 0.0
    """Time spent waiting for the model."""
    transcript: list[dict[str, Any]] | None = field(default=None, compare=False)
    """The model's replies, step by step (raw content and tool calls, tokens, latency): the
    episode log's, not the results table's."""

    @property
    def success(self) -> bool:
        return self.outcome == "success"

    @property
    def instance(self) -> tuple[str, int, int]:
        return (self.family, self.difficulty, self.seed)

    def as_dict(self) -> dict[str, Any]:
        """The record without its transcript (what results.json lists)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "transcript"}
        return {**out, "success": self.success}

    def log_line(self) -> dict[str, Any]:
        """Everything, transcript included (a line of the episode log)."""
        return {**self.as_dict(), "transcript": self.transcript}

    @classmethod
    def from_log(cls, line: dict[str, Any]) -> Record:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in line.items() if k in names})

    @property
    def key(self) -> tuple[str, str, int, int, int]:
        """What identifies the job that played it: agent, instance, trial."""
        return (self.agent, self.family, self.difficulty, self.seed, self.trial)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that k trials drawn from n (c of them successes) all succeed."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n, not n={n} c={c} k={k}")
    return comb(c, k) / comb(n, k)


Interval = tuple[float, float]

Z95 = 1.959963984540054
BOOTSTRAP_DRAWS = 1000


def wilson(successes: int, n: int, z: float = Z95) -> Interval:
    """Wilson's score interval for a proportion: good at small n and near 0 or 1, where the
    normal interval says nonsense (below 0, or zero width)."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return (lo, hi)


def bootstrap(values: list[float], draws: int = BOOTSTRAP_DRAWS, seed: int = 0) -> Interval:
    """The 95% percentile interval of the mean of ``values`` over resamples with replacement
    (a fixed seed: the same records give the same interval)."""
    if not values:
        return (0.0, 1.0)
    if len(set(values)) == 1:
        return (values[0], values[0])
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(draws))
    return (means[int(0.025 * draws)], means[min(draws - 1, int(0.975 * draws))])


def mean_interval(values: list[float], z: float = Z95) -> Interval:
    m = statistics.mean(values)
    if len(values) < 2:
        return (m, m)
    half = z * statistics.stdev(values) / math.sqrt(len(values))
    return (m - half, m + half)


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
    success_ci: Interval = (0.0, 1.0)
    """Wilson 95% interval of the success rate."""
    pass_k_ci: tuple[Interval, ...] = ()
    """Bootstrap (over instances) 95% intervals of pass^1 .. pass^k."""
    return_ci: Interval = (0.0, 0.0)
    """Normal 95% interval of the mean return."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["pass_k"] = {str(i + 1): v for i, v in enumerate(self.pass_k)}
        out["pass_k_ci"] = {str(i + 1): list(v) for i, v in enumerate(self.pass_k_ci)}
        out["success_ci"], out["return_ci"] = list(self.success_ci), list(self.return_ci)
        return out


def summarize(records: list[Record]) -> Summary:
    by_instance: dict[tuple[str, int, int], list[bool]] = defaultdict(list)
    for r in records:
        by_instance[r.instance].append(r.success)
    k = min(len(v) for v in by_instance.values())
    per_instance = [
        [pass_hat_k(len(v), sum(v), j) for v in by_instance.values()] for j in range(1, k + 1)
    ]
    returns = [r.total_return for r in records]
    wins = sum(r.success for r in records)
    return Summary(
        episodes=len(records),
        instances=len(by_instance),
        success=wins / len(records),
        mean_return=float(statistics.mean(returns)),
        mean_steps=float(statistics.mean(r.steps for r in records)),
        mean_errors=float(statistics.mean(r.errors for r in records)),
        pass_k=tuple(statistics.mean(values) for values in per_instance),
        success_ci=wilson(wins, len(records)),
        pass_k_ci=tuple(bootstrap(values) for values in per_instance),
        return_ci=mean_interval(returns),
        prompt_tokens=sum(r.prompt_tokens for r in records),
        completion_tokens=sum(r.completion_tokens for r in records),
        model_seconds=round(sum(r.model_seconds for r in records), 3),
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
