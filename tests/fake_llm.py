"""A small local OpenAI-compatible chat completions endpoint that answers from a script.

Each scripted reply answers one HTTP request (a retry takes the next one); when the script
runs out it answers with a harmless call. Every request body is kept, so tests can check what
the agent sent (the tools, the conversation).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

HARMLESS = ("tool", "approvalflow_list_approvals", "{}")


def tool(name: str, arguments: Any = None) -> tuple[str, ...]:
    """A reply calling ``name``; ``arguments`` a dict (sent as JSON) or the raw string."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ("tool", name, raw)


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def tool_message(*calls: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{i}_{name}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for i, (name, arguments) in enumerate(calls)
        ],
    }


@dataclass
class Script:
    replies: list[tuple[Any, ...]]
    delay: float = 0.0
    """Seconds every reply takes (a model thinking)."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, request: dict[str, Any]) -> tuple[Any, ...]:
        with self.lock:
            self.requests.append(request)
            reply = self.replies.pop(0) if self.replies else HARMLESS
        time.sleep(self.delay)
        return reply


def respond(reply: tuple[Any, ...]) -> tuple[int, str, bytes]:
    """(status, content type, body) of a scripted reply."""
    kind = reply[0]
    if kind == "tool":
        body = completion(tool_message((reply[1], reply[2])))
    elif kind == "tools":  # several calls in one reply
        body = completion(tool_message(*reply[1]))
    elif kind == "text":
        body = completion({"role": "assistant", "content": reply[1]})
    elif kind == "empty":
        body = {**completion({"role": "assistant", "content": ""}), "choices": []}
    elif kind == "status":  # ("status", code) or ("status", code, message)
        message = reply[2] if len(reply) > 2 else "scripted failure"
        error = {"error": {"message": message, "type": "server_error"}}
        return reply[1], "application/json", json.dumps(error).encode()
    elif kind == "garbage":
        return 200, "text/html", b"<html>a proxy's error page</html>"
    elif kind == "sleep":  # slower than the client's timeout, then a harmless reply
        time.sleep(reply[1])
        return respond(HARMLESS)
    else:
        raise ValueError(f"unknown scripted reply {reply!r}")
    return 200, "application/json", json.dumps(body).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    script: Script

    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        self._send(200, "application/json", body.encode())

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        request = json.loads(self.rfile.read(length) or b"{}")
        status, kind, body = respond(self.script.next(request))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client that left
            self._send(status, kind, body)

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def fake_endpoint(
    replies: list[tuple[Any, ...]], delay: float = 0.0
) -> Iterator[tuple[str, Script]]:
    """Serve ``replies`` on a free loopback port, each after ``delay`` seconds; yields (base
    URL ending in /v1, script)."""
    script = Script(list(replies), delay)
    handler = type("ScriptedHandler", (Handler,), {"script": script})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    finally:
        server.shutdown()
        server.server_close()
