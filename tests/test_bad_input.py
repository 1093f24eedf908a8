"""Bad input yields an error observation and an event with a message and a penalty, never an
exception; oversize values are refused, not stored; nothing else changes."""

from __future__ import annotations

import math

import pytest

from companyos.api import CompanyOSAction, CompanyOSEnvironment
from companyos.events.types import InvalidAction, ToolCalled

TEN_MB = "x" * (10 * 1024 * 1024)

CASES = [
    ("unknown_app", {"app": "slack", "method": "post", "params": {}}, "unknown_tool"),
    (
        "unknown_method",
        {"app": "ticketdesk", "method": "close_ticket", "params": {"ticket_id": "TKT-1042"}},
        "unknown_tool",
    ),
    (
        "wrong_app",
        {"app": "ticketdesk", "method": "get_approver", "params": {"role": "CFO"}},
        "unknown_tool",
    ),
    (
        "wrong_type",
        {"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": 1042}},
        "invalid_params",
    ),
    (
        "missing_param",
        {
            "app": "ticketdesk",
            "method": "update_ticket",
            "params": {"ticket_id": "TKT-1042", "field": "priority"},
        },
        "invalid_params",
    ),
    (
        "extra_param",
        {"app": "datahub", "method": "list_metrics", "params": {"verbose": True}},
        "invalid_params",
    ),
    (
        "nan",
        {
            "app": "approvalflow",
            "method": "submit_approval",
            "params": {
                "approval_type": "vendor_onboarding",
                "approver": "Marcus Lee",
                "data": {"compliance_score": math.nan},
            },
        },
        "invalid_number",
    ),
    (
        "inf",
        {
            "app": "ticketdesk",
            "method": "update_ticket",
            "params": {"ticket_id": "TKT-1042", "field": "priority", "value": math.inf},
        },
        "invalid_number",
    ),
    (
        "huge_int",
        {"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": 10**40}},
        "invalid_number",
    ),
    (
        "ten_mb",
        {"app": "ticketdesk", "method": "search_tickets", "params": {"query": TEN_MB}},
        "too_large",
    ),
    ("ten_mb_unknown_tool", {"app": "x", "method": "y", "params": {"q": TEN_MB}}, "unknown_tool"),
    (
        "params_list",
        {"app": "ticketdesk", "method": "get_ticket", "params": ["TKT-1042"]},
        "params_not_object",
    ),
    (
        "params_string",
        {"app": "ticketdesk", "method": "get_ticket", "params": "TKT-1042"},
        "params_not_object",
    ),
    (
        "data_string",
        {
            "app": "approvalflow",
            "method": "submit_approval",
            "params": {
                "approval_type": "vendor_onboarding",
                "approver": "Marcus Lee",
                "data": "compliance_score ticket_id vendor",
            },
        },
        "invalid_params",
    ),
    (
        "nested",
        {
            "app": "ticketdesk",
            "method": "get_ticket",
            "params": {"ticket_id": {"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}}},
        },
        "too_deep",
    ),
    (
        "non_str_key",
        {"app": "ticketdesk", "method": "get_ticket", "params": {1: "TKT-1042"}},
        "invalid_params",
    ),
    (
        "bad_field",
        {
            "app": "ticketdesk",
            "method": "update_ticket",
            "params": {"ticket_id": "TKT-1042", "field": "owner", "value": "me"},
        },
        "invalid_field",
    ),
    (
        "bad_value",
        {
            "app": "ticketdesk",
            "method": "update_ticket",
            "params": {"ticket_id": "TKT-1042", "field": "priority", "value": "urgent"},
        },
        "invalid_value",
    ),
    ("app_not_string", {"app": 7, "method": None, "params": {}}, "unknown_tool"),
]


@pytest.mark.parametrize(("name", "action", "code"), CASES, ids=[c[0] for c in CASES])
def test_bad_call_is_an_event_not_an_exception(any_store, name, action, code):
    env = CompanyOSEnvironment(any_store)
    env.reset(seed=3, task_id="vendor_onboarding", difficulty=0)
    ep = env.episode
    assert ep is not None
    world_before = ep.world
    version = ep.version
    obs = env.step(action)
    assert obs.error == code, obs.message
    assert obs.message and obs.last_result["error"] == code
    assert obs.reward is not None and obs.reward < -0.1  # step cost plus a penalty
    assert not obs.done and obs.step == 1
    records = any_store.read(ep.id)[version + 1 :]
    called, outcome = records[0].event, records[1].event
    assert isinstance(called, ToolCalled) and isinstance(outcome, InvalidAction)
    assert outcome.code == code and outcome.message == obs.message.removeprefix("Invalid action: ")
    # Nothing but the step counter moved.
    assert ep.world.tickets is world_before.tickets and ep.world.approvals is world_before.approvals
    # Oversize values are refused, not stored; the whole log stays small.
    assert sum(len(str(r.data)) for r in any_store.read(ep.id)) < 60_000
    if code == "too_large":
        assert called.params is None and called.refused


def test_error_messages_say_what_to_do():
    env = CompanyOSEnvironment()
    env.reset(seed=1, task_id=0, difficulty=0)
    obs = env.step({"app": "ticketdesk", "method": "close_ticket", "params": {}})
    assert "update_ticket" in obs.message
    obs = env.step({"app": "ticketdesk", "method": "get_approver", "params": {"role": "CFO"}})
    assert "datahub" in obs.message
    obs = env.step({"app": "tiketdesk", "method": "get_ticket", "params": {}})
    assert "ticketdesk" in obs.message
    obs = env.step({"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": "T-1"}})
    assert obs.error == "ticket_not_found" and "search_tickets" in obs.message
    obs = env.step({"app": "datahub", "method": "query_metric", "params": {"metric_name": "x"}})
    metric = env.episode.world.task.goal.metrics[0]
    assert metric in obs.message and "list_metrics" in obs.message


def test_a_refused_step_writes_nothing_to_the_store(any_store):
    """A call with no episode to go to (none started, an unknown id, an id no episode could
    have) is answered and changes nothing: no stream holding the caller's params, so nobody
    who can reach the port can grow the store with refused calls."""
    env = CompanyOSEnvironment(any_store)
    obs = env.step(CompanyOSAction(app="ticketdesk", method="list_tickets"))
    assert obs.error == "no_episode" and "reset()" in obs.message and not obs.done
    for action in (
        {"app": "x", "method": "y", "params": {"blob": "x" * 4000, "more": ["y" * 4000] * 3}},
        {"app": "x", "method": "y", "params": {"a": 1}, "episode_id": "no-such-episode"},
        {"app": "x", "method": "y", "params": {"a": 1}, "episode_id": "not an id\x00"},
    ):
        obs = env.step(action)
        assert obs.error in ("no_episode", "episode_not_found") and obs.reward == 0.0
    assert any_store.streams() == [] and any_store.read_all() == []
    env.reset(seed=1, task_id=0)
    assert [s.stream_id for s in any_store.streams()] == [env.state.episode_id]


def test_unknown_episode_id_is_an_error_observation():
    env = CompanyOSEnvironment()
    obs = env.step(CompanyOSAction(app="ticketdesk", method="list_tickets", episode_id="nope"))
    assert obs.error == "episode_not_found" and "nope" in obs.message


def test_step_after_the_end_changes_nothing():
    env = CompanyOSEnvironment()
    env.reset(seed=1, task_id=0, difficulty=0, max_steps=2)
    env.step({"app": "ticketdesk", "method": "list_tickets"})
    obs = env.step({"app": "ticketdesk", "method": "list_tickets"})
    assert obs.done and obs.outcome == "timeout"
    ep = env.episode
    assert ep is not None
    version = ep.version
    obs = env.step({"app": "ticketdesk", "method": "list_tickets"})
    assert obs.done and obs.error == "episode_ended" and "reset()" in obs.message
    assert obs.reward == 0.0 and ep.version == version == env.store.version(ep.id)


def test_action_model_from_dict_and_junk_objects():
    env = CompanyOSEnvironment()
    env.reset(seed=1, task_id=0, difficulty=0)
    assert env.step(object()).error == "unknown_tool"  # type: ignore[arg-type]
    assert env.step({"app": ["ticketdesk"], "method": {}, "params": {}}).error == "unknown_tool"
