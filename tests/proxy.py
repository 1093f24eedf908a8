"""A tiny round-robin TCP load balancer: several servers behind one address, each new
connection going to the next one. It stands in for nginx, HAProxy or a Kubernetes Service in
the multi-replica tests; a client that opens a connection per request (no keep-alive) has its
requests spread over every replica in turn, and a WebSocket stays with the replica it reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Sequence
from urllib.parse import urlsplit


class RoundRobinProxy:
    def __init__(self, backends: Sequence[str]) -> None:
        self.backends = [(urlsplit(u).hostname or "127.0.0.1", urlsplit(u).port) for u in backends]
        self.connections = [0] * len(backends)
        self._next = itertools.cycle(range(len(backends)))
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="round-robin-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self.url = ""

    def __enter__(self) -> RoundRobinProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self._ready.set()
        self._loop.run_forever()
        self._server.close()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        i = next(self._next)
        self.connections[i] += 1
        host, port = self.backends[i]
        try:
            server_r, server_w = await asyncio.open_connection(host, port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_pipe(client_r, server_w), _pipe(server_r, client_w))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            writer.close()
