"""Every answer the server sends is what OpenEnv's own `serialize_observation` would send: the
cheaper `wire` (installed by `compat` for observations that hold JSON values only) and the
batch answer built without validation give the same value, for observations of real episodes
(every kind of call, refusals and ended episodes included) and for the MCP ones it leaves alone.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openenv.core.env_server import http_server
from openenv.core.env_server.mcp_types import ListToolsAction
from openenv.core.env_server.types import WSObservationResponse

from companyos.api import CompanyOSEnvironment, compat
from companyos.api.models import CompanyOSBatchAction, CompanyOSBatchObservation, wire
from companyos.domain import plan

METHODS = ["list_tickets", "get_ticket", "update_ticket", "query_metric", "check_status", "x"]
calls = st.one_of(
    st.just(None),  # the oracle's next call
    st.fixed_dictionaries(
        {
            "app": st.sampled_from(["ticketdesk", "datahub", "approvalflow", "nope", 3]),
            "method": st.sampled_from(METHODS),
            "params": st.dictionaries(
                st.sampled_from(["ticket_id", "metric_name", "role", "field", "value", "zz"]),
                st.sampled_from(["T-001", "CFO", "priority", "high", 7, None, [1], {"a": 1.5}]),
                max_size=3,
            ),
        }
    ),
)


def openenv_answer(obs: object) -> dict:
    """OpenEnv's own serialisation, as JSON would carry it."""
    return json.loads(json.dumps(compat._original_serialize(obs)))


def same_as_openenv(obs: object) -> None:
    fast = http_server.serialize_observation(obs)
    assert fast == compat._original_serialize(obs)
    assert json.loads(json.dumps(fast)) == openenv_answer(obs)
    # The frame's text, character for character, is what pydantic writes for OpenEnv.
    frame = compat.WSObservationResponse(data=fast)
    assert frame.model_dump_json() == WSObservationResponse(data=fast).model_dump_json()


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 50),
    task=st.integers(0, 4),
    difficulty=st.integers(0, 3),
    script=st.lists(calls, max_size=25),
)
def test_a_step_is_sent_as_openenv_sends_it(seed, task, difficulty, script):
    compat.install()
    env = CompanyOSEnvironment()
    obs = env.reset(seed=seed, task_id=task, difficulty=difficulty, max_steps=20)
    same_as_openenv(obs)
    for call in script:
        if call is None:
            planned = plan(env.episode.world)
            call = planned.as_action() if planned is not None else {"app": "ticketdesk"}
        obs = env.step(call)
        same_as_openenv(obs)  # the episode's end and calls after it too


def test_a_batch_answer_is_the_validated_model_and_sent_as_openenv_sends_it():
    compat.install()
    env = CompanyOSEnvironment()
    started = env.reset_batch([{"seed": s, "task_id": s % 5} for s in range(6)])
    ids = [o.episode_id for o in started]
    batch = [{"episode_id": e, "app": "ticketdesk", "method": "list_tickets"} for e in ids]
    batch.append({"episode_id": "not-mine", "app": "ticketdesk", "method": "list_tickets"})
    obs = env.step(CompanyOSBatchAction(batch=batch))
    validated = CompanyOSBatchObservation.model_validate(obs.model_dump())
    assert type(obs) is CompanyOSBatchObservation
    assert obs == validated and obs.model_dump() == validated.model_dump()
    assert [r["observation"]["error"] for r in obs.results][-1] == "not_in_batch"
    same_as_openenv(obs)
    assert wire(obs)["observation"]["results"] == obs.results


def test_observations_that_are_not_json_ready_are_left_to_openenv():
    compat.install()
    env = CompanyOSEnvironment()
    obs = env.step(ListToolsAction())
    assert not getattr(obs, "json_ready", False)
    assert http_server.serialize_observation(obs) == compat._original_serialize(obs)


class Kind(enum.Enum):
    A = "a"


class Count(int):
    pass


@dataclasses.dataclass
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    "data",
    [
        {"when": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)},
        {"kind": Kind.A, "n": Count(3), "id": uuid.UUID(int=7)},
        {"point": Point(1, 2)},
        {"nested": {1: "a key that is no text"}},
        {"big": 2**70, "nan": float("nan"), "inf": float("-inf"), "f": 1e16, "g": 2.5e-7},
        {"text": "caf\u00e9 \u2603 \U0001f600", "nested": [(1, 2), {"a": [None, True]}]},
    ],
)
def test_a_frame_orjson_would_write_otherwise_is_written_by_pydantic(data):
    """Dates, dataclasses, str and int subclasses, keys that are no text, integers past 64
    bits: the frame is pydantic's own text whatever the values."""
    ours = compat.WSObservationResponse(data=data).model_dump_json()
    assert ours == WSObservationResponse(data=data).model_dump_json()
