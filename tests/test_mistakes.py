"""Failure analysis (`projections.mistakes`) against observation-only flawed agents
(`agents.flawed`): the decisive label is each agent's flaw on at least 90% of its failed
episodes, and every mistake an agent made is in the table at its step; the same flaws again,
played with other habits of work (`flawed_styles`). Then the rules the
issue was about, on hand-built episodes: a prose reply is not a hallucinated tool, a
hallucinated tool is made good only by a call doing what it meant, a harmless failed read is
never decisive, an instance the honest solver cannot solve is labelled as the instance's, and
the honest forks agree with a real honest play."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from companyos.agents import play
from companyos.agents.flawed import FLAWED, Flawed
from companyos.agents.honest import HonestAgent
from companyos.agents.random_agent import RandomAgent
from companyos.agents.toolcalls import JUNK_APP
from companyos.analytics.no_return import point_of_no_return
from companyos.analytics.warehouse import Warehouse
from companyos.api import CompanyOSEnvironment
from companyos.domain import FAMILY_NAMES
from companyos.events.types import FaultInjected
from companyos.projections.forks import SimulatedForks
from companyos.projections.mistakes import LABELS, RULES, Mistake, analyse, decisive, mistakes
from companyos.projections.mistakes.context import PSEUDO_APP
from companyos.projections.mistakes.verdicts import IDLING
from companyos.projections.replay import replay

from .flawed_styles import STYLES, styled
from .helpers import main_ticket, td, update

FAILED = ("failure", "timeout", "abandoned")


def _refused(records: Any) -> set[int]:
    """Steps whose call a fault refused (a mistaken call refused was not made)."""
    return {
        s.step for s in replay(records).steps if any(isinstance(e, FaultInjected) for e in s.events)
    }


def _row_label(agent: Flawed) -> str:
    """The label of the rows an agent's mistakes make (a fix too late is first a bad call)."""
    return "invalid_params" if agent.label == "fixed_too_late" else agent.label


@dataclass
class Tally:
    """One flawed agent's failed episodes, and how the analysis named them."""

    failed: int = 0
    named: int = 0
    """Failed episodes whose decisive label is the flaw."""
    made: int = 0
    """Failed episodes in which it made its mistake (step rules; the idlers always do)."""
    named_made: int = 0
    wrong: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)
    """Mistakes it made that are not in the table at their step."""


def _play_flawed(
    seeds: range, style: str | None = None, difficulties: tuple[int, ...] = (0, 1, 2, 3)
) -> dict[str, Tally]:
    """Plays every flawed agent (on the solver of ``style``, if any) on every family and
    difficulty for ``seeds``: per agent, its failed episodes and how they were named."""
    env = CompanyOSEnvironment()
    tallies: dict[str, Tally] = {}
    for name, factory in FLAWED.items():
        agent = (styled(factory, style) if style else factory)()
        t = tallies[name] = Tally()
        for seed in seeds:
            for difficulty in difficulties:
                for family in FAMILY_NAMES:
                    r = play(env, agent, seed=seed, task_id=family, difficulty=difficulty)
                    if r.outcome == "success":
                        continue
                    records = env.store.read(r.episode_id)
                    found = analyse(records)
                    made = bool(agent.made) or agent.label in IDLING
                    right = found.label == agent.label
                    t.failed += 1
                    t.named += right
                    t.made += made
                    t.named_made += made and right
                    where = f"{name} on {family}-d{difficulty}-s{seed}"
                    if not right:
                        t.wrong.append(f"{where}: {found.decisive}")
                    at = {m.step for m in found.mistakes if m.label == _row_label(agent)}
                    refused = set() if agent.counts_refused else _refused(records)
                    t.unseen += [f"{where} step {s}" for s in agent.made if s not in at | refused]
    return tallies


def test_the_decisive_label_is_each_flaw_and_every_mistake_is_in_the_table():
    """Each flawed agent on its own: the decisive label is its flaw on at least 90% of its
    failed episodes, and each mistake it made is a row at its step."""
    tallies = _play_flawed(range(1))
    assert {n for n, t in tallies.items() if t.failed} == set(FLAWED), "each fails somewhere"
    for name, t in tallies.items():
        assert t.named >= 0.9 * t.failed, (name, t.named, t.failed, t.wrong[:5])
        assert not t.unseen, (name, t.unseen[:5])


@pytest.mark.slow
@pytest.mark.parametrize("style", sorted(STYLES))
def test_the_flaw_is_named_whatever_the_agent_s_habits_of_work(style: str):
    """The same flaws played by agents with other habits of work (`flawed_styles`): over the
    failed episodes in which the flaw was made, the decisive label is the flaw on at least 90%
    of them (a slow habit may lose an episode by itself: that names no flaw, or leave a
    mistake made good too late), and the mistakes made are rows at their steps (all but a
    few: a habit's own wait between seeing a rejection and giving up moves that row a step)."""
    tallies = _play_flawed(range(1), style, difficulties=(1, 3))
    made = sum(t.made for t in tallies.values())
    named = sum(t.named_made for t in tallies.values())
    assert made > 100 and named >= 0.9 * made, (named, made)
    unseen = [u for t in tallies.values() for u in t.unseen]
    assert len(unseen) <= 0.02 * made, unseen[:10]


def test_every_flaw_is_a_documented_label_and_agents_see_only_observations():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "failure_taxonomy.md").read_text()
    rows = {m[0]: m[1] for m in re.findall(r"^\| `([a-z_]+)` \|(.*)$", doc, flags=re.MULTILINE)}
    for name, factory in FLAWED.items():
        agent = factory()
        assert name.split(":")[0] == agent.label and agent.label in LABELS
        assert not hasattr(agent, "env"), "a flawed agent plays from observations only"
        module = type(agent).__module__.rsplit(".", 1)[-1]
        assert f"`agents/flawed/{module}.py`" in rows[agent.label], (agent.label, module)
    assert PSEUDO_APP == JUNK_APP


# ---------------------------------------------------------------------------- hand-built


def _start(env: CompanyOSEnvironment, **reset: Any) -> None:
    reset.setdefault("seed", 3)
    reset.setdefault("task_id", "vendor_onboarding")
    reset.setdefault("difficulty", 0)
    env.reset(**reset)


def _rows(env: CompanyOSEnvironment) -> list[Mistake]:
    assert env.episode is not None
    return mistakes(env.store.read(env.episode.id))


def _quit(env: CompanyOSEnvironment) -> list[Mistake]:
    assert env.episode is not None
    env.episode.abandon()
    return _rows(env)


def test_a_prose_reply_is_no_tool_call_not_a_hallucinated_tool():
    env = CompanyOSEnvironment()
    _start(env)
    env.step({"app": JUNK_APP, "method": "no_tool_call", "params": {"content": "I give up."}})
    rows = _quit(env)
    assert [(m.step, m.label) for m in rows if m.step == 1] == [(1, "no_tool_call")]
    assert "I give up." in rows[0].evidence
    assert all(m.label != "hallucinated_tool" for m in rows)


def test_a_hallucinated_tool_is_made_good_only_by_a_call_doing_what_it_meant():
    env = CompanyOSEnvironment()
    _start(env)
    tid = main_ticket(env)
    td(env, "set_priority", ticket_id=tid, value="high")  # step 1: no such tool
    td(env, "get_ticket", ticket_id=tid)  # step 2: the app, but not what it meant
    update(env, tid, "assignee", "Nobody Here")  # step 3: update_ticket, another field
    rows = _rows(env)
    (bad,) = [m for m in rows if m.label == "hallucinated_tool"]
    assert bad.step == 1 and bad.made_good_at is None
    update(env, tid, "priority", "high")  # step 4: what it meant
    (bad,) = [m for m in _rows(env) if m.label == "hallucinated_tool"]
    assert bad.made_good_at == 4


def test_a_failed_read_corrected_at_once_is_harmless_and_never_decisive():
    env = CompanyOSEnvironment()
    _start(env, max_steps=6)
    td(env, "get_ticket", ticket_id="TKT-0")  # names nothing
    td(env, "get_ticket", ticket_id=main_ticket(env))
    while env.episode is not None and not env.episode.world.ended:
        td(env, "list_tickets")
    rows = _rows(env)
    (read,) = [m for m in rows if m.label == "invalid_params"]
    assert read.step == 1 and read.made_good_at == 2 and read.harmless
    assert not read.decisive
    (d,) = [m for m in rows if m.decisive]
    assert d.label != "invalid_params"


def test_an_instance_the_honest_solver_cannot_solve_is_labelled_as_the_instance():
    env = CompanyOSEnvironment()
    _start(env, max_steps=3)
    for _ in range(3):
        td(env, "list_tickets")
    assert env.episode is not None
    records = env.store.read(env.episode.id)
    d = decisive(records)
    assert d is not None and d.label == "unsolvable_instance" and d.step == 0
    assert point_of_no_return(records) is None


def test_the_honest_fork_at_zero_is_the_honest_agent_s_own_play():
    """A fork at step 0 has read nothing: it is the honest agent playing the instance."""
    env = CompanyOSEnvironment()
    for family in FAMILY_NAMES[:4]:
        for difficulty in (1, 3):
            r = play(env, HonestAgent(), seed=11, task_id=family, difficulty=difficulty)
            records = env.store.read(r.episode_id)
            env.reset(seed=11, task_id=family, difficulty=difficulty)
            td(env, "list_tickets")
            assert env.episode is not None
            env.episode.abandon()
            forks = SimulatedForks(env.store.read(env.episode.id))
            sim = forks.continue_from(0)
            assert (sim.outcome, sim.steps) == (r.outcome, r.steps)
            assert sim.world.without_lineage().clock == replay(records).world.clock


def test_forks_of_one_episode_answer_as_forks_taken_alone():
    """The forks of an episode share its transcript's rendering (each step rendered once);
    taken in any order, each continuation is the one a fresh set of forks gives, so no fork's
    player changed what a later one reads."""
    import random

    env = CompanyOSEnvironment()
    checked = 0
    for i, family in enumerate(FAMILY_NAMES):
        for agent in (RandomAgent(i), FLAWED["no_retry_after_fault"]()):
            r = play(env, agent, seed=20 + i, task_id=family, difficulty=3)
            if r.outcome == "success":
                continue
            records = env.store.read(r.episode_id)
            shared = SimulatedForks(records)
            ks = list(shared.forkable)
            random.Random(i).shuffle(ks)
            for k in ks[:12]:
                got, alone = shared.continue_from(k), SimulatedForks(records).continue_from(k)
                assert (got.outcome, got.steps, got.version) == (
                    alone.outcome,
                    alone.steps,
                    alone.version,
                ), f"{r.episode_id} at {k}"
                assert got.world == alone.world
                checked += 1
    assert checked >= 40


def test_the_solver_leaves_what_it_was_shown_as_it_was():
    """A refusal teaches the solver a metric's dataset; it notes it in its own copy of the
    catalogue, not in the observation it read (which forks share)."""
    import copy

    from companyos.domain.honest import HonestSolver, Seen

    env = CompanyOSEnvironment()
    env.reset(seed=0, task_id="vendor_onboarding", difficulty=1)
    assert env.episode is not None and env.episode.world.task is not None
    solver = HonestSolver(env.episode.world.task.text, "vendor_onboarding")
    listing = Seen(0, {"metrics": [{"metric": "vendor_compliance_score"}]}, "", None)
    kept = copy.deepcopy(listing.result)
    solver.last = ("datahub", "list_metrics", {})
    solver.observe(listing)
    solver.last = ("datahub", "query_metric", {"metric_name": "vendor_compliance_score"})
    solver.observe(Seen(5, {}, "Access to dataset 'finance' is required.", "permission_denied"))
    assert solver.catalog == [{"metric": "vendor_compliance_score", "dataset": "finance"}]
    assert listing.result == kept


@pytest.mark.parametrize("name", ["wrong_object", "fixed_too_late"])
def test_the_warehouse_mistakes_table_is_the_projection(name: str):
    env = CompanyOSEnvironment()
    agent = FLAWED[name]()
    ids = []
    for family in FAMILY_NAMES[:3]:
        ids.append(play(env, agent, seed=0, task_id=family, difficulty=1).episode_id)
    wh = Warehouse()
    wh.catch_up(env.store)
    total = 0
    for eid in ids:
        got = wh.con.execute(
            "SELECT step, label, evidence, made_good_at, decisive, harmless FROM mistakes "
            "WHERE episode_id = $e ORDER BY step, label",
            {"e": eid},
        ).fetchall()
        want = sorted(
            (m.step, m.label, m.evidence, m.made_good_at, m.decisive, m.harmless)
            for m in mistakes(env.store.read(eid))
        )
        assert sorted(got) == want
        total += len(got)
        [(failure,)] = wh.con.execute(
            "SELECT label FROM failures WHERE episode_id = $e", {"e": eid}
        ).fetchall() or [(None,)]
        decisive_rows = [row for row in got if row[4]]
        if failure is None:
            assert decisive_rows == []
        else:
            assert [row[1] for row in decisive_rows] == [failure] == [name]
    assert total > 0
    # Caught up again, nothing changes (rows are replaced, not added).
    before = wh.con.execute("SELECT count(*) FROM mistakes").fetchall()
    wh.catch_up(env.store)
    assert wh.con.execute("SELECT count(*) FROM mistakes").fetchall() == before


class RetriesLater(Flawed):
    """A careful agent with another order of work: when a ticket change is refused by a
    transient fault, it first looks at DataHub twice, then retries."""

    name = "retries_later"

    def setup(self) -> None:
        self.pending: Any = None
        self.detour = 0
        self.fault_step: int | None = None

    def choose(self, seen: Any, observation: Any) -> dict[str, Any]:
        if self.detour:
            self.detour -= 1
            if self.detour == 0:
                app, method, params = self.pending
                return {"app": app, "method": method, "params": params}
            return {"app": "datahub", "method": "list_metrics", "params": {}}
        call = self.honest(seen)
        refused = seen is not None and seen.error == "service_unavailable"
        if refused and call[1] == "update_ticket" and self.fault_step is None:
            self.pending, self.detour, self.fault_step = call, 2, self.step
            return {"app": "datahub", "method": "list_metrics", "params": {}}
        app, method, params = call
        return {"app": app, "method": method, "params": params}


def test_a_retry_is_judged_in_the_agent_s_own_order():
    """Other work before the retry is not a missed retry; taking the change for done and going
    on with the ticket is (the flawed agent, `agents/flawed/misses_retry.py`)."""
    env = CompanyOSEnvironment()
    later, missed = RetriesLater(), FLAWED["no_retry_after_fault"]()
    checked = 0
    for seed in range(6):
        for family in FAMILY_NAMES:
            r = play(env, later, seed=seed, task_id=family, difficulty=2)
            if later.fault_step is None:
                continue
            checked += 1
            rows = mistakes(env.store.read(r.episode_id))
            assert not [
                m
                for m in rows
                if m.label == "no_retry_after_fault"
                and f"failed at step {later.fault_step} " in m.evidence
            ], (family, seed, rows)
            r = play(env, missed, seed=seed, task_id=family, difficulty=2)
            rows = mistakes(env.store.read(r.episode_id))
            at = {m.step for m in rows if m.label == "no_retry_after_fault"}
            assert set(missed.made) <= at
            if checked >= 5:
                return
    raise AssertionError(f"only {checked} episodes with a refused ticket change")


def test_each_rule_is_one_module_found_by_itself():
    """Adding a label is adding a module to rules/: the registry finds it, in its order."""
    root = Path(__file__).resolve().parents[1]
    files = sorted(p.stem for p in (root / "projections/mistakes/rules").glob("*.py"))
    files.remove("__init__")
    assert sorted(rule.LABEL for rule in RULES) == files
    assert [rule.ORDER for rule in RULES] == sorted(rule.ORDER for rule in RULES)
    for rule in RULES:
        # What counts as the mistake, and what makes it good (or that nothing does).
        assert "made good" in rule.DEFINITION.lower() or "never" in rule.DEFINITION, rule.LABEL
    doc = (root / "docs" / "failure_taxonomy.md").read_text()
    for label in LABELS:
        assert f"| `{label}` |" in doc, label


if __name__ == "__main__":  # the figures of docs/failure_taxonomy.md ("Measured")
    import sys

    style = sys.argv[1] if len(sys.argv) > 1 else None
    tallies = _play_flawed(range(4), style)
    for name, t in tallies.items():
        share = t.named / t.failed if t.failed else 1.0
        print(f"{name:42} failed {t.failed:4}  decisive = flaw {t.named:4} ({share:.1%})", end="")
        print(f"  flaw made {t.made:4}, named {t.named_made:4}  not in table {len(t.unseen)}")
    failed, named = sum(t.failed for t in tallies.values()), sum(t.named for t in tallies.values())
    print(f"all: {named}/{failed} ({named / failed:.1%})")
