"""Connections of ``companyos serve --workers N`` send small writes at once (TCP_NODELAY).

uvicorn shares one listening socket between worker processes, created with protocol 0;
asyncio sets TCP_NODELAY only on sockets whose protocol is IPPROTO_TCP, so those connections
kept Nagle's algorithm and each answer written in two parts waited for the client's delayed
ACK (about 40 ms a step: stateful HTTP with two workers ran at a quarter of one worker's
rate). Checked here on the very protocol the server runs, over such a socket."""

from __future__ import annotations

import asyncio
import functools
import socket

from uvicorn.config import Config
from uvicorn.server import ServerState

from companyos.api.slowclients import DeadlineH11Protocol


async def _accepted_nodelay(protocol_factory) -> int:
    """TCP_NODELAY of a connection accepted on a protocol-0 listening socket, as the server
    side sees it once its protocol has taken the connection."""
    seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def factory():
        proto = protocol_factory()
        made = proto.connection_made

        def connection_made(transport):
            made(transport)
            sock = transport.get_extra_info("socket")
            seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        proto.connection_made = connection_made
        return proto

    listening = socket.socket(family=socket.AF_INET)  # protocol 0, as uvicorn binds it
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    assert listening.proto == 0
    server = await asyncio.get_running_loop().create_server(factory, sock=listening)
    try:
        _, writer = await asyncio.open_connection(*listening.getsockname())
        try:
            return await asyncio.wait_for(seen, 10)
        finally:
            writer.close()
    finally:
        server.close()


def test_the_servers_protocol_sets_nodelay_on_a_shared_sockets_connections():
    async def app(scope, receive, send):  # never called: no request is sent
        raise AssertionError

    config = Config(app=app, lifespan="off")
    server = functools.partial(
        DeadlineH11Protocol, config=config, server_state=ServerState(), app_state={}
    )
    assert asyncio.run(_accepted_nodelay(server)) != 0
    # The check can fail: asyncio's own protocol on such a socket leaves Nagle on.
    assert asyncio.run(_accepted_nodelay(_Plain)) == 0


class _Plain(asyncio.Protocol):
    """asyncio's protocol (a subclass: the probe wraps its connection_made)."""
