"""A deadline on reading each HTTP request, headers and body, so that slow clients cannot hold
the server's sockets.

uvicorn's h11 protocol times out only an idle keep-alive connection, and only once a response
has been sent: a client that connects and sends nothing, sends its headers a byte at a time, or
trickles its body (a "slowloris") holds its socket, and a task, for as long as it likes, and a
few hundred such clients exhaust the server's file descriptors. Here every request must arrive
whole within ``request_timeout`` seconds of its first byte (of the connection, for the first
one); otherwise the server answers 408, if it has not started answering, and closes the
connection. A request that has arrived is not timed (computing its answer may take as long as
it takes), nor is a WebSocket after its upgrade (`IdleSockets` times those out).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

DEFAULT_REQUEST_TIMEOUT = 15.0
_TOO_SLOW = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: application/json\r\n"
    b"connection: close\r\n"
    b"content-length: %d\r\n\r\n%s"
)


def no_delay(transport: asyncio.BaseTransport) -> None:
    """Send small writes at once (TCP_NODELAY). asyncio sets it only on sockets created with
    protocol IPPROTO_TCP; the listening socket uvicorn shares with ``--workers`` processes is
    created with protocol 0, so their connections kept Nagle's algorithm: an answer written in
    two parts (headers, then body) waited for the client's delayed ACK, about 40 ms a step."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline per request (pass it as ``uvicorn.run(http=
    functools.partial(DeadlineH11Protocol, request_timeout=...))``)."""

    def __init__(self, *args: Any, request_timeout: float = DEFAULT_REQUEST_TIMEOUT, **kw: Any):
        super().__init__(*args, **kw)
        self.request_timeout = request_timeout
        self._deadline: asyncio.TimerHandle | None = None
        self.timed_out = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        no_delay(transport)
        super().connection_made(transport)
        self._arm()  # a client that connects and sends nothing is timed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.get_protocol() is not self:  # upgraded to a WebSocket
            self._disarm()
        elif self._receiving():
            if self._deadline is None:  # the first bytes of the next request
                self._arm()
        else:
            self._disarm()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._disarm()
        super().handle_websocket_upgrade(event)

    def _receiving(self) -> bool:
        """A request has begun and has not arrived whole."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            return True
        return state is h11.IDLE and bool(self.conn.trailing_data[0])

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return
        silent = self.conn.their_state is h11.IDLE and self.cycle is None  # sent nothing yet
        if not (silent or self._receiving()):
            return  # the request arrived: its answer may take its time
        self.timed_out += 1
        if self.cycle is None or not self.cycle.response_started:
            body = (
                b'{"detail": "the request did not arrive within %d s: send the headers and '
                b'the body at once"}' % int(self.request_timeout)
            )
            self.transport.write(_TOO_SLOW % (len(body), body))
        if self.cycle is not None:
            self.cycle.keep_alive = False
        self.transport.close()
