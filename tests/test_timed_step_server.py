"""`bench/timed_step_server.py`, which `serve_throughput.py` reads the step's own CPU from:
it counts every step the server makes, over `/ws` and HTTP, and nothing else (resets, state)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from websockets.sync.client import connect

from tests.serving import ServerProcess

ROOT = Path(__file__).resolve().parents[1]


def test_it_counts_each_step_and_only_steps(tmp_path: Path) -> None:
    server = ServerProcess(f"sqlite:///{tmp_path / 'timed.db'}", log=tmp_path / "server.log")
    server.cmd[1:3] = [str(ROOT / "bench" / "timed_step_server.py")]
    url = server.start()
    try:
        assert httpx.get(url + "/bench/step-cpu").json() == {"steps": 0, "cpu_ns": 0}
        with connect(url.replace("http://", "ws://") + "/ws") as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 3, "task_id": 0}}))
            assert json.loads(ws.recv())["type"] == "observation"
            for _ in range(3):
                call = {"app": "ticketdesk", "method": "list_tickets", "params": {}}
                ws.send(json.dumps({"type": "step", "data": call}))
                assert json.loads(ws.recv())["type"] == "observation"
            ws.send(json.dumps({"type": "state"}))
            ws.recv()
        after_ws = httpx.get(url + "/bench/step-cpu").json()
        assert after_ws["steps"] == 3
        assert after_ws["cpu_ns"] > 0
        obs = httpx.post(url + "/reset", json={"seed": 4, "task_id": 0}).json()["observation"]
        action = {"app": "ticketdesk", "method": "list_tickets", "episode_id": obs["episode_id"]}
        assert httpx.post(url + "/step", json={"action": action}).status_code == 200
        after_http = httpx.get(url + "/bench/step-cpu").json()
        assert after_http["steps"] == 4
        assert after_http["cpu_ns"] > after_ws["cpu_ns"]
    finally:
        server.stop()
