"""Failure analysis (`projections.mistakes`) with the privileged scripted mistake agents
(`agents.mistakes`): each agent's mistake is in the mistakes table at the step it made it, and
the idling and fallback agents get their label as the decisive one; successes, running
episodes and the oracle get no mistake; mistakes made good later are not decisive; and every
failure of the naive and random baselines gets a documented label. The observation-only flawed
agents and the decisive label are tested in tests/test_mistakes.py."""

from __future__ import annotations

import collections
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companyos.agents import RandomAgent, in_process_naive, in_process_oracle, play
from companyos.agents.mistakes import (
    FALLBACK_LABELS,
    MISTAKE_AGENTS,
    RoutesToWrongApprover,
    Scripted,
    find_instances,
)
from companyos.api import CompanyOSEnvironment, CompanyOSObservation
from companyos.domain import FAMILY_NAMES, World, plan
from companyos.events.types import ApprovalDecided, EpisodeEnded, FaultInjected, ToolCalled
from companyos.projections.mistakes import FALLBACKS, IDLING, LABELS, Mistake, mistakes
from companyos.projections.mistakes import decisive as diagnose

from .helpers import acting, af, dh, request_data, retry, task_metric, world
from .strategies import ORACLE, action, resolve

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = (
    "hallucinated_tool",
    "invalid_params",
    "used_stale_data",
    "routed_to_out_of_office",
    "skipped_verification",
    "closed_blocked_ticket",
    "gave_up_after_rejection",
    "no_retry_after_fault",
    "timed_out_while_polling",
    "submitted_wrong_data",
    "pushed_infeasible_through",
    "ran_out_of_steps",
    "abandoned",
    "wrong_approver",
    "missing_access",
    "wrong_decision",
    "collateral_damage",
)


OWN_ORDER = ("missing_access", "no_retry_after_fault", "gave_up_after_rejection")
"""Omissions the scripted agents place where the oracle would have acted."""


def diagnosed(env: CompanyOSEnvironment, episode_id: str) -> Mistake | None:
    return diagnose(env.store.read(episode_id))


def check_shape(m: Mistake, steps: int) -> None:
    """A label of the taxonomy, a step within the episode (none for a fallback), words."""
    assert m.label in LABELS
    assert m.evidence
    if m.label == "unsolvable_instance":
        assert m.step == 0
    else:
        assert 0 <= m.step <= steps


# ---------------------------------------------------------------------------- the taxonomy


def test_the_taxonomy_is_complete_stable_and_documented():
    assert set(REQUIRED) <= set(LABELS)
    for label, definition in LABELS.items():
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", label), label
        assert definition.endswith(".") and len(definition) > 30, label
    assert set(FALLBACKS) | set(IDLING) <= set(LABELS)
    doc = (ROOT / "docs" / "failure_taxonomy.md").read_text()
    rows = re.findall(r"^\| `([a-z_]+)` \|", doc, flags=re.MULTILINE)
    assert rows == list(LABELS), "docs/failure_taxonomy.md lists the labels in LABELS order"


def test_every_label_has_a_mistake_agent():
    # `finished_wrong` is a safety net for a failure nothing more specific explains: every
    # agent that finishes wrong makes a mistake some other label names.
    # The labels new with observation-only analysis have flawed agents (agents.flawed).
    assert set(MISTAKE_AGENTS) == set(LABELS) - {
        "finished_wrong",
        "fixed_too_late",
        "unsolvable_instance",
        "no_tool_call",
        "wrong_object",
    }
    env = CompanyOSEnvironment()
    for label, factory in MISTAKE_AGENTS.items():
        agent = factory(env)
        assert agent.label == label == agent.name


# ---------------------------------------------------------------------------- each mistake


@pytest.mark.parametrize("label", list(MISTAKE_AGENTS))
def test_each_mistake_agent_s_mistake_is_in_the_table_at_its_step(label):
    found = find_instances(label, 2)
    assert len(found) == 2, f"no instance where {label} can be made"
    for family, difficulty, seed in found:
        env = CompanyOSEnvironment()
        agent = MISTAKE_AGENTS[label](env)
        r = play(env, agent, seed=seed, task_id=family, difficulty=difficulty)
        assert r.outcome in ("failure", "timeout", "abandoned"), (label, family, difficulty, seed)
        records = env.store.read(r.episode_id)
        m = diagnose(records)
        assert m is not None
        check_shape(m, r.steps)
        rows = mistakes(records)
        assert sum(x.decisive for x in rows) == 1 and m in rows
        where = f"{family}-d{difficulty}-s{seed}: {m}"
        if label in FALLBACK_LABELS or label in IDLING:
            assert m.label == label, where
        if label in FALLBACK_LABELS:
            assert agent.mistake_step is None
        elif label not in IDLING:
            assert agent.mistake_step is not None, where
            # The scripted agent changes another ticket's field, one the task asks of its own
            # ticket: a mix-up of objects in the new taxonomy.
            accepted = {label, "wrong_object"} if label == "collateral_damage" else {label}
            if label in OWN_ORDER:
                # Judged in the agent's own order: due when it moved on, not when the oracle
                # would have acted (the scripted agent marks the oracle's step).
                at = [x.label for x in rows if x.step >= agent.mistake_step]
            else:
                at = [x.label for x in rows if x.step == agent.mistake_step]
            assert accepted & set(at), (where, at)


# ---------------------------------------------------------------------------- no mistake


def test_successes_and_running_episodes_get_no_diagnosis():
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    for i, family in enumerate(FAMILY_NAMES):
        for difficulty in range(4):
            r = play(env, oracle, seed=i * 31 + difficulty, task_id=family, difficulty=difficulty)
            assert r.outcome == "success"
            assert diagnosed(env, r.episode_id) is None
    env.reset(seed=5, task_id="vendor_onboarding", difficulty=2)
    dh(env, "query_metric", metric_name="nothing.here")  # a mistake, but nothing has ended
    assert env.episode is not None
    assert diagnosed(env, env.episode.id) is None


def test_the_oracle_cut_short_is_never_blamed_for_a_mistake():
    """Had the oracle's episode ended after any of its steps (out of time, or quit), nothing it
    did would be a mistake: its faults were retried, its chance rejections escalated when their
    turn came, its waiting was what the task needed."""
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    labels: collections.Counter[str] = collections.Counter()
    seen: collections.Counter[str] = collections.Counter()
    for i, family in enumerate(FAMILY_NAMES):
        for difficulty in (1, 2, 3):
            for seed in (i, i + 100, i + 200):
                full = play(env, oracle, seed=seed, task_id=family, difficulty=difficulty)
                assert full.outcome == "success"
                events = [rec.event for rec in env.store.read(full.episode_id)]
                calls = [k for k, e in enumerate(events) if isinstance(e, ToolCalled)]
                for step in range(1, len(calls)):
                    prefix = events[: calls[step]]
                    for outcome in ("timeout", "abandoned"):
                        ended = EpisodeEnded(outcome=outcome, step=step)  # type: ignore[arg-type]
                        m = diagnose([*prefix, ended])
                        expected = "ran_out_of_steps" if outcome == "timeout" else "abandoned"
                        assert m is not None and m.label == expected, (family, seed, step, m)
                        labels[m.label] += 1
                seen["fault"] += sum(isinstance(e, FaultInjected) for e in events)
                seen["rejection"] += sum(
                    isinstance(e, ApprovalDecided) and e.cause == "chance" for e in events
                )
    # The budget itself cut short: an episode the environment ended. No player can finish in
    # so few steps: a label of the instance (its budget), not of the oracle.
    for family in FAMILY_NAMES[:4]:
        for cut in (1, 3, 5):
            r = play(env, oracle, seed=3, task_id=family, difficulty=2, max_steps=cut)
            m = diagnosed(env, r.episode_id)
            assert (
                (m is None) if r.outcome == "success" else (m and m.label == "unsolvable_instance")
            )
    assert labels["ran_out_of_steps"] > 500
    assert seen["fault"] > 50 and seen["rejection"] > 20  # recoveries were exercised


# ---------------------------------------------------------------------------- recovery


class Prefixed:
    """Makes a few calls of its own first (each from the world it meets), then lets ``inner``
    play: how a recovered mistake is put in front of an unrecovered one."""

    def __init__(
        self, env: CompanyOSEnvironment, prefix: list[Callable[[World], Any]], inner: Scripted
    ):
        self.env, self.prefix, self.inner = env, prefix, inner
        self.name = f"prefixed_{inner.name}"

    def reset(self, observation: CompanyOSObservation) -> None:
        self.inner.reset(observation)
        self.done = 0

    def act(self, observation: CompanyOSObservation) -> dict[str, Any]:
        if self.done < len(self.prefix):
            self.done += 1
            assert self.env.episode is not None
            return self.prefix[self.done - 1](self.env.episode.world)
        return self.inner.act(observation)


def _main(w: World) -> str:
    assert w.task is not None
    return w.task.goal.ticket_id


def _other(w: World) -> str:
    assert w.task is not None
    wanted = {tg.ticket_id for tg in w.task.goal.tickets}
    return min(t for t in w.tickets if t not in wanted)


def _update(ticket: str, field: str, value: Any) -> dict[str, Any]:
    return {
        "app": "ticketdesk",
        "method": "update_ticket",
        "params": {"ticket_id": ticket, "field": field, "value": value},
    }


def _baseline_status(w: World) -> str:
    assert w.baseline is not None
    return w.baseline[_other(w)].status


def _changed_status(w: World) -> str:
    """A status the other ticket does not have (a real change, not a no-op)."""
    return "open" if w.tickets[_other(w)].status == "in_progress" else "in_progress"


RECOVERED: dict[str, tuple[list[Callable[[World], Any]], str]] = {
    # a recovered mistake, then what it is called when nothing makes it good
    "tool_corrected": (
        [
            lambda w: {
                "app": "ticketdesk",
                "method": "verify_ticket",
                "params": {"ticket_id": _main(w)},
            }
        ],
        "hallucinated_tool",
    ),
    "params_corrected": ([lambda w: _update(_main(w), "priority", "urgent")], "invalid_params"),
    "field_set_right": ([lambda w: _update(_main(w), "priority", "low")], "submitted_wrong_data"),
    "other_ticket_put_back": (
        [
            lambda w: _update(_other(w), "status", _changed_status(w)),
            lambda w: _update(_other(w), "status", _baseline_status(w)),
        ],
        "looped",  # put back by its own second call: only the idling (from step 1) is left
    ),
}


@pytest.mark.parametrize("prefix", list(RECOVERED))
def test_a_mistake_made_good_later_is_not_blamed(prefix):
    """A bad call that is corrected (a real tool, right parameters, the field set right, the
    other ticket put back) comes first, then an unrecovered wrong approver: that is the
    diagnosis. Left uncorrected (the agent then only looks), the bad call is."""
    calls, uncorrected = RECOVERED[prefix]
    ((family, difficulty, seed),) = find_instances(
        "wrong_approver", 1, difficulties=(0,), families=("vendor_onboarding",)
    )
    env = CompanyOSEnvironment()
    inner = RoutesToWrongApprover(env)
    r = play(env, Prefixed(env, calls, inner), seed=seed, task_id=family, difficulty=difficulty)
    m = diagnosed(env, r.episode_id)
    assert m is not None and (m.label, m.step) == ("wrong_approver", inner.mistake_step), m
    assert inner.mistake_step is not None and inner.mistake_step > len(calls)

    env = CompanyOSEnvironment()
    r = play(
        env, Prefixed(env, calls, Stuck(env)), seed=seed, task_id=family, difficulty=difficulty
    )
    m = diagnosed(env, r.episode_id)
    assert m is not None and m.label == uncorrected, m
    assert m.step == 1, m


class Stuck(Scripted):
    """After the prefix, only looks (so nothing corrects what the prefix did)."""

    label = name = "stuck"

    def choose(self, world: World, observation: CompanyOSObservation) -> dict[str, Any]:
        return {"app": "ticketdesk", "method": "list_tickets", "params": {}}


def test_faults_retried_before_the_mistake_are_not_blamed():
    checked = 0
    for family, difficulty, seed in find_instances(
        "wrong_approver", 40, difficulties=(2, 3), seeds=range(40)
    ):
        env = CompanyOSEnvironment()
        agent = RoutesToWrongApprover(env)
        r = play(env, agent, seed=seed, task_id=family, difficulty=difficulty)
        records = env.store.read(r.episode_id)
        step, faulted = 0, False
        for rec in records:
            if isinstance(rec.event, ToolCalled):
                step = rec.event.step
            elif isinstance(rec.event, FaultInjected) and step < (agent.mistake_step or 0):
                faulted = True
        if not faulted:
            continue
        m = diagnose(records)
        assert m is not None and (m.label, m.step) == ("wrong_approver", agent.mistake_step), m
        checked += 1
    assert checked >= 5


def _oracle_until(env: CompanyOSEnvironment, stop: Callable[[Any], bool]) -> None:
    for _ in range(60):
        call = plan(world(env))
        if call is None or stop(call):
            return
        env.step(call.as_action())
    raise AssertionError("the oracle never got there")


@pytest.mark.parametrize("resubmit", [True, False])
def test_stale_data_counts_unless_resubmitted_with_fresh_data(resubmit):
    """Vendor onboarding at difficulty 2: the compliance score is stale. Submitting the stale
    value is made good by refreshing and submitting again; left alone, it is the diagnosis."""
    env = CompanyOSEnvironment()
    env.reset(seed=7, task_id="vendor_onboarding", difficulty=2)
    assert env.episode is not None
    eid = env.episode.id
    metric = task_metric(env)
    _oracle_until(env, lambda c: c.method == "refresh_data")
    retry(dh, env, "query_metric", metric_name=metric)
    data = request_data(env, "vendor_onboarding")
    assert world(env).metrics[metric].stale(world(env).clock)
    retry(
        af,
        env,
        "submit_approval",
        approval_type="vendor_onboarding",
        approver=acting(env, "cfo"),
        data=data,
    )
    stale_step = world(env).step
    if resubmit:
        retry(dh, env, "refresh_data", metric_name=metric)
        retry(
            af,
            env,
            "submit_approval",
            approval_type="vendor_onboarding",
            approver=acting(env, "cfo"),
            data=request_data(env, "vendor_onboarding"),
        )
    env.reset(seed=8, task_id="vendor_onboarding", difficulty=2)  # the session quits
    m = diagnosed(env, eid)
    assert m is not None
    if resubmit:
        assert m.label == "abandoned", m
    else:
        assert (m.label, m.step) == ("used_stale_data", stale_step), m
        assert metric in m.detail


def test_plain_events_and_stored_records_get_the_same_diagnosis():
    ((family, difficulty, seed),) = find_instances("routed_to_out_of_office", 1)
    env = CompanyOSEnvironment()
    r = play(
        env,
        MISTAKE_AGENTS["routed_to_out_of_office"](env),
        seed=seed,
        task_id=family,
        difficulty=difficulty,
    )
    records = env.store.read(r.episode_id)
    plain = diagnose([rec.event for rec in records])
    assert plain is not None and diagnose(records) == replace(plain, episode_id=r.episode_id)
    assert diagnose(records) == diagnose(records)  # pure: same log, same answer


# ---------------------------------------------------------------------------- the baselines


def _sweep(agent_of: Callable[[CompanyOSEnvironment, int], Any]) -> collections.Counter[str]:
    env = CompanyOSEnvironment()
    labels: collections.Counter[str] = collections.Counter()
    for difficulty in (1, 2, 3):
        for i, family in enumerate(FAMILY_NAMES):
            for k in range(2):
                seed = 1000 * difficulty + 10 * i + k
                r = play(env, agent_of(env, seed), seed=seed, task_id=family, difficulty=difficulty)
                m = diagnosed(env, r.episode_id)
                if r.outcome == "success":
                    assert m is None
                    labels["(success)"] += 1
                    continue
                assert m is not None, (family, difficulty, seed)
                check_shape(m, r.steps)
                # Both only call real tools: a hallucination would be a misreading of the log.
                assert m.label != "hallucinated_tool"
                labels[m.label] += 1
    return labels


def test_every_failure_of_the_naive_and_random_baselines_gets_a_label():
    naive = _sweep(lambda env, seed: in_process_naive(env))
    random = _sweep(lambda env, seed: RandomAgent(seed))
    for name, counts in (("naive", naive), ("random", random)):
        total = sum(counts.values())
        print(f"\n{name} ({total} episodes, difficulties 1-3):")
        for label, n in counts.most_common():
            print(f"  {label:26s} {n:3d}")
    assert sum(naive.values()) == sum(random.values()) == 72
    assert random["(success)"] == 0
    # The naive baseline ignores chaos: faults it never retries, approvers away, no access.
    assert {"no_retry_after_fault", "routed_to_out_of_office"} <= set(naive)
    assert "ran_out_of_steps" not in naive  # every failure of it has a cause
    # The random one mostly calls tools with things that do not exist.
    assert random.most_common(1)[0][0] == "invalid_params"


@settings(max_examples=60)
@given(
    seed=st.integers(0, 2**31 - 1),
    task=st.integers(0, len(FAMILY_NAMES) - 1),
    difficulty=st.integers(0, 3),
    agent_seed=st.integers(0, 10_000),
    max_steps=st.integers(1, 30),
)
def test_random_episodes_always_get_a_label(seed, task, difficulty, agent_seed, max_steps):
    env = CompanyOSEnvironment()
    r = play(
        env,
        RandomAgent(agent_seed),
        seed=seed,
        task_id=task,
        difficulty=difficulty,
        max_steps=max_steps,
    )
    m = diagnosed(env, r.episode_id)
    if r.outcome == "success":
        assert m is None
    else:
        assert m is not None
        check_shape(m, r.steps)


@settings(max_examples=60)
@given(
    seed=st.integers(0, 2**31 - 1),
    task=st.integers(0, len(FAMILY_NAMES) - 1),
    difficulty=st.integers(0, 3),
    actions=st.lists(action, min_size=0, max_size=25),
    quit_early=st.booleans(),
)
def test_any_action_sequence_gets_a_label(seed, task, difficulty, actions, quit_early):
    """Junk, plausible calls and oracle moves mixed, then the session quits or the budget runs
    out: whatever the log holds, the diagnosis is a label of the taxonomy (or None)."""
    env = CompanyOSEnvironment()
    env.reset(seed=seed, task_id=task, difficulty=difficulty, max_steps=20)
    assert env.episode is not None
    eid = env.episode.id
    obs = None
    for a in actions:
        w = world(env)
        if a == ORACLE:
            call = plan(w)
            a = call.as_action() if call else {"app": "ticketdesk", "method": "list_tickets"}
        obs = env.step(resolve(a, w))
        if obs.done:
            break
    if obs is None or not obs.done:
        if quit_early:
            env.reset(seed=1, task_id=0, difficulty=0)  # a new episode abandons this one
        else:
            agent = RandomAgent(seed)
            obs = env.step({"app": "ticketdesk", "method": "list_tickets", "params": {}})
            agent.reset(obs)
            while not obs.done:
                obs = env.step(agent.act(obs))
    records = env.store.read(eid)
    m = diagnose(records)
    ended = [rec.event for rec in records if rec.event.type == "EpisodeEnded"]
    assert ended
    rows = mistakes(records)
    steps = sum(isinstance(rec.event, ToolCalled) for rec in records)
    for row in rows:  # every row is a documented label at a step of the episode
        assert row.label in LABELS and row.evidence and 0 <= row.step <= steps
        assert row.made_good_at is None or row.step < row.made_good_at <= steps
        assert not (row.harmless and row.decisive)
    if ended[-1].outcome == "success":  # type: ignore[attr-defined]
        assert m is None and not any(row.decisive for row in rows)
    else:
        assert m is not None
        check_shape(m, steps)
        assert [row for row in rows if row.decisive] == [m]
