"""A small warehouse filled with plausible rows, for the analytics tests that need data but not
the cost (or the moving parts) of playing episodes: the sandbox and the report.

The rows follow the contract (analytics/sql/schema.sql) and its invariants: ``steps`` rows add
up to each episode's return and step count, ``events`` are numbered by global position and by
stream, ``failures`` holds one row per ended failed episode (with the point of no return on most
of them), and ``checkpoint`` is the highest position loaded. Several agents play each instance
several times (so pass^k and the noise floor have something to measure); a few episodes are
still running, one is a fork, and one agent is not named. Everything comes from one seed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from companyos.domain.catalogue import TOOLS

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "analytics" / "sql" / "schema.sql"

FAMILIES = (
    "vendor_onboarding",
    "expense_report",
    "bug_escalation",
    "license_renewal",
    "purchase_order",
    "incident_escalation",
)
CHAOS_KINDS = (
    "missing_field",
    "blocked_ticket",
    "stale_metric",
    "out_of_office",
    "approval_latency",
    "approval_rejection",
    "rate_limit",
    "partial_outage",
)
LABELS = {
    "hallucinated_tool": "Called a tool that does not exist.",
    "invalid_params": "Called a tool with parameters it does not accept.",
    "stale_data": "Used a metric value that was stale without refreshing it.",
    "out_of_office_approver": "Routed an approval to an approver who is out of office.",
    "skipped_verification": "Closed the workflow without verifying the ticket.",
    "closed_blocked_ticket": "Tried to close a ticket that was blocked.",
    "gave_up_after_rejection": "Stopped after an approval was rejected instead of escalating.",
    "no_retry_after_fault": "Did not retry after a transient fault.",
    "timed_out_polling": "Ran out of steps while polling an approval.",
    "wrong_data": "Submitted data that did not match the record.",
    "infeasible_pushed": "Pushed through a request that should have been declined.",
}
# (agent, chance of success, trials per instance): the unnamed agent plays once.
AGENTS: tuple[tuple[str | None, float, int], ...] = (
    ("oracle", 0.95, 3),
    ("random", 0.08, 3),
    ("llm:gpt-4o-mini", 0.55, 3),
    (None, 0.4, 1),
)
T0 = dt.datetime(2025, 3, 1, 9, 0, 0)
COLUMNS: dict[str, tuple[str, ...]] = {
    "events": (
        "position",
        "episode_id",
        "seq",
        "type",
        "schema_version",
        "data",
        "hash",
        "recorded_at",
    ),
    "steps": (
        "episode_id",
        "step",
        "app",
        "method",
        "tool",
        "params",
        "outcome",
        "error_code",
        "fault",
        "chaos",
        "reward",
        "return_so_far",
        "gained",
        "lost",
        "clock_minutes",
    ),
    "episodes": (
        "episode_id",
        "scenario",
        "family",
        "instance_id",
        "seed",
        "difficulty",
        "agent",
        "outcome",
        "success",
        "total_return",
        "steps",
        "max_steps",
        "invalid_actions",
        "rejected_actions",
        "faults",
        "chaos_kinds",
        "forked_from",
        "fork_step",
        "started_at",
        "updated_at",
        "last_position",
    ),
    "failures": (
        "episode_id",
        "label",
        "step",
        "detail",
        "point_of_no_return",
        "no_return_checked",
    ),
    "mistakes": (
        "episode_id",
        "step",
        "label",
        "evidence",
        "made_good_at",
        "decisive",
        "harmless",
    ),
    "taxonomy": ("label", "description"),
}


@dataclass(frozen=True, slots=True)
class Filled:
    path: Path
    episodes: int
    events: int
    steps: int
    failures: int


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(SCHEMA.read_text())


def empty_warehouse(path: Path) -> Path:
    """A warehouse file with the schema and no rows (what a fresh store gives)."""
    con = duckdb.connect(str(path))
    try:
        create_schema(con)
        _insert(con, "taxonomy", list(LABELS.items()))
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return path


def fill_warehouse(path: Path, *, seed: int = 7, instances: int = 12) -> Filled:
    """Create ``path`` (a DuckDB file) with the schema and plausible rows."""
    rng = random.Random(seed)
    tools = [f"{app}.{method}" for app, method in TOOLS]
    episodes: list[tuple[Any, ...]] = []
    steps: list[tuple[Any, ...]] = []
    events: list[tuple[Any, ...]] = []
    failures: list[tuple[Any, ...]] = []
    mistakes: list[tuple[Any, ...]] = []
    position = 0
    serial = 0

    def event(episode_id: str, seq: int, kind: str, data: dict[str, Any], at: dt.datetime) -> None:
        nonlocal position
        position += 1
        digest = hashlib.sha256(f"{episode_id}:{seq}:{kind}:{position}".encode()).hexdigest()
        events.append((position, episode_id, seq, kind, 1, json.dumps(data), digest, at))

    for i in range(instances):
        family = FAMILIES[i % len(FAMILIES)]
        difficulty = i % 4
        instance_seed = 1000 + i
        chaos = (
            sorted(rng.sample(CHAOS_KINDS, rng.randint(1, min(4, difficulty + 1))))
            if difficulty
            else []
        )
        max_steps = 20 + 5 * difficulty
        for agent, p_success, trials in AGENTS:
            for _trial in range(trials):
                serial += 1
                episode_id = f"ep-{serial:04d}"
                started = T0 + dt.timedelta(minutes=7 * serial)
                running = serial % 23 == 0  # a few episodes are still being played
                success = not running and rng.random() < p_success
                if running:
                    outcome, n = None, rng.randint(1, max_steps // 2)
                elif success:
                    outcome, n = "success", rng.randint(6, min(16, max_steps))
                elif rng.random() < 0.7:
                    outcome, n = "timeout", max_steps
                else:
                    outcome, n = "abandoned", rng.randint(1, max_steps - 1)
                seq = 0
                event(
                    episode_id,
                    seq,
                    "EpisodeStarted",
                    {"scenario": family, "seed": instance_seed, "agent": agent},
                    started,
                )
                for kind in chaos:
                    seq += 1
                    event(episode_id, seq, "ChaosInjected", {"kind": kind}, started)
                total = 0.0
                counts = {"invalid": 0, "rejected": 0, "fault": 0}
                first_bad: int | None = None
                for step in range(1, n + 1):
                    tool = rng.choice(tools)
                    app, method = tool.split(".")
                    draw = rng.random()
                    if agent == "oracle" or draw < 0.6:
                        result = "ok"
                    elif draw < 0.75:
                        result = "invalid"
                    elif draw < 0.9:
                        result = "rejected"
                    else:
                        result = "fault"
                    if result != "ok":
                        counts[result] += 1
                        first_bad = first_bad or step
                    gained = [f"milestone_{step}"] if result == "ok" and rng.random() < 0.3 else []
                    reward = (
                        0.2 * len(gained)
                        - (0.1 if result in ("invalid", "rejected") else 0.0)
                        - 0.01
                    )
                    if success and step == n:
                        reward += 1.0
                    reward = round(reward, 4)
                    total = round(total + reward, 4)
                    step_chaos = [rng.choice(chaos)] if chaos and rng.random() < 0.15 else []
                    steps.append(
                        (
                            episode_id,
                            step,
                            app,
                            method,
                            tool,
                            json.dumps({"step": step}),
                            result,
                            {"invalid": "unknown_param", "rejected": "not_allowed"}.get(result),
                            "unavailable" if result == "fault" else None,
                            step_chaos,
                            reward,
                            total,
                            gained,
                            [],
                            3 * step,
                        )
                    )
                    seq += 1
                    event(
                        episode_id,
                        seq,
                        "ToolCalled",
                        {"app": app, "method": method},
                        started + dt.timedelta(seconds=step),
                    )
                if outcome is not None:
                    seq += 1
                    event(
                        episode_id,
                        seq,
                        "EpisodeEnded",
                        {"outcome": outcome},
                        started + dt.timedelta(seconds=n + 1),
                    )
                if outcome is not None and not success:
                    label = rng.choice(sorted(LABELS))
                    # Checked with a step (most), checked with no such step (the oracle
                    # cannot win even from the start), or not checked yet.
                    draw = rng.random()
                    checked = draw < 0.8
                    # k < n for a timeout; an abandonment may walk away from a winnable state.
                    top = n if outcome == "abandoned" else n - 1
                    ponr = rng.randint(0, top) if draw < 0.7 else None
                    failures.append(
                        (
                            episode_id,
                            label,
                            first_bad,
                            f"{label} in {family} (step {first_bad})",
                            ponr,
                            checked,
                        )
                    )
                    # The decisive mistake, and a failed read corrected at once before it.
                    mistakes.append((episode_id, 1, "invalid_params", "a bad read", 2, False, True))
                    mistakes.append(
                        (
                            episode_id,
                            first_bad or 1,
                            label,
                            f"{label} in {family}",
                            None,
                            True,
                            False,
                        )
                    )
                forked = serial == 5
                episodes.append(
                    (
                        episode_id,
                        family,
                        family,
                        f"{family}-{instance_seed}-d{difficulty}",
                        instance_seed,
                        difficulty,
                        agent,
                        outcome,
                        success,
                        total,
                        n,
                        max_steps,
                        counts["invalid"],
                        counts["rejected"],
                        counts["fault"],
                        chaos,
                        "ep-0004" if forked else None,
                        2 if forked else None,
                        started,
                        started + dt.timedelta(seconds=n + 1),
                        position,
                    )
                )

    con = duckdb.connect(str(path))
    try:
        create_schema(con)
        _insert(con, "events", events)
        _insert(con, "steps", steps)
        _insert(con, "episodes", episodes)
        _insert(con, "failures", failures)
        _insert(con, "mistakes", mistakes)
        _insert(con, "taxonomy", list(LABELS.items()))
        con.execute("INSERT INTO checkpoint VALUES (?)", [position])
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return Filled(path, len(episodes), len(events), len(steps), len(failures))


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple[Any, ...]]) -> None:
    # The appender, as the warehouse loads: executemany inserts row by row (seconds here).
    # Columns by name, so that a column the schema gains later (with a default) is no break.
    appender = con.appender(table, columns=list(COLUMNS[table]))
    appender.append_rows(rows)
    appender.flush()
