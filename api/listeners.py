"""A listening socket per worker process, so that the kernel spreads connections evenly.

uvicorn's ``--workers`` share one listening socket: whichever process wakes first accepts,
and a burst of connections (sessions opening at once) mostly lands on one worker while the
other idles (seen: 95% of 64 WebSocket sessions on one of two workers). Here `serve` binds the
shared socket with SO_REUSEPORT and never listens on it, and each worker listens on a socket
of its own bound to the same address: Linux hashes each new connection to one of the
listening sockets of the group. A socket that cannot join the group (an address bound without
SO_REUSEPORT, by someone running the factory under their own uvicorn) is used as it is.
"""

from __future__ import annotations

import socket
from typing import Any


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """The socket `serve` hands to uvicorn's workers: bound, not listening, joinable."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def own_listener(shared: socket.socket) -> socket.socket:
    """A socket of this process bound to ``shared``'s address in its SO_REUSEPORT group, or
    ``shared`` itself when it has no such group."""
    if shared.family not in (socket.AF_INET, socket.AF_INET6) or not shared.getsockopt(
        socket.SOL_SOCKET, socket.SO_REUSEPORT
    ):
        return shared
    own = socket.socket(shared.family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        own.bind(shared.getsockname()[:2])
    except OSError:
        own.close()
        return shared
    return own


def listen_on_own_sockets() -> None:
    """In a worker process: uvicorn's server listens on `own_listener` sockets instead of the
    sockets its supervisor passed (uvicorn has no option for it; patched once per process)."""
    from uvicorn.server import Server

    startup = Server.startup
    if getattr(startup, "own_listeners", False):
        return

    async def own_startup(self: Any, sockets: list[socket.socket] | None = None) -> None:
        if sockets:
            sockets = [own_listener(s) for s in sockets]
        await startup(self, sockets=sockets)

    own_startup.own_listeners = True  # type: ignore[attr-defined]
    Server.startup = own_startup  # type: ignore[method-assign]
