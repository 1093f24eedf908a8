"""The chaos catalogue and the dial that sets it: difficulty 0 (no chaos at all) to 3; level 2
reproduces the original CompanyOS's probabilities.

Every piece of chaos is an event with its parameters: set-up chaos is a `ChaosInjected` in the
initial world, chance during play is drawn from the keyed RNG and recorded (`FaultInjected`,
`ChaosInjected`), so replay never needs the RNG. The caps (faults per episode, chance
rejections per request) keep every instance solvable within its step budget: the step budget
comes from the honest solver's worst case, simulated when the instance is built, plus one step
per transient fault allowed (a fault takes no time, so it costs just its retry).
"""

from __future__ import annotations

from dataclasses import dataclass

from companyos.events.types import FaultInjected

from .model import World
from .rng import KeyedRNG


@dataclass(frozen=True, slots=True)
class ChaosProfile:
    level: int
    fault_rate: float
    """Chance that a non-list call fails transiently ("unavailable, retry")."""
    setup_chaos: float
    """Chance that each chaos item of the original's kinds an instance offers (a missing
    field, a blocked ticket, a stale metric, an approver away) is present."""
    extra_chaos: bool
    """Put that chaos on everything the task needs, not only where the original had it."""
    polls: tuple[int, int]
    """Steps of the clock an approver takes to decide (inclusive range)."""
    rejection_rate: float
    """Chance that a correct request is rejected anyway (must be escalated)."""
    max_chance_rejections: int
    min_fault_slack: int
    """Steps beyond the honest solver's worst case kept for transient faults (grows the
    budget)."""
    duplicate_rate: float = 0.0
    delegate_chain_rate: float = 0.0
    rate_limit_rate: float = 0.0
    outage_rate: float = 0.0
    stale_during_rate: float = 0.0
    restricted_rate: float = 0.0
    sla_minutes: int | None = None
    inherent: bool = True
    """Chaos that is the point of a family (the contract whose figures disagree, the data that
    needs access, the delegate who is also away) appears from level 1."""


LEVELS: dict[int, ChaosProfile] = {
    0: ChaosProfile(0, 0.0, 0.0, False, (1, 1), 0.0, 0, 0, inherent=False),
    1: ChaosProfile(1, 0.05, 0.5, False, (1, 2), 0.10, 1, 1),
    2: ChaosProfile(2, 0.10, 1.0, False, (1, 3), 0.20, 2, 2),
    3: ChaosProfile(
        3,
        0.20,
        1.0,
        True,
        (1, 3),
        0.30,
        2,
        3,
        duplicate_rate=0.5,
        delegate_chain_rate=0.3,
        rate_limit_rate=0.5,
        outage_rate=0.5,
        stale_during_rate=0.5,
        restricted_rate=0.25,
        sla_minutes=30,
    ),
}
DIFFICULTIES = tuple(LEVELS)
ORIGINAL_DIFFICULTY = 2


@dataclass(frozen=True, slots=True)
class ChaosKind:
    name: str
    original: bool
    """One of the seven the original CompanyOS had."""
    what: str
    levels: tuple[str, str, str, str]
    """What each difficulty does with it."""


CATALOGUE: tuple[ChaosKind, ...] = (
    ChaosKind(
        "transient_fault",
        True,
        "a non-list call fails with 'unavailable, retry'",
        ("never", "5% of calls", "10% of calls", "20% of calls"),
    ),
    ChaosKind(
        "missing_field",
        True,
        "a ticket lacks its priority or assignee",
        ("never", "each p=0.5", "as the original", "also on every task ticket"),
    ),
    ChaosKind(
        "blocked_ticket",
        True,
        "a ticket is blocked and cannot be closed directly",
        ("never", "p=0.5", "as the original", "as the original"),
    ),
    ChaosKind(
        "stale_metric",
        True,
        "DataHub serves a days-old cached value until refreshed",
        ("never", "each p=0.5", "as the original", "every metric the task needs"),
    ),
    ChaosKind(
        "out_of_office",
        True,
        "the approver is away; a delegate acts for them",
        ("never", "p=0.5", "as the original", "every approver the task needs"),
    ),
    ChaosKind(
        "approval_latency",
        True,
        "the approver takes a few steps to decide",
        ("next step", "1-2 steps", "1-3 steps", "1-3 steps"),
    ),
    ChaosKind(
        "approval_rejection",
        True,
        "a correct request is rejected; escalate it",
        ("never", "10%, once", "20%, twice at most", "30%, twice at most"),
    ),
    ChaosKind(
        "rate_limit",
        False,
        "an app answers 429 with a retry-after past a call rate",
        ("never", "never", "never", "p=0.5 on one app the task uses"),
    ),
    ChaosKind(
        "partial_outage",
        False,
        "one app is down for a stretch of the episode",
        ("never", "never", "never", "p=0.5, 15-30 minutes"),
    ),
    ChaosKind(
        "approval_sla",
        False,
        "requests left undecided expire after a deadline",
        ("none", "none", "none", "30 minutes"),
    ),
    ChaosKind(
        "delegate_chain",
        False,
        "the delegate is away too; their delegate acts",
        ("never", "incident family", "incident family", "incident family; p=0.3 else"),
    ),
    ChaosKind(
        "conflicting_values",
        False,
        "the ticket states a figure DataHub contradicts",
        ("never", "contract family", "contract family", "contract family"),
    ),
    ChaosKind(
        "duplicate_ticket",
        False,
        "a second ticket duplicates the task's ticket",
        ("never", "never", "never", "p=0.5"),
    ),
    ChaosKind(
        "permission_denied",
        False,
        "a metric is in a restricted dataset; request access",
        ("never", "access family", "access family", "access family; p=0.25 else"),
    ),
    ChaosKind(
        "stale_during_episode",
        False,
        "fresh data goes stale while the episode runs",
        ("never", "never", "never", "p=0.5 on a metric the task needs"),
    ),
)
KIND_NAMES = tuple(k.name for k in CATALOGUE)


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


def unavailable(world: World, app: str, method: str) -> FaultInjected | None:
    """The service refusing a call by itself: down for an outage, or rate-limited (the call
    just made counts: hammering a limited service keeps it closed)."""
    now = world.clock
    s = world.services
    outage = s.outages.get(app)
    if outage is not None and outage[0] <= now < outage[1]:
        return FaultInjected(app=app, method=method, kind="outage", until_minute=outage[1])
    limit = s.limits.get(app)
    if limit is not None:
        calls, window = limit
        recent = [t for t in s.calls.get(app, ()) if t > now - window]
        if len(recent) > calls:
            # Once the oldest of the last `calls` calls leaves the window, one more fits.
            retry = recent[-calls] + window - now
            return FaultInjected(
                app=app, method=method, kind="rate_limited", retry_after_minutes=max(1, retry)
            )
    return None
