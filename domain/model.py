"""The world of one episode: what the three apps hold, as immutable values.

State changes only by folding events (`domain.world.evolve`); nothing here mutates. Values are
named tuples (immutable, compared by value, and cheap to build and `_replace`: the step path
builds several per step). Mappings are plain dicts by convention never mutated after
construction: updates build new ones. Because nothing is ever edited, a snapshot of a part of
the world is just a reference to it (a request keeps the tickets and metrics as they were when
it was submitted).

Time is simulated: every step takes `MINUTES_PER_STEP` minutes of the clock, which started at
Monday 09:00; since `companyos/4` a call that failed transiently ("unavailable, retry") takes no
time (`AppRules.untimed_faults`). Staleness, approval decisions and deadlines follow the clock.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from companyos.events.types import Goal

PRIORITIES = ("low", "medium", "high", "critical")
STATUSES = ("open", "in_progress", "blocked", "resolved", "closed")
RESOLUTIONS = ("declined", "flagged")
TICKET_FIELDS = ("priority", "assignee", "status", "verified", "linked_approval", "resolution")
ROLE_TITLES = {
    "cfo": "CFO",
    "cto": "CTO",
    "hr_lead": "HR Lead",
    "procurement": "Procurement",
    "security": "Security",
    "legal": "Legal",
    "eng_manager": "Engineering Manager",
}
MINUTES_PER_STEP = 5
DAY = 1440
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@functools.lru_cache(maxsize=4096)
def clock_label(minute: int) -> str:
    """A readable time for a minute of the clock (minute 0 is Monday 09:00). Kept: every
    observation and several answers ask it, for the few hundred minutes episodes reach."""
    total = 9 * 60 + minute
    day, rest = divmod(total, DAY)
    return f"{_WEEKDAYS[day % 7]} {rest // 60:02d}:{rest % 60:02d}"


class Ticket(NamedTuple):
    ticket_id: str
    title: str
    description: str
    priority: str | None
    assignee: str | None
    status: str
    verified: bool = False
    linked_approval: str | None = None
    blocked_reason: str | None = None
    resolution: str | None = None
    decided_at: int | None = None
    """Clock minute at which ``resolution`` was set."""
    decided_metrics: Mapping[str, Metric] | None = None
    """The metrics as they were when the resolution was set (what the decision rested on)."""

    def get(self, name: str) -> Any:
        return getattr(self, name)


class Metric(NamedTuple):
    name: str
    description: str
    unit: str
    source: str
    value: float
    """What DataHub serves now: a cached copy that may be old."""
    true_value: float
    """The system of record; a refresh brings ``value`` to it."""
    as_of: int
    """Clock minute the served value was taken (negative: before the episode began)."""
    max_age: int
    """Minutes after which the served value is stale."""
    threshold_op: str | None = None
    threshold: float | None = None
    dataset: str | None = None
    version: int = 0
    """Bumps whenever a refresh replaces the served value."""
    fresh_read: int = -1
    """The ``version`` the agent last read while the metric was fresh (-1: never)."""

    def age(self, now: int) -> int:
        return now - self.as_of

    def stale(self, now: int) -> bool:
        return now - self.as_of > self.max_age

    def read_fresh(self, now: int) -> bool:
        """The agent has read the current value while fresh, and it still is."""
        return self.fresh_read == self.version and not self.stale(now)

    def threshold_pass(self, value: float | None = None) -> bool | None:
        v = self.value if value is None else value
        if self.threshold is None or self.threshold_op is None:
            return None
        return {
            ">=": v >= self.threshold,
            "<=": v <= self.threshold,
            ">": v > self.threshold,
            "<": v < self.threshold,
        }[self.threshold_op]


class Person(NamedTuple):
    person_id: str
    name: str
    email: str
    title: str
    role: str | None = None
    delegate: str | None = None
    out_of_office: bool = False
    ooo_note: str | None = None


class ApprovalField(NamedTuple):
    key: str
    kind: str  # "metric" | "ticket" | "text" | "approval"
    metric: str | None = None
    approval_type: str | None = None
    description: str = ""
    optional: bool = False


class ApprovalType(NamedTuple):
    name: str
    description: str
    required_role: str
    fields: tuple[ApprovalField, ...]
    requires_verified_ticket: bool = True
    grants: str | None = None
    """The data key naming the dataset an approved request grants access to."""

    @property
    def keys(self) -> tuple[str, ...]:
        """The data keys a request must carry."""
        return tuple(f.key for f in self.fields if not f.optional)

    @property
    def optional_keys(self) -> tuple[str, ...]:
        return tuple(f.key for f in self.fields if f.optional)


class Evidence(NamedTuple):
    """The world as it was when a request was submitted, kept with the request: the approver
    reviews the request as submitted, and grading asks whether it was made right."""

    at: int
    """Clock minute of submission."""
    routed_to: str | None
    """Who should have received it then (the role holder, or whoever covers while away)."""
    authorized: bool
    tickets: Mapping[str, Ticket]
    metrics: Mapping[str, Metric]
    mismatched: tuple[str, ...] = ()
    """Data keys whose values differ from the system of record at submission."""
    unread: tuple[str, ...] = ()
    """Metric-backed keys the agent had not read fresh before submitting."""
    stale_used: tuple[str, ...] = ()
    """Metric-backed keys whose value was the stale cached one."""
    prior_missing: tuple[str, ...] = ()
    """Approval-backed keys that did not name an approved request of the required type."""
    duplicate_of: str | None = None
    """A request of the same type about the same object that was still open when this one was
    submitted (pending, approved, or rejected by chance and so waiting to be escalated):
    asking twice is a hedge, not work the task calls for."""


class Approval(NamedTuple):
    approval_id: str
    approval_type: str
    approver: str
    data: Mapping[str, Any]
    ticket_id: str | None
    submitted_step: int
    evidence: Evidence
    due_at: int
    """Clock minute from which the approver decides (if in office)."""
    pending_since: int = 0
    """Clock minute it last became pending (submitted or escalated): its SLA runs from here."""
    status: str = "pending"  # pending | approved | rejected | expired
    polls: int = 0
    reason: str | None = None
    cause: str | None = None
    rejections: int = 0
    chance_rejections: int = 0
    escalations: int = 0
    decided_at: int | None = None
    decide_at_poll: int | None = None
    """Under poll rules (`AppRules.decide_on`): the status check that gets the decision (the
    clock then decides nothing)."""


class EpisodeInfo(NamedTuple):
    seed: int
    scenario: str
    difficulty: int
    max_steps: int
    reward_profile: str
    fault_budget: int
    forked_from: tuple[str, int] | None = None
    show_progress: bool = False


class Task(NamedTuple):
    text: str
    goal: Goal
    family: str = ""
    instance_id: str = ""


class ChaosLedger(NamedTuple):
    kinds: frozenset[str] = frozenset()
    faults: int = 0


class Services(NamedTuple):
    """How the three apps behave as services: outages, rate limits, the SLA on requests."""

    outages: Mapping[str, tuple[int, int]] = {}
    """App -> [from, until) clock minutes it is down."""
    limits: Mapping[str, tuple[int, int]] = {}
    """App -> (calls, window minutes) allowed before it answers 429."""
    calls: Mapping[str, tuple[int, ...]] = {}
    """App -> clock minutes of its recent calls (rate-limited apps only)."""
    sla: int | None = None
    """Minutes a request may stay undecided before it expires."""


class AppRules(NamedTuple):
    """The apps' conventions (`AppRulesSet`); the defaults are the generated worlds'."""

    first_approval_number: int = 1001
    approval_number_digits: int = 0
    decide_on: str = "clock"
    """"clock": approvers decide when a request is due; "poll": when its status is checked."""
    away_approver: str = "pending"
    """"pending": a request to someone away waits; "refuse": it is refused at once."""
    closed_read_only: bool = True
    link_needs_approval: bool = True
    """Linking an approval to a ticket needs the approval to exist."""
    untimed_faults: bool = False
    """A call that failed transiently never reached its service: it takes no time and does not
    count against a rate limit. Then a transient fault costs exactly the step of its retry,
    wherever it strikes, and a step budget of the honest solver's worst case plus one step per
    allowed fault holds (set by `EpisodeStarted.generator` from ``companyos/4``; older logs keep
    the rule they were played under: a fault took a step of the clock)."""

    def approval_id(self, index: int) -> str:
        """The id of the ``index``-th request of an episode (0 for the first)."""
        return f"APR-{self.first_approval_number + index:0{self.approval_number_digits}d}"


class World(NamedTuple):
    info: EpisodeInfo | None = None
    task: Task | None = None
    step: int = 0
    outcome: str | None = None
    # Shared empty defaults are safe: nothing ever mutates a mapping of the world.
    tickets: Mapping[str, Ticket] = {}
    metrics: Mapping[str, Metric] = {}
    people: Mapping[str, Person] = {}
    roles: Mapping[str, str] = {}
    approval_types: Mapping[str, ApprovalType] = {}
    approvals: Mapping[str, Approval] = {}
    chaos: ChaosLedger = ChaosLedger()
    grants: frozenset[str] = frozenset()
    services: Services = Services()
    baseline: Mapping[str, Ticket] | None = None
    """The tickets as the task found them (set by the first call): collateral damage is any
    change from this that the task did not call for."""
    rules: AppRules = AppRules()

    @property
    def ended(self) -> bool:
        return self.outcome is not None

    @property
    def clock(self) -> int:
        if self.rules.untimed_faults:
            return (self.step - self.chaos.faults) * MINUTES_PER_STEP
        return self.step * MINUTES_PER_STEP

    @property
    def steps_remaining(self) -> int:
        return max(0, (self.info.max_steps if self.info else 0) - self.step)

    def without_lineage(self) -> World:
        """The world as a fork and its source agree on it (lineage aside)."""
        if self.info is None or self.info.forked_from is None:
            return self
        return self._replace(info=self.info._replace(forked_from=None))


def _quick_replace(cls: Any) -> None:
    """Give a named tuple a ``_replace`` that sets only the fields it names. The stock one
    rebuilds the tuple through a ``dict.pop`` per field, twice the cost; the fold replaces the
    world and its parts several times a step and a few hundred times an instance built. Same
    result and the same error for an unknown field."""
    index = {name: i for i, name in enumerate(cls._fields)}
    new = tuple.__new__

    def _replace(self: Any, /, **changes: Any) -> Any:
        values = list(self)
        for name, value in changes.items():
            i = index.get(name)
            if i is None:
                unknown = [n for n in changes if n not in index]
                raise ValueError(f"Got unexpected field names: {unknown!r}")
            values[i] = value
        return new(cls, values)

    _replace.__doc__ = cls._replace.__doc__
    cls._replace = _replace


for _cls in (Ticket, Metric, Approval, EpisodeInfo, ChaosLedger, Services, AppRules, World):
    _quick_replace(_cls)
del _cls


# ------------------------------------------------------------------ lookups used by deciders


def normalize_role(role: str) -> str:
    key = role.strip().lower().replace("-", "_").replace(" ", "_")
    for rid, title in ROLE_TITLES.items():
        if key in (rid, title.lower().replace(" ", "_")):
            return rid
    return key


def effective_approver(world: World, role: str) -> str | None:
    """Who acts for ``role`` now: the holder, or while they are away their delegate (following
    the delegation chain past anyone else who is away)."""
    person_id = world.roles.get(role)
    seen: set[str] = set()
    while person_id is not None and person_id not in seen:
        seen.add(person_id)
        person = world.people.get(person_id)
        if person is None:
            return None
        if not person.out_of_office:
            return person_id
        person_id = person.delegate
    return None


def resolve_person(world: World, ref: str) -> str | None:
    """A person id from an id, a name or an e-mail address, case-insensitively."""
    key = ref.strip().lower()
    for p in world.people.values():
        if key in (p.person_id.lower(), p.name.lower(), p.email.lower()):
            return p.person_id
    return None


def normalize_ticket_id(ticket_id: str) -> str:
    return ticket_id.strip().upper()


_NUMBER = re.compile(
    r"[+-]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII
)
"""A number as people type it: ASCII digits, commas only between groups of three."""


def as_number(value: Any) -> float | None:
    """A finite number from a JSON scalar, tolerating the forms people type ("85", "85%",
    "1,842.50"). Anything that is not a finite number (``inf``, ``NaN``, ``1e999``, an integer
    too large for a float) is None: it matches no record."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        try:
            number = float(value)
        except OverflowError:
            return None
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str):
        cleaned = value.strip().removesuffix("%").strip()
        for prefix in ("$", "USD"):
            cleaned = cleaned.removeprefix(prefix).strip()
        if _NUMBER.fullmatch(cleaned) is None:
            return None  # not how people write a number: "8,5", "1_000", "0x55", full-width
        try:
            number = float(cleaned.replace(",", ""))
        except (ValueError, OverflowError):
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def same_number(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b)) + 0.005


def same_text(a: Any, b: Any) -> bool:
    return isinstance(a, str) and isinstance(b, str) and a.strip().lower() == b.strip().lower()


def mentions(text: Any, word: str) -> bool:
    """``text`` names ``word``: as a whole word (not inside a longer one), any case."""
    if not isinstance(text, str):
        return False
    if text.isascii() and word.isascii():
        # Without the regular expression, which each episode's new words would compile anew:
        # in ASCII, ignoring case is comparing lower cases, and the word's edges are ASCII.
        return _ascii_mentions(text.lower(), word.lower())
    pattern = rf"(?<![0-9A-Za-z]){re.escape(word)}(?![0-9A-Za-z])"
    return re.search(pattern, text, re.IGNORECASE) is not None


_WORD_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")
"""What may not touch a mentioned word, lower case (the text is lowered first)."""


def _ascii_mentions(text: str, word: str) -> bool:
    end, n = len(text), len(word)
    i = text.find(word)
    while i != -1:
        if (i == 0 or text[i - 1] not in _WORD_CHARS) and (
            i + n == end or text[i + n] not in _WORD_CHARS
        ):
            return True
        i = text.find(word, i + 1)
    return False
