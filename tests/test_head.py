"""``HEAD`` answers like ``GET`` without the body (load balancers probe ``HEAD /health``); a
route that has no GET still answers 405; with an API key, ``HEAD /health`` stays open."""

from __future__ import annotations

import socket

import httpx

from .serving import running_server


def _raw_head(port: int, path: str) -> bytes:
    """The whole answer to a HEAD, read until the server closes (no body may follow)."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(f"HEAD {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def test_head_answers_every_get_route_without_a_body(tmp_path):
    with running_server(f"sqlite:///{tmp_path / 'h.db'}", log=tmp_path / "s.log") as url:
        port = int(url.rsplit(":", 1)[1])
        with httpx.Client(base_url=url, timeout=30) as http:
            for path in ("/health", "/episodes", "/manifest", "/metadata", "/viewer/"):
                got, head = http.get(path), http.head(path)
                assert head.status_code == got.status_code == 200, path
                assert head.content == b""
                assert head.headers["content-type"] == got.headers["content-type"]
                raw = _raw_head(port, path)
                head_part, _, rest = raw.partition(b"\r\n\r\n")
                assert head_part.startswith(b"HTTP/1.1 200") and rest == b"", (path, raw[:300])
            assert http.head("/step").status_code == 405


def test_head_health_needs_no_key(tmp_path):
    with running_server(
        f"sqlite:///{tmp_path / 'h.db'}", "--api-key", "k" * 32, log=tmp_path / "s.log"
    ) as url:
        assert httpx.head(f"{url}/health").status_code == 200
        assert httpx.head(f"{url}/episodes").status_code == 401
