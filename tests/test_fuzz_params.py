"""Hypothesis on what agents send: tool calls with any JSON at all (apps, methods, parameter
values of every type and shape, plausible calls and the oracle's to reach deep states), and
reset options of any JSON type.

In-process, `step` never raises and `reset` raises nothing but `ResetError` (a 400 with a
message). Over a running server the same actions get 200 (or 422 for a body that is not an
action at all), never a 5xx, and the stored log is the one an in-process run of the same calls
writes, byte for byte."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companyos.api import CompanyOSEnvironment, ResetError
from companyos.api.environment import RESET_OPTIONS
from companyos.api.models import CompanyOSBatchObservation
from companyos.domain import plan
from companyos.domain.inputs import hostile
from companyos.events import InMemoryEventStore

from . import ledger
from .helpers import served_chain, solo_chain
from .serving import ServerProcess
from .strategies import ORACLE, action, wild_value

pytestmark = pytest.mark.reliability


any_call = st.fixed_dictionaries(
    {
        "app": st.one_of(st.sampled_from(["ticketdesk", "datahub", "approvalflow"]), wild_value),
        "method": st.one_of(
            st.sampled_from(["get_ticket", "update_ticket", "query_metric", "submit_approval"]),
            wild_value,
        ),
        "params": wild_value,
    }
)
wire_action = st.one_of(action, any_call)
reset_options = st.dictionaries(
    st.sampled_from((*RESET_OPTIONS, "self", "kwargs", "timeout_s", "options")),
    wild_value,
    max_size=5,
)
"""Every option with values of any JSON type (hostile ones included: lone surrogates, NUL, NaN,
infinities, integers beyond 64 bits), and keys that are no option (``self`` once bound to the
method's own parameter: a TypeError, a 500 over HTTP)."""


def strict_json(text: str) -> Any:
    """An answer as strict JSON (no NaN or Infinity literal) holding no hostile value."""

    def refuse(literal: str) -> Any:
        raise AssertionError(f"non-standard JSON literal {literal} in an answer")

    value = json.loads(text, parse_constant=refuse)
    assert hostile(value) is None, text[:300]
    return value


IN_PROCESS = "fuzz: hypothesis on tool parameters and reset options (in-process)"
OVER_HTTP = "fuzz: hypothesis on tool parameters over HTTP"


@settings(max_examples=ledger.scaled(200, 1000), suppress_health_check=list(HealthCheck))
@given(options=reset_options, fork=st.booleans())
def test_reset_refuses_any_bad_option_with_a_reset_error(options, fork):
    store = InMemoryEventStore()
    env = CompanyOSEnvironment(store)
    env.reset(seed=1, task_id=0, episode_id="source")
    env.step({"app": "ticketdesk", "method": "list_tickets"})
    if fork:
        options = {**options, "fork_from": "source"}
    ledger.record(IN_PROCESS, fuzz_cases=1)
    before = {s.stream_id: s.version for s in store.streams()}
    try:
        obs = env.reset(**options)
    except ResetError as exc:
        assert str(exc)
        # A refused reset writes nothing (the session's episode stays as it was).
        assert {s.stream_id: s.version for s in store.streams()} == before
        return
    if isinstance(obs, CompanyOSBatchObservation):  # a batch reset: every episode stored
        assert obs.results
        for r in obs.results:
            assert store.version(r["observation"]["episode_id"]) >= 0
        return
    assert obs.episode_id and store.version(obs.episode_id) >= 0


@settings(max_examples=ledger.scaled(150, 600), suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32), actions=st.lists(wire_action, min_size=1, max_size=12))
def test_step_takes_any_json_without_raising(seed, actions):
    env = CompanyOSEnvironment()
    env.reset(seed=seed, task_id=seed % 5, difficulty=seed % 4)
    for a in actions:
        ledger.record(IN_PROCESS, fuzz_cases=1)
        ep = env.episode
        assert ep is not None
        if a == ORACLE:
            call = plan(ep.world)
            a = call.as_action() if call else {"app": "ticketdesk", "method": "list_tickets"}
        version = ep.version
        obs = env.step(a)
        assert obs.message
        if obs.error != "episode_ended":
            assert env.store.version(ep.id) > version  # every call is in the log
        if obs.done:
            break


@pytest.fixture(scope="module")
def server(tmp_path_factory: Any) -> Iterator[str]:
    where = tmp_path_factory.mktemp("fuzz-params")
    proc = ServerProcess(f"sqlite:///{where / 'fuzz.db'}", log=where / "server.log")
    proc.start()
    try:
        yield proc.url
    finally:
        proc.stop()
        log = (where / "server.log").read_text()
        assert "Traceback" not in log, log[-3000:]


@settings(
    max_examples=ledger.scaled(40, 200),
    suppress_health_check=list(HealthCheck),
    deadline=None,
)
@given(seed=st.integers(0, 2**32), actions=st.lists(wire_action, min_size=1, max_size=8))
def test_any_action_over_http_is_answered_and_logged_as_in_process(server, seed, actions):
    task, difficulty = seed % 5, seed % 4
    with httpx.Client(base_url=server, timeout=60) as http:
        r = http.post("/reset", json={"seed": seed, "task_id": task, "difficulty": difficulty})
        assert r.status_code == 200, r.text
        eid = r.json()["observation"]["episode_id"]
        sent: list[dict[str, Any]] = []
        local = CompanyOSEnvironment()
        local.reset(seed=seed, task_id=task, difficulty=difficulty)
        for a in actions:
            if a == ORACLE:
                assert local.episode is not None
                call = plan(local.episode.world)
                a = call.as_action() if call else {"app": "ticketdesk", "method": "list_tickets"}
            # json.dumps, not httpx's encoder: NaN and infinities go on the wire as the
            # non-standard literals Python clients send, and must be refused like any junk.
            body = json.dumps({"action": {**a, "episode_id": eid}})
            r = http.post("/step", content=body, headers={"content-type": "application/json"})
            ledger.record(OVER_HTTP, fuzz_cases=1, http_5xx=int(r.status_code >= 500))
            assert r.status_code in (200, 422), r.text
            answer = strict_json(r.text)  # nothing echoed that JSON cannot carry
            if r.status_code == 422:
                # Only a body that is no action at all (app or method not a string), or one
                # whose app or method no store could keep (the boundary refuses it).
                assert not (isinstance(a["app"], str) and isinstance(a["method"], str)) or (
                    hostile([a["app"], a["method"]]) is not None
                ), r.text
                continue
            assert hostile([a["app"], a["method"]]) is None, r.text
            sent.append(a)
            local.step(a)
            if answer["done"]:
                break
        assert served_chain(http, eid) == solo_chain(seed, task, difficulty, sent)
