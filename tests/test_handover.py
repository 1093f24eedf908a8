"""A `/ws` frame is read once: `FrameGuard` hands the value it read to OpenEnv's handler
(`api.handover`), which then gives the same answers as when it read the frame itself."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from openenv.core.env_server import http_server

from companyos.api import handover
from companyos.api.server import build_app
from companyos.api.settings import Settings


def receive(ws: Any) -> Any:
    return orjson.loads(ws.receive_text())  # not the json module: its calls are counted


@pytest.fixture
def loads_calls(monkeypatch) -> list[Any]:
    """Every text the json module was asked to read (by the guard or by the handler)."""
    calls: list[Any] = []
    real = json.loads

    def counted(s: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(s)
        return real(s, *args, **kwargs)

    monkeypatch.setattr(handover._json, "loads", counted)
    return calls


def test_a_value_is_taken_once_and_only_for_the_very_text():
    text = json.dumps({"type": "step", "data": {"app": "x"}})
    value = {"type": "step", "data": {"app": "x"}}
    handover.put(text, value)
    equal_copy = "".join(list(text))
    assert equal_copy == text and equal_copy is not text
    assert handover.take(equal_copy) == value  # read again: another object
    assert handover.take(equal_copy) is not value
    assert handover.take(text) is value
    assert handover.take(text) == value and handover.take(text) is not value  # once


def test_values_nobody_takes_are_dropped_when_the_table_fills():
    texts = [json.dumps({"n": i}) for i in range(handover.KEPT * 3)]
    for t in texts:
        handover.put(t, {"n": -1})
    assert len(handover._frames) <= handover.KEPT
    assert handover.take(texts[-1]) == {"n": -1}
    assert handover.take(texts[0]) == {"n": 0}  # dropped: read as the json module reads it


def test_the_handler_reads_no_frame_again_and_answers_as_before(loads_calls):
    app = build_app(Settings(store="memory://"))
    assert isinstance(http_server.json, handover.HandedOverJSON)
    with TestClient(app) as client, client.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": {"seed": 3, "task_id": 0}}))
        first = receive(ws)
        assert first["type"] == "observation"
        frame = {"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": "T-001"}}
        ws.send_text(json.dumps({"type": "step", "data": frame}))
        answer = receive(ws)
        assert answer["type"] == "observation", answer
        assert answer["data"]["observation"]["step"] == 1
        assert loads_calls == []  # the guard read both frames with orjson, the handler took them

        # A frame orjson does not read as the json module does (NaN) is read by the guard's
        # json module and handed over too: one reading, not two.
        ws.send_text('{"type": "step", "data": {"app": "ticketdesk", "method": "get_ticket", '
                     '"params": {"ticket_id": NaN}}}')  # fmt: skip
        refused = receive(ws)
        assert len(loads_calls) == 1
        assert refused["type"] in {"observation", "error"}

        # Malformed JSON is still the handler's to answer, in its own words.
        ws.send_text('{"type": "step", "data": ')
        error = receive(ws)
        assert error["type"] == "error" and error["data"]["code"] == "INVALID_JSON"
        assert len(loads_calls) == 3  # the guard tried, the handler tried again

        ws.send_text(json.dumps({"type": "state"}))
        assert receive(ws)["type"] == "state"
    assert not handover._frames or all(t is not None for t, _ in handover._frames.values())
