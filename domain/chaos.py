"""The chaos dial: difficulty 0 (no chaos at all) to 3; level 2 is the original CompanyOS.

Every probability below is drawn from the keyed RNG and every outcome is written to the log
as an event, so replay never needs the RNG. The caps (faults per episode, chance rejections
per request) exist so that every instance stays solvable within its step budget: the oracle's
worst case is computed per instance and the fault budget is what is left of the step budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from companyos.events.types import FaultInjected

from .rng import KeyedRNG


@dataclass(frozen=True, slots=True)
class ChaosProfile:
    level: int
    fault_rate: float
    """Chance that a non-list call fails transiently ("unavailable, retry")."""
    setup_chaos: float
    """Chance that each chaos item of the original's world (missing fields, a blocked ticket,
    stale metrics, an out-of-office approver) is present."""
    extra_chaos: bool
    """Add chaos beyond the scenario's own: every needed metric stale, every needed approver
    away."""
    polls: tuple[int, int]
    """Status polls an approval needs before it is decided (inclusive range)."""
    rejection_rate: float
    """Chance that a correct request is rejected anyway (must be escalated)."""
    max_chance_rejections: int
    min_fault_slack: int
    """Steps beyond the oracle's worst case kept for transient faults (grows the budget)."""


LEVELS: dict[int, ChaosProfile] = {
    0: ChaosProfile(0, 0.0, 0.0, False, (1, 1), 0.0, 0, 0),
    1: ChaosProfile(1, 0.05, 0.5, False, (1, 2), 0.10, 1, 1),
    2: ChaosProfile(2, 0.10, 1.0, False, (1, 3), 0.20, 2, 2),
    3: ChaosProfile(3, 0.20, 1.0, True, (1, 3), 0.30, 2, 3),
}
DIFFICULTIES = tuple(LEVELS)
ORIGINAL_DIFFICULTY = 2


def profile(level: int) -> ChaosProfile:
    try:
        return LEVELS[level]
    except KeyError:
        raise ValueError(f"difficulty must be one of {list(LEVELS)}, not {level!r}") from None


def roll_fault(
    rng: KeyedRNG,
    seq: int,
    chaos: ChaosProfile,
    faults_so_far: int,
    fault_budget: int,
    app: str,
    method: str,
) -> FaultInjected | None:
    if faults_so_far >= fault_budget or not rng.chance(seq, "fault", chaos.fault_rate):
        return None
    return FaultInjected(app=app, method=method, kind="unavailable")
