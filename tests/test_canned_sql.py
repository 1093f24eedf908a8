"""Every canned query on a small generated dataset, against the answer computed here in Python
from the play results and the stored events (never from the warehouse's tables).

The dataset: four instances, each played by the oracle (three trials: deterministic, always a
success), a "mixed" agent (four trials, some played by the oracle and some by the random agent
with its own seed per trial, so successes per instance differ), the random agent (two trials,
seeds differ) and one unlabelled oracle trial; plus a fork and an episode still running, which
the episode-level queries leave out."""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from companyos.agents import RandomAgent, in_process_oracle, play
from companyos.analytics.queries import CANNED, UnknownQuery, parse, run
from companyos.analytics.warehouse import Warehouse
from companyos.api import CompanyOSEnvironment
from companyos.domain import FAMILY_NAMES
from companyos.domain.instances import instance_id
from companyos.domain.world import FAULT_KINDS
from companyos.events import InMemoryEventStore
from companyos.events.chain import canonical
from companyos.events.types import (
    ActionRejected,
    ChaosInjected,
    FaultInjected,
    InvalidAction,
    StepScored,
    ToolCalled,
)
from companyos.projections.mistakes import LABELS, Mistake, mistakes
from companyos.projections.mistakes import decisive as diagnose

INSTANCES = [(FAMILY_NAMES[0], 1, 101), (FAMILY_NAMES[1], 2, 102), (FAMILY_NAMES[2], 3, 103)]
INSTANCES += [(FAMILY_NAMES[0], 2, 104)]
MIXED = ["oooo", "ooor", "oror", "rrrr"]
"""Who plays each of the mixed agent's four trials of each instance: oracle or random."""


@dataclass(frozen=True, slots=True)
class Played:
    episode_id: str
    agent: str
    family: str
    difficulty: int
    instance: str
    outcome: str | None
    total_return: float
    steps: int


@dataclass
class Dataset:
    wh: Warehouse
    store: InMemoryEventStore
    played: list[Played]
    """The ended, unforked episodes."""
    fork: str
    fork_step: int
    running: str


def _play(
    env: CompanyOSEnvironment, agent: Any, label: str | None, inst: tuple[str, int, int]
) -> Played:
    family, difficulty, seed = inst
    r = play(env, agent, seed=seed, task_id=family, difficulty=difficulty, agent=label)
    return Played(
        r.episode_id,
        label or "(unlabelled)",
        family,
        difficulty,
        instance_id(family, difficulty, seed),
        r.outcome,
        r.total_return,
        r.steps,
    )


@pytest.fixture(scope="module")
def data() -> Iterator[Dataset]:
    store = InMemoryEventStore()
    env = CompanyOSEnvironment(store)
    oracle = in_process_oracle(env)
    played: list[Played] = []
    for i, inst in enumerate(INSTANCES):
        played += [_play(env, oracle, "oracle", inst) for _ in range(3)]
        for trial, who in enumerate(MIXED[i]):
            agent = oracle if who == "o" else RandomAgent(1000 * i + trial)
            played.append(_play(env, agent, "mixed", inst))
        played += [_play(env, RandomAgent(7 * i + t), "random", inst) for t in range(2)]
    played.append(_play(env, oracle, None, INSTANCES[0]))
    # A fork of a random episode, played on by the oracle: excluded from the episode queries,
    # and its copy of the source's first steps is not counted twice in the tool error rates.
    source = next(p for p in played if p.agent == "random")
    obs = env.reset(fork_from=source.episode_id, at_step=3, agent="mixed")
    while not obs.done:
        obs = env.step(oracle.act(obs))
    fork = obs.episode_id
    # An episode still running: no outcome yet.
    running = CompanyOSEnvironment(store)
    obs = running.reset(seed=5, task_id=FAMILY_NAMES[3], difficulty=2, agent="oracle")
    running.step(in_process_oracle(running).act(obs))
    wh = Warehouse()
    wh.catch_up(store)
    assert fork is not None and obs.episode_id is not None
    yield Dataset(wh, store, played, fork, 3, obs.episode_id)
    wh.close()


def rows_of(data: Dataset, name: str) -> list[dict[str, Any]]:
    columns, rows = run(data.wh.con, name)
    return [dict(zip(columns, r, strict=True)) for r in rows]


def approx_equal(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert set(want) <= set(got), set(want) - set(got)
    for key, value in want.items():
        if isinstance(value, float):
            assert got[key] == pytest.approx(value), key
        else:
            assert got[key] == value, key


def check(data: Dataset, name: str, key: Callable[[dict[str, Any]], Any], want: list[dict]) -> None:
    got = {key(r): r for r in rows_of(data, name)}
    assert len(got) == len(want) == len(rows_of(data, name))
    for w in want:
        approx_equal(got[key(w)], w)


def groups(played: list[Played], *fields: str) -> dict[tuple[Any, ...], list[Played]]:
    out: dict[tuple[Any, ...], list[Played]] = defaultdict(list)
    for p in played:
        out[tuple(getattr(p, f) for f in fields)].append(p)
    return out


# ---------------------------------------------------------------------------- the catalogue


def test_every_query_has_a_title_a_description_and_runs(data: Dataset):
    assert set(CANNED) == {
        "success_return",
        "pass_k",
        "recovery_by_chaos",
        "tool_errors",
        "failure_taxonomy",
        "noise_by_instance",
        "noise_floor",
        "every_mistake",
    }
    for name, q in CANNED.items():
        assert q.name == name and q.title and len(q.description) > 80
        assert q.sql.lstrip().startswith("--")
        columns, rows = run(data.wh.con, name)
        assert columns and rows, name
    with pytest.raises(UnknownQuery, match="known: "):
        run(data.wh.con, "drop_everything")
    with pytest.raises(ValueError, match="no title"):
        parse("bad", "SELECT 1")


def test_the_dataset_has_what_the_queries_need(data: Dataset):
    outcomes = Counter(p.outcome for p in data.played)
    assert outcomes["success"] and outcomes["timeout"]
    mixed = groups([p for p in data.played if p.agent == "mixed"], "instance")
    successes = sorted(sum(p.outcome == "success" for p in ps) for ps in mixed.values())
    assert len(set(successes)) >= 3  # pass^k differs from instance to instance


# ---------------------------------------------------------------------------- the queries


def test_success_return(data: Dataset):
    want = []
    for (agent, family, difficulty), ps in groups(
        data.played, "agent", "family", "difficulty"
    ).items():
        returns = [p.total_return for p in ps]
        want.append(
            {
                "agent": agent,
                "family": family,
                "difficulty": difficulty,
                "episodes": len(ps),
                "successes": sum(p.outcome == "success" for p in ps),
                "success_rate": sum(p.outcome == "success" for p in ps) / len(ps),
                "mean_return": statistics.mean(returns),
                "mean_steps": statistics.mean(p.steps for p in ps),
            }
        )
    check(data, "success_return", lambda r: (r["agent"], r["family"], r["difficulty"]), want)


def _pass_k(trials: list[list[Played]], k: int) -> float | None:
    values = [
        math.comb(sum(p.outcome == "success" for p in ps), k) / math.comb(len(ps), k)
        for ps in trials
        if len(ps) >= k
    ]
    return statistics.mean(values) if values else None


def test_pass_k(data: Dataset):
    per_instance = groups(data.played, "agent", "family", "instance")
    want = []
    for scope in ("family", "all"):
        cells: dict[tuple[str, str], list[list[Played]]] = defaultdict(list)
        for (agent, family, _), ps in per_instance.items():
            cells[(agent, family if scope == "family" else "(all)")].append(ps)
        for (agent, family), trials in cells.items():
            row: dict[str, Any] = {
                "agent": agent,
                "family": family,
                "instances": len(trials),
                "trials": sum(len(t) for t in trials),
                "min_trials": min(len(t) for t in trials),
            }
            row |= {f"pass_{k}": _pass_k(trials, k) for k in range(1, 5)}
            want.append(row)
    check(data, "pass_k", lambda r: (r["agent"], r["family"]), want)
    mixed = next(
        r for r in rows_of(data, "pass_k") if r == r | {"agent": "mixed", "family": "(all)"}
    )
    assert 0 < mixed["pass_4"] < mixed["pass_2"] < mixed["pass_1"] < 1
    oracle = [r for r in rows_of(data, "pass_k") if r["agent"] == "oracle"]
    assert all(r["pass_1"] == r["pass_3"] == 1.0 and r["pass_4"] is None for r in oracle)


def _steps(data: Dataset, eid: str) -> list[dict[str, Any]]:
    """Each call of a stored episode, read from its events: tool, params, outcome, chaos."""
    out: list[dict[str, Any]] = []
    for r in data.store.read(eid):
        e = r.event
        if isinstance(e, ToolCalled):
            params = None if e.params is None else canonical(e.params)
            out.append({"step": e.step, "tool": f"{e.app}.{e.method}", "params": params})
            out[-1] |= {"outcome": "ok", "fault_kind": None}
        elif out and isinstance(e, StepScored):
            continue
        elif out and isinstance(e, InvalidAction):
            out[-1]["outcome"] = "invalid"
        elif out and isinstance(e, ActionRejected):
            out[-1]["outcome"] = "rejected"
        elif out and isinstance(e, FaultInjected):
            out[-1] |= {"outcome": "fault", "fault_kind": FAULT_KINDS[e.kind]}
    return out


def _chaos_kinds(data: Dataset, eid: str) -> set[str]:
    kinds = set()
    for r in data.store.read(eid):
        if isinstance(r.event, ChaosInjected):
            kinds.add(r.event.kind)
        elif isinstance(r.event, FaultInjected):
            kinds.add(FAULT_KINDS[r.event.kind])
    return kinds


def test_recovery_by_chaos(data: Dataset):
    episodes: dict[tuple[str, str], list[bool]] = defaultdict(list)
    faults: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for p in data.played:
        for agent in (p.agent, "(all)"):
            for kind in _chaos_kinds(data, p.episode_id):
                episodes[(kind, agent)].append(p.outcome == "success")
            steps = _steps(data, p.episode_id)
            for i, s in enumerate(steps):
                if s["outcome"] == "fault":
                    retried = any(
                        t["tool"] == s["tool"]
                        and t["params"] == s["params"]
                        and t["outcome"] == "ok"
                        for t in steps[i + 1 :]
                    )
                    faults[(s["fault_kind"], agent)].append(retried)
    want = []
    for (kind, agent), outcomes in episodes.items():
        tried = faults.get((kind, agent), [])
        want.append(
            {
                "chaos_kind": kind,
                "agent": agent,
                "episodes": len(outcomes),
                "succeeded": sum(outcomes),
                "recovery_rate": sum(outcomes) / len(outcomes),
                "faulted_calls": len(tried),
                "retried_ok": sum(tried),
                "retry_rate": sum(tried) / len(tried) if tried else None,
            }
        )
    assert any(w["faulted_calls"] for w in want)
    assert any(w["retried_ok"] for w in want) and any(w["retry_rate"] != 1.0 for w in want)
    check(data, "recovery_by_chaos", lambda r: (r["chaos_kind"], r["agent"]), want)


def test_tool_errors(data: Dataset):
    calls: dict[str, Counter[str]] = defaultdict(Counter)
    ended = [p.episode_id for p in data.played]
    for eid in [*ended, data.running, data.fork]:
        first = data.fork_step + 1 if eid == data.fork else 1
        for s in _steps(data, eid):
            if s["step"] >= first:
                calls[s["tool"]][s["outcome"]] += 1
    want = []
    for tool, c in calls.items():
        n = sum(c.values())
        want.append(
            {
                "tool": tool,
                "calls": n,
                "invalid": c["invalid"],
                "rejected": c["rejected"],
                "faults": c["fault"],
                "invalid_rate": c["invalid"] / n,
                "rejected_rate": c["rejected"] / n,
                "fault_rate": c["fault"] / n,
                "error_rate": (n - c["ok"]) / n,
            }
        )
    assert sum(w["rejected"] for w in want) and sum(w["faults"] for w in want)
    check(data, "tool_errors", lambda r: r["tool"], want)
    got = [r["calls"] for r in rows_of(data, "tool_errors")]
    assert got == sorted(got, reverse=True)


def test_failure_taxonomy(data: Dataset):
    failed = [p for p in data.played if p.outcome != "success"]
    mistakes = {p.episode_id: diagnose(data.store.read(p.episode_id)) for p in failed}
    assert all(m is not None and m.label in LABELS for m in mistakes.values())
    # Points of no return for some failures only, set by hand (the load works them all out:
    # `tests/test_warehouse.py` checks those), so that the query's counts are put to the test.
    data.wh.con.execute("UPDATE failures SET point_of_no_return = NULL, no_return_checked = false")
    points = {p.episode_id: i % 4 for i, p in enumerate(failed) if i % 3}
    data.wh.set_points_of_no_return(points)
    try:
        cells: dict[tuple[str, str], list[str]] = defaultdict(list)
        for p in failed:
            label = mistakes[p.episode_id].label  # type: ignore[union-attr]
            cells[(p.agent, label)].append(p.episode_id)
            cells[("(all)", label)].append(p.episode_id)
        totals = Counter[str]()
        for (agent, _), eids in cells.items():
            totals[agent] += len(eids)
        want = []
        for (agent, label), eids in cells.items():
            ks = [points[e] for e in eids if e in points]
            steps = [mistakes[e].step for e in eids if mistakes[e].step is not None]  # type: ignore[union-attr]
            want.append(
                {
                    "agent": agent,
                    "label": label,
                    "failures": len(eids),
                    "share": len(eids) / totals[agent],
                    "mean_mistake_step": statistics.mean(steps) if steps else None,
                    "with_point_of_no_return": len(ks),
                    "mean_point_of_no_return": statistics.mean(ks) if ks else None,
                    "description": LABELS[label],
                }
            )
        check(data, "failure_taxonomy", lambda r: (r["agent"], r["label"]), want)
        first = rows_of(data, "failure_taxonomy")[0]
        assert first["agent"] == "(all)"
    finally:
        data.wh.con.execute(
            "UPDATE failures SET point_of_no_return = NULL, no_return_checked = false"
        )


def test_every_mistake(data: Dataset):
    cells: dict[tuple[str, str], list[Mistake]] = defaultdict(list)
    for p in data.played:
        for m in mistakes(data.store.read(p.episode_id)):
            cells[(p.agent, m.label)].append(m)
            cells[("(all)", m.label)].append(m)
    want = [
        {
            "agent": agent,
            "label": label,
            "mistakes": len(ms),
            "episodes": len({m.episode_id for m in ms}),
            "decisive": sum(m.decisive for m in ms),
            "made_good": sum(m.made_good_at is not None for m in ms),
            "harmless": sum(m.harmless for m in ms),
            "description": LABELS[label],
        }
        for (agent, label), ms in cells.items()
    ]
    assert any(w["decisive"] for w in want) and any(w["made_good"] for w in want)
    check(data, "every_mistake", lambda r: (r["agent"], r["label"]), want)
    failed = sum(p.outcome != "success" for p in data.played)
    [(decisive,)] = data.wh.con.execute("SELECT count(*) FROM mistakes WHERE decisive").fetchall()
    assert decisive == failed  # one decisive mistake per failed episode


def _noise(data: Dataset) -> dict[tuple[str, str], list[Played]]:
    return {k: ps for k, ps in groups(data.played, "agent", "instance").items() if len(ps) >= 2}


def test_noise_by_instance(data: Dataset):
    want = []
    for (agent, instance), ps in _noise(data).items():
        want.append(
            {
                "agent": agent,
                "instance_id": instance,
                "difficulty": ps[0].difficulty,
                "family": ps[0].family,
                "trials": len(ps),
                "success_rate": sum(p.outcome == "success" for p in ps) / len(ps),
                "mean_return": statistics.mean(p.total_return for p in ps),
                "return_stddev": statistics.stdev(p.total_return for p in ps),
            }
        )
    check(data, "noise_by_instance", lambda r: (r["agent"], r["instance_id"]), want)
    assert "(unlabelled)" not in {r["agent"] for r in rows_of(data, "noise_by_instance")}


def test_noise_floor(data: Dataset):
    cells: dict[tuple[str, int], list[list[Played]]] = defaultdict(list)
    for (agent, _), ps in _noise(data).items():
        cells[(agent, ps[0].difficulty)].append(ps)
    want = []
    for (agent, difficulty), instances in cells.items():
        sds = [statistics.stdev(p.total_return for p in ps) for ps in instances]
        rates = [sum(p.outcome == "success" for p in ps) / len(ps) for ps in instances]
        want.append(
            {
                "agent": agent,
                "difficulty": difficulty,
                "instances": len(instances),
                "trials": sum(len(ps) for ps in instances),
                "mean_return_stddev": statistics.mean(sds),
                "max_return_stddev": max(sds),
                "mean_success_rate": statistics.mean(rates),
                "flaky_instances": sum(0 < r < 1 for r in rates),
            }
        )
    assert any(w["flaky_instances"] for w in want)
    check(data, "noise_floor", lambda r: (r["agent"], r["difficulty"]), want)
