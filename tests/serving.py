"""Start real CompanyOS servers (uvicorn subprocesses on loopback) for tests and benchmarks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"server at {url} not healthy after {timeout}s")


@contextmanager
def running_server(
    store: str,
    *args: str,
    port: int | None = None,
    log: Path | None = None,
    module: str | None = None,
    extra_path: Path | None = None,
) -> Iterator[str]:
    """A server process; yields its base URL and stops it on exit. ``module`` runs another
    ASGI app (``pkg.mod:app``) under uvicorn instead of `companyos serve`."""
    port = port or free_port()
    if module is None:
        cmd = [
            sys.executable,
            "-m",
            "companyos",
            "serve",
            "--port",
            str(port),
            "--store",
            store,
            *args,
        ]
    else:
        cmd = [
            sys.executable,
            "-m",
            "uvicorn",
            module,
            "--port",
            str(port),
            "--log-level",
            "warning",
            *args,
        ]
        if extra_path is not None:
            cmd += ["--app-dir", str(extra_path)]
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(
        cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log:
            out.close()  # type: ignore[union-attr]
