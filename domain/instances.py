"""From (family, seed, difficulty) to the opening events of an episode, and the frozen suites.

An instance is built in layers, every draw keyed by what it is for: the company (people and who
covers for whom), the family's draft (task text, goal, the world it needs, the chaos it
offers), distractor tickets and metrics, then chaos laid on by the difficulty's dial. Its step
budget comes from playing the oracle against an adversary (every chance event happens, every
delay is the longest) and keeping some slack for transient faults; that play is also the
instance's solvability check.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass

from companyos.events.types import (
    ChaosInjected,
    EpisodeStarted,
    Event,
    ForkRef,
    Goal,
    MetricRecorded,
    TaskAssigned,
)

from .chaos import ChaosProfile, profile
from .company import (
    APPROVAL_TYPES,
    Company,
    Draw,
    approval_type,
    distractor_metrics,
    distractor_tickets,
    draw_company,
    slug,
    ticket_id,
)
from .families import FAMILIES, FAMILY_NAMES, ChaosItem, Draft
from .families.base import away
from .model import World
from .original import TASK_IDS as ORIGINAL_TASK_IDS
from .original import episode_events as original_episode
from .original import resolve_task as original_task
from .rng import AdversarialRNG, KeyedRNG

GENERATOR = "companyos/4"
HELD_OUT = "contract_renewal"
"""The family kept out of the train suite: only the test suite has it."""
TRAIN_SEEDS = range(0, 1_000_000)
TEST_SEEDS = range(1_000_000, 2_000_000)


class UnknownScenario(ValueError):
    pass


class Unsolvable(RuntimeError):
    """The oracle could not finish an instance even with every step it wanted: a bug."""


@dataclass(frozen=True, slots=True)
class Instance:
    family: str
    seed: int
    difficulty: int
    text: str
    goal: Goal
    setup: tuple[Event, ...]
    """Every opening event but `EpisodeStarted`."""
    max_steps: int
    fault_budget: int
    worst_case: int
    """Steps the honest solver needs when every draw goes against it, transient faults aside
    (each costs one step more, wherever it strikes: ``fault_budget`` caps them)."""

    @property
    def instance_id(self) -> str:
        return instance_id(self.family, self.difficulty, self.seed)


def instance_id(family: str, difficulty: int, seed: int) -> str:
    return f"{family}-d{difficulty}-s{seed}"


def parse_instance_id(text: str) -> tuple[str, int, int] | None:
    family, _, rest = text.rpartition("-d")
    level, _, seed = rest.partition("-s")
    if family in FAMILIES and level.isdigit() and seed.isdigit():
        return family, int(level), int(seed)
    return None


def resolve_family(task_id: str | int | None, rng: KeyedRNG) -> str:
    """A family from a name (case and separators ignored), an index, or the seed."""
    if task_id is None:
        return rng.choice(0, "scenario", FAMILY_NAMES)
    if isinstance(task_id, int) and not isinstance(task_id, bool):
        if 0 <= task_id < len(FAMILY_NAMES):
            return FAMILY_NAMES[task_id]
    elif isinstance(task_id, str):
        key = task_id.strip().lower().replace("-", "_").replace(" ", "_")
        if key.isdigit() and int(key) < len(FAMILY_NAMES):
            return FAMILY_NAMES[int(key)]
        key = key.replace("licence", "license")
        if key in FAMILIES:
            return key
    names = ", ".join(FAMILY_NAMES)
    raise UnknownScenario(
        f"unknown task {task_id!r}: use a family name ({names}), an index 0-"
        f"{len(FAMILY_NAMES) - 1}, or an original task id ({', '.join(ORIGINAL_TASK_IDS)}); "
        "`companyos tasks` lists them"
    )


# ------------------------------------------------------------------ chaos


def _chaos(
    draft: Draft,
    company: Company,
    level: ChaosProfile,
    draw: Draw,
    distractor_ids: list[str],
    distractor_metrics: list[MetricRecorded],
    taken: set[str],
) -> tuple[list[ChaosItem], Goal]:
    """The chaos laid on an instance, and its goal as that chaos changes it."""
    items: list[ChaosItem] = []
    goal = draft.goal
    for i, item in enumerate(draft.original):
        if level.setup_chaos >= 1.0 or draw.chance(f"original:{i}", level.setup_chaos):
            items.append(item)
    if level.extra_chaos:
        items += draft.extra
    if level.inherent:
        items += draft.inherent
    # The original's world also had chaos nobody's task needed: a blocked ticket, a stale
    # metric, a missing priority, on the distractors.
    noise = [
        ChaosItem("blocked_ticket", distractor_ids[0], {"reason": "Waiting on a vendor."}),
        ChaosItem("missing_field", distractor_ids[1], {"field": "priority"}),
        ChaosItem(
            "stale_metric",
            distractor_metrics[0].name,
            {"served_value": round(distractor_metrics[0].value * 0.95, 2), "age_minutes": 7 * 1440},
        ),
    ]
    for i, item in enumerate(noise):
        if level.setup_chaos >= 1.0 or draw.chance(f"noise:{i}", level.setup_chaos):
            items.append(item)
    needed = list(goal.metrics)
    stale_now = {c.target for c in items if c.kind == "stale_metric"}
    if draw.chance("duplicate", level.duplicate_rate):
        items.append(
            ChaosItem(
                "duplicate_ticket", ticket_id(draw, "duplicate", taken), {"of": goal.ticket_id}
            )
        )
    if draft.roles and draw.chance("delegate_chain", level.delegate_chain_rate):
        role = draw.choice("delegate_chain:role", draft.roles)
        staff = company.staff[role]
        items += [
            away(company, role),
            ChaosItem(
                "delegate_chain",
                staff.delegate,
                {"note": f"Auto-reply: {company.name_of(staff.delegate)} is away."},
            ),
        ]
    if draw.chance("rate_limit", level.rate_limit_rate):
        app = draw.choice("rate_limit:app", draft.apps)
        items.append(ChaosItem("rate_limit", app, {"calls": 2, "window_minutes": 15}))
    if draw.chance("outage", level.outage_rate):
        app = draw.choice("outage:app", draft.apps)
        start = 5 * draw.integer("outage:from", 2, 8)
        items.append(
            ChaosItem(
                "partial_outage",
                app,
                {
                    "from_minute": start,
                    "until_minute": start + 5 * draw.integer("outage:len", 3, 6),
                },
            )
        )
    if level.sla_minutes is not None:
        items.append(ChaosItem("approval_sla", "approvalflow", {"minutes": level.sla_minutes}))
    fresh_needed = [m for m in needed if m not in stale_now]
    if fresh_needed and draw.chance("stale_during", level.stale_during_rate):
        m = draw.choice("stale_during:metric", fresh_needed)
        items.append(
            ChaosItem(
                "stale_during_episode", m, {"stale_at": 5 * draw.integer("stale_during:at", 3, 10)}
            )
        )
    restricted = {c.target for c in items if c.kind == "permission_denied"}
    open_needed = [m for m in needed if m not in restricted]
    if open_needed and draw.chance("restricted", level.restricted_rate):
        m = draw.choice("restricted:metric", open_needed)
        dataset = f"restricted_{slug(m.split('.')[0])}"
        items.append(ChaosItem("permission_denied", m, {"dataset": dataset}))
        goal = goal.model_copy(update={"access": (*goal.access, dataset)})
    seen: set[tuple[str, str, str]] = set()
    unique = []
    for item in items:  # one of each (kind, target, params)
        key = (item.kind, item.target, repr(sorted(item.params.items())))
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique, goal


# ------------------------------------------------------------------ building


# Bounded: an instance is ~90 KB of events, and a long-running server meets many seeds. Training
# replays a few instances many times; a suite cycles through more than any cache would hold.
@functools.lru_cache(maxsize=256)
def build_instance(family: str, seed: int, difficulty: int) -> Instance:
    """The instance (cached: GRPO plays the same instance many times)."""
    return other_way(family, seed, difficulty, flipped=False)


def other_way(family: str, seed: int, difficulty: int, flipped: bool = True) -> Instance:
    """The instance with its hidden draw (qualify or not, above or below a threshold) turned
    the other way: what the task would be had the dice fallen the other way. Not an instance
    any id names; it exists to show that nothing an agent sees before it reads a value (the
    text, the budget, every listing) tells the two apart."""
    natural, draft, goal, text = opening(family, seed, difficulty)
    ways = [natural]
    if draft.hidden is not None:
        ways.append(opening(family, seed, difficulty, draft.hidden)[0])
    if flipped:
        if draft.hidden is None:
            raise ValueError(f"{family} has no hidden draw to turn")
        ways.reverse()
        _, _, goal, text = opening(family, seed, difficulty, draft.hidden)
    level = profile(difficulty)
    # Sized over both ways of the hidden draw: the budget must not tell which way the task goes.
    # A transient fault takes no time and no rate-limit quota (`AppRules.untimed_faults`), so
    # wherever it strikes it costs exactly the step of its retry: the worst case plus one step
    # per fault the episode allows bounds every play of the honest solver.
    worst = max(honest_worst_case(family, seed, difficulty, w) for w in ways)
    budget = max(draft.base_steps, worst + level.min_fault_slack)
    oracle_worst_case(family, seed, difficulty, ways[0])  # a second solver must finish too
    return Instance(family, seed, difficulty, text, goal, ways[0], budget, budget - worst, worst)


def opening(
    family: str, seed: int, difficulty: int, flip: str | None = None
) -> tuple[tuple[Event, ...], Draft, Goal, str]:
    """The opening events (all but `EpisodeStarted`), with the family's hidden draw ``flip``
    turned the other way when asked."""
    level = profile(difficulty)
    fam = FAMILIES[family]
    draw = Draw(KeyedRNG(seed), "gen")
    company = draw_company(draw.sub("company"))
    taken: set[str] = set()
    fdraw = draw.sub(family)
    if fam.hidden is not None:
        # Which way the task goes is an even chance drawn per level: the same seed at two
        # levels is two independent answers, so an outcome learnt at one level says nothing
        # of another. Forcing it changes only what depends on it (the values, the goal), every
        # other draw being keyed apart; ``flip`` turns it the other way.
        way = draw.sub(f"{family}:d{difficulty}").chance(fam.hidden, 0.5)
        fdraw = fdraw.force(fam.hidden, way if flip is None else not way)
    elif flip is not None:
        raise ValueError(f"{family} has no hidden draw to turn")
    draft = fam.draft(fdraw, company, taken, level)
    assert draft.hidden == fam.hidden
    distractors = distractor_tickets(
        draw.sub("distractors"), company, taken, draw.integer("n_distractors", 3, 5)
    )
    dmetrics = distractor_metrics(draw.sub("dmetrics"), draw.integer("n_dmetrics", 2, 4))
    # Chaos is drawn per instance (family, difficulty, seed): the same seed in two families
    # or at two levels makes independent draws.
    items, goal = _chaos(
        draft,
        company,
        level,
        draw.sub(f"chaos:{family}:d{difficulty}"),
        [t.ticket_id for t in distractors],
        dmetrics,
        taken,
    )
    bound = {t.approval_type: t for t in draft.types}
    types = [bound.get(name) or approval_type(name) for name in APPROVAL_TYPES]
    setup: list[Event] = [
        TaskAssigned(
            text=draft.text,
            goal=goal,
            family=family,
            instance_id=instance_id(family, difficulty, seed),
        ),
        *types,
        *company.people,
        *sorted((*draft.tickets, *distractors), key=lambda t: t.ticket_id),
        *sorted((*draft.metrics, *dmetrics), key=lambda m: m.name),
        *(ChaosInjected(kind=c.kind, target=c.target, params=c.params) for c in items),
    ]
    return tuple(setup), draft, goal, draft.text


@functools.lru_cache(maxsize=256)
def setup_world(family: str, seed: int, difficulty: int) -> World:
    """The world the instance's opening events (all but `EpisodeStarted`) fold to, cached:
    worlds are immutable values, and `EpisodeStarted` only sets ``info``, which no other
    event's evolver reads, so a reset folds one event instead of fifty."""
    from .world import fold

    return fold(build_instance(family, seed, difficulty).setup)


def start_world(events: list[Event]) -> World:
    """``fold(events)`` for the opening events of an episode from `build_episode`."""
    from .world import evolve

    started = events[0]
    assert isinstance(started, EpisodeStarted)
    task = events[1]
    assert isinstance(task, TaskAssigned)
    parsed = parse_instance_id(task.instance_id)
    if parsed is None:  # the original's fixed world (`domain.original`)
        # Its world events are the same objects for every seed (`original.setup`): fold them
        # once, and the task (one object per instance) onto them once; `EpisodeStarted` and
        # `TaskAssigned` set only ``info`` and ``task``, which no other event's evolver reads.
        base = _world_of(tuple(events[2:]))
        hit = _TASKED.get(id(task))
        if hit is not None and hit[0] is task and hit[1] is base:
            return evolve(hit[2], started)
        tasked = evolve(base, task)
        if len(_TASKED) >= 256:
            _TASKED.clear()
        _TASKED[id(task)] = (task, base, tasked)  # holding the task: its id is not reused
        return evolve(tasked, started)
    family, difficulty, seed = parsed
    return evolve(setup_world(family, seed, difficulty), started)


_TASKED: dict[int, tuple[Event, World, World]] = {}
_WORLDS: dict[tuple[int, int], tuple[tuple[Event, ...], World]] = {}


def _world_of(events: tuple[Event, ...]) -> World:
    """``fold(events)``, kept for the very same events (checked by identity)."""
    from .world import fold

    if not events:
        return World()
    key = (id(events[0]), len(events))
    hit = _WORLDS.get(key)
    # Tuples compare item by item, identity first: the very same events cost no model compare
    # (and equal events fold to an equal world anyway).
    if hit is not None and hit[0] == events:
        return hit[1]
    world = fold(events)
    if len(_WORLDS) > 64:
        _WORLDS.clear()
    _WORLDS[key] = (events, world)
    return world


def _opening(
    family: str, seed: int, difficulty: int, setup: tuple[Event, ...], faults: int
) -> World:
    from .world import fold

    start = EpisodeStarted(
        seed=seed,
        scenario=family,
        difficulty=difficulty,
        max_steps=10_000,
        fault_budget=faults,
        generator=GENERATOR,
    )
    return fold((start, *setup))


def honest_worst_case(
    family: str,
    seed: int,
    difficulty: int,
    setup: tuple[Event, ...],
    faults: int = 0,
    rng: KeyedRNG | None = None,
) -> int:
    """Steps the honest solver takes, seeing only what an agent sees, when every chance event
    goes against it (and, with ``faults``, that many transient faults strike first; ``rng``
    places them elsewhere)."""
    from . import goals
    from .decider import decide_and_fold
    from .honest import HonestSolver, Seen
    from .rendering import render_result

    world = _opening(family, seed, difficulty, setup, faults)
    assert world.task is not None
    solver = HonestSolver(world.task.text, family)
    rng = AdversarialRNG() if rng is None else rng
    seen: Seen | None = None
    for n in range(1, 400):
        app, method, params = solver.act(seen)
        caused, world = decide_and_fold(world, app, method, params, n, rng)
        if goals.success(world):
            return n
        if goals.finished(world):
            raise Unsolvable(
                f"the honest solver finished {instance_id(family, difficulty, seed)} wrongly"
            )
        result, message, error = render_result(world, caused)
        seen = Seen(world.clock, result, message, error)
    raise Unsolvable(f"the honest solver does not finish {instance_id(family, difficulty, seed)}")


def oracle_worst_case(family: str, seed: int, difficulty: int, setup: tuple[Event, ...]) -> int:
    """Steps the privileged oracle takes when every chance event goes against it."""
    from .decider import decide_and_fold
    from .oracle import plan

    world = _opening(family, seed, difficulty, setup, 0)
    rng = AdversarialRNG()
    for n in range(1, 400):
        call = plan(world)
        if call is None:
            return n - 1
        world = decide_and_fold(world, call.app, call.method, call.params, n, rng)[1]
    raise Unsolvable(f"the oracle does not finish {instance_id(family, difficulty, seed)}")


def build_episode(
    task_id: str | int | None,
    seed: int,
    difficulty: int,
    *,
    reward_profile: str = "default",
    max_steps: int | None = None,
    forked_from: ForkRef | None = None,
    agent: str | None = None,
    show_progress: bool = False,
) -> list[Event]:
    """The opening events of an episode: lifecycle, task, the world, its chaos."""
    original = original_task(task_id)
    if original is not None:  # the original CompanyOS's fixed world, under its task id
        return original_episode(
            original,
            seed,
            difficulty,
            generator=GENERATOR,
            reward_profile=reward_profile,
            max_steps=max_steps,
            forked_from=forked_from,
            agent=agent,
            show_progress=show_progress,
        )
    family = resolve_family(task_id, KeyedRNG(seed))
    inst = build_instance(family, seed, difficulty)
    budget = inst.max_steps if max_steps is None else max_steps
    started = EpisodeStarted(
        seed=seed,
        scenario=family,
        difficulty=difficulty,
        max_steps=budget,
        reward_profile=reward_profile,
        fault_budget=max(0, budget - inst.worst_case),
        forked_from=forked_from,
        generator=GENERATOR,
        agent=agent,
        show_progress=show_progress,
    )
    return [started, *inst.setup]


# ------------------------------------------------------------------ suites


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    description: str
    families: tuple[str, ...]
    seeds: range
    per_cell: int
    """Instances per (family, difficulty) in its frozen list."""

    def instances(
        self,
        difficulties: tuple[int, ...] = (0, 1, 2, 3),
        families: tuple[str, ...] | None = None,
        per_cell: int | None = None,
    ) -> list[tuple[str, int, int]]:
        """(family, difficulty, seed) of the suite's frozen instances, in a stable order."""
        n = self.per_cell if per_cell is None else per_cell
        chosen = (
            self.families if families is None else tuple(f for f in families if f in self.families)
        )
        return [
            (f, d, self.seeds.start + i) for f in chosen for d in difficulties for i in range(n)
        ]


SUITES: dict[str, Suite] = {
    "train": Suite(
        "train",
        "for training: every family but the held-out one, seeds below 1,000,000",
        tuple(f for f in FAMILY_NAMES if f != HELD_OUT),
        TRAIN_SEEDS,
        50,
    ),
    "test": Suite(
        "test",
        f"for evaluation: every family including the held-out {HELD_OUT}, seeds from 1,000,000",
        FAMILY_NAMES,
        TEST_SEEDS,
        25,
    ),
    "original": Suite(
        "original",
        "the original CompanyOS's five workflows (test seeds)",
        tuple(n for n, f in FAMILIES.items() if f.original),
        TEST_SEEDS,
        25,
    ),
}


def fingerprint(family: str, difficulty: int, seed: int) -> str:
    """A digest of an instance's initial world (its opening events and step budget): what a
    test pins so that an instance id keeps naming the same instance across versions."""
    inst = build_instance(family, seed, difficulty)
    body = json.dumps(
        {
            "generator": GENERATOR,
            "max_steps": inst.max_steps,
            "events": [[e.type, e.model_dump(mode="json")] for e in inst.setup],
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
    )
    return hashlib.sha256(body.encode()).hexdigest()[:16]
