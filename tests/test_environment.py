"""The OpenEnv Environment API in-process: reset, step, state, metadata, typed models."""

from __future__ import annotations

import pytest
from openenv.core.env_server.interfaces import Environment

from companyos.api import (
    CompanyOSAction,
    CompanyOSEnvironment,
    CompanyOSObservation,
    CompanyOSState,
    ResetError,
)
from companyos.api.models import observation_from
from companyos.domain import TOOLS
from companyos.events.types import EpisodeEnded


def test_is_an_openenv_environment_with_concurrent_sessions():
    env = CompanyOSEnvironment()
    assert isinstance(env, Environment)
    assert CompanyOSEnvironment.SUPPORTS_CONCURRENT_SESSIONS is True
    assert env.get_metadata().name == "CompanyOS"


def test_reset_observation_carries_everything_a_client_needs():
    env = CompanyOSEnvironment()
    obs = env.reset(seed=42, task_id="expense_report", difficulty=1, episode_id="ep-42")
    assert isinstance(obs, CompanyOSObservation)
    assert (obs.episode_id, obs.seed, obs.task_id, obs.difficulty) == (
        "ep-42",
        42,
        "expense_report",
        1,
    )
    assert obs.task.startswith("Process expense report")
    assert obs.step == 0 and obs.max_steps >= 18 and obs.steps_remaining == obs.max_steps
    assert obs.instance_id == "expense_report-d1-s42" and obs.time == "Mon 09:00"
    # The agent is shown nothing of the grader: the milestones are the trainer's (`state`).
    assert obs.progress == {}
    assert not {"cumulative_return", "shortcut_attempts"} & set(obs.model_dump())
    assert list(env.state.progress)[-2:] == ["clean", "approved:expense_report"]
    assert env.state.progress["approved:expense_report"] is False
    assert {t["name"] for t in obs.tools} == {t.name for t in TOOLS.values()}
    assert obs.done is False and obs.reward is None and env.state.cumulative_return == 0.0
    step = env.step(CompanyOSAction(app="ticketdesk", method="list_tickets"))
    assert step.tools == [] and step.step == 1 and step.steps_remaining == 17
    # Everything is a real field: nothing rides in metadata (OpenEnv drops it on the wire).
    assert step.metadata == {}


def test_task_ids_by_name_index_and_seed():
    env = CompanyOSEnvironment()
    assert env.reset(seed=1, task_id=3).task_id == "license_renewal"
    assert env.reset(seed=1, task_id="Licence-Renewal").task_id == "license_renewal"
    assert env.reset(seed=1, task_id="2").task_id == "bug_escalation"
    drawn = {env.reset(seed=s).task_id for s in range(120)}
    assert len(drawn) == 12


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"task_id": "payroll"}, "unknown task"),
        ({"difficulty": 7}, "difficulty must be"),
        ({"seed": -1}, "seed must be"),
        ({"seed": "12"}, "seed must be"),
        ({"episode_id": "bad id!"}, "episode_id must be"),
        ({"reward_profile": "lenient"}, "unknown reward profile"),
        ({"max_steps": 0}, "max_steps must be"),
        ({"dificulty": 2}, "unknown reset option"),
        ({"at_step": 2}, "only meaningful with fork_from"),
    ],
)
def test_bad_reset_raises_a_clear_error_and_changes_nothing(kwargs, match):
    env = CompanyOSEnvironment()
    env.reset(seed=1, episode_id="keep")
    before = env.store.read("keep")
    with pytest.raises(ResetError, match=match):
        env.reset(**kwargs)
    assert env.store.read("keep") == before
    assert env.episode is not None and env.episode.id == "keep"


def test_duplicate_episode_id_is_refused():
    env = CompanyOSEnvironment()
    env.reset(seed=1, episode_id="dup")
    with pytest.raises(ResetError, match="already exists"):
        env.reset(seed=2, episode_id="dup")


def test_reset_abandons_the_unfinished_episode():
    env = CompanyOSEnvironment()
    first = env.reset(seed=1).episode_id
    env.step({"app": "ticketdesk", "method": "list_tickets"})
    env.reset(seed=2)
    last = env.store.read(first)[-1].event
    assert isinstance(last, EpisodeEnded) and last.outcome == "abandoned" and last.step == 1


def test_state_snapshot():
    env = CompanyOSEnvironment()
    assert env.state.episode_id is None
    env.reset(seed=9, task_id="vendor_onboarding", difficulty=2)
    env.step({"app": "datahub", "method": "list_metrics"})
    s = env.state
    assert isinstance(s, CompanyOSState)
    assert (s.step_count, s.seed, s.task_id, s.difficulty, s.done) == (
        1,
        9,
        "vendor_onboarding",
        2,
        False,
    )
    assert s.stream_version == env.store.version(s.episode_id)
    world = s.world
    assert s.world["episode"]["clock_minutes"] == 5 and s.world["episode"]["time"] == "Mon 09:05"
    assert {t["ticket_id"] for t in world["ticketdesk"]["tickets"]} >= {
        env.episode.world.task.goal.ticket_id
    }
    assert "out_of_office" in world["chaos"]
    CompanyOSState.model_validate(s.model_dump())


def test_continue_another_stored_episode_by_id():
    env_a, env_b = CompanyOSEnvironment(), None
    obs = env_a.reset(seed=3, task_id=0, difficulty=0)
    env_b = CompanyOSEnvironment(env_a.store)
    step = env_b.step(
        CompanyOSAction(
            app="ticketdesk",
            method="get_ticket",
            params={"ticket_id": "TKT-1042"},
            episode_id=obs.episode_id,
        )
    )
    assert step.episode_id == obs.episode_id and step.step == 1
    # env_a's cached episode is stale now; its next step conflicts cleanly, then recovers.
    clash = env_a.step({"app": "ticketdesk", "method": "list_tickets"})
    assert clash.error == "conflict" and clash.step == 1
    ok = env_a.step({"app": "ticketdesk", "method": "list_tickets"})
    assert ok.error is None and ok.step == 2


def test_fast_observation_equals_validated():
    values = dict(
        done=False,
        reward=0.5,
        metadata={},
        episode_id="e",
        seed=1,
        task_id="t",
        difficulty=2,
        instance_id="t-d2-s1",
        task="x",
        step=1,
        clock_minutes=5,
        time="Mon 09:05",
        max_steps=3,
        steps_remaining=2,
        progress={"a": True},
        last_result={"k": [1]},
        message="m",
        error=None,
        outcome=None,
        tools=[],
    )
    fast = observation_from(dict(values))
    slow = CompanyOSObservation(**values)
    assert fast == slow and fast.model_dump() == slow.model_dump()
    assert set(values) == set(CompanyOSObservation.model_fields)


def test_agent_label_is_recorded_and_relabelled_on_fork():
    from companyos.projections import summarize

    env = CompanyOSEnvironment()
    first = env.reset(seed=2, agent="random").episode_id
    env.step({"app": "ticketdesk", "method": "list_tickets"})
    assert summarize(env.store.read(first)).agent == "random"
    fork = env.reset(fork_from=first, at_step=1, agent="oracle").episode_id
    assert summarize(env.store.read(fork)).agent == "oracle"
    with pytest.raises(ResetError, match="agent must be"):
        env.reset(agent="x" * 65)
