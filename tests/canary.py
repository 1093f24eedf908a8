"""A canary session: one `/ws` session stepping its own episodes in a thread while something
hostile (a fuzzer, a flood) hits the same server. Every reply must be the observation of its next
step; anything else is recorded as a problem. A healthy server leaves the canary untouched."""

from __future__ import annotations

import json
import threading

import websockets.sync.client as ws_client

BUDGET = 1000


class Canary(threading.Thread):
    def __init__(self, url: str, seed: int = 5) -> None:
        super().__init__(daemon=True)
        self.url = url.replace("http://", "ws://") + "/ws"
        self.seed = seed
        self.stop = threading.Event()
        self.steps = 0
        self.problems: list[str] = []

    def run(self) -> None:
        call = json.dumps({"type": "step", "data": {"app": "datahub", "method": "list_metrics"}})
        with ws_client.connect(self.url) as ws:
            while not self.stop.is_set():
                options = {"seed": self.seed, "max_steps": BUDGET}
                ws.send(json.dumps({"type": "reset", "data": options}))
                if json.loads(ws.recv(timeout=60))["type"] != "observation":
                    self.problems.append("reset refused")
                    return
                for step in range(1, BUDGET):
                    if self.stop.wait(0.02):
                        return
                    ws.send(call)
                    reply = json.loads(ws.recv(timeout=60))
                    if reply.get("data", {}).get("observation", {}).get("step") != step:
                        self.problems.append(str(reply)[:300])
                        return
                    self.steps += 1
