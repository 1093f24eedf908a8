"""Start real CompanyOS servers (uvicorn subprocesses on loopback) for tests and benchmarks."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
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


def listening(port: int) -> list[str]:
    """The sockets (by inode) that listen on ``port``, from the kernel's tables."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                row = line.split()
                if row[3] == "0A" and int(row[1].rsplit(":", 1)[1], 16) == port:
                    found.append(row[9])
    return found


def wait_listening(port: int, sockets: int, timeout: float = 120.0) -> None:
    """Wait until ``sockets`` sockets listen on ``port`` (`companyos serve --workers N` has one
    per worker, and answers /health as soon as the first is up: a load started then would all
    land on that one)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(listening(port)) >= sockets:
            return
        time.sleep(0.1)
    raise TimeoutError(f"fewer than {sockets} sockets listen on port {port} after {timeout}s")


def rss_kib(pid: int) -> int:
    """Resident memory of a process (``VmRSS`` in /proc/<pid>/status), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise LookupError(f"no VmRSS for process {pid}")


_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int | str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds: user + system, all threads) of a process, or None if it is
    gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK


def process_cpu(pid: int) -> Callable[[], float]:
    """A reader of the CPU seconds (user + system, all threads) the process ``pid`` has used.
    The clock ticks in 1/CLK_TCK s (10 ms): summed over thousands of steps, the error of each
    reading is a tick at most, a few percent of a round."""

    def read() -> float:
        stat = _stat(pid)
        if stat is None:
            raise ProcessLookupError(f"process {pid} is gone: its CPU can no longer be read")
        return stat[1]

    return read


def tree_cpu(pid: int) -> Callable[[], float]:
    """`process_cpu` of ``pid`` and every live process below it (``--workers N`` serves from
    child processes, whose CPU the parent's counters leave out while they run)."""

    def read() -> float:
        stats = {int(p): s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(p))}
        below: dict[int, list[int]] = {}
        for child, (parent, _) in stats.items():
            below.setdefault(parent, []).append(child)
        total, todo = 0.0, [pid]
        while todo:
            p = todo.pop()
            if p in stats:
                total += stats[p][1]
            todo += below.get(p, [])
        return total

    return read


class ServerProcess:
    """One `companyos serve` that can be killed (SIGKILL) and started again on the same store
    and port: the fault injector of the crash tests."""

    def __init__(
        self,
        store: str,
        *args: str,
        port: int | None = None,
        log: Path | None = None,
        env: dict[str, str] | None = None,
        module: str | None = None,
        extra_path: Path | None = None,
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        if module is None:
            self.cmd = [
                sys.executable,
                "-m",
                "companyos",
                "serve",
                "--port",
                str(self.port),
                "--store",
                store,
                *args,
            ]
        else:
            self.cmd = [
                sys.executable,
                "-m",
                "uvicorn",
                module,
                "--port",
                str(self.port),
                "--log-level",
                "warning",
                *args,
            ]
            if extra_path is not None:
                self.cmd += ["--app-dir", str(extra_path)]
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 60.0) -> str:
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                self.cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env
            )
        finally:
            if self.log:
                out.close()  # type: ignore[union-attr]
        try:
            wait_healthy(self.url, self.proc, timeout)
        except BaseException:
            self.stop()  # never leave a server behind that nobody will stop
            raise
        return self.url

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs, nothing is flushed."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.kills += 1

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def rss_kib(self) -> int:
        return rss_kib(self.pid)


@contextmanager
def running_server(
    store: str,
    *args: str,
    port: int | None = None,
    log: Path | None = None,
    module: str | None = None,
    extra_path: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """A server process; yields its base URL and stops it on exit. ``module`` runs another
    ASGI app (``pkg.mod:app``) under uvicorn instead of `companyos serve`; ``env`` adds
    environment variables (``COMPANYOS_*`` settings)."""
    server = ServerProcess(
        store, *args, port=port, log=log, env=env, module=module, extra_path=extra_path
    )
    try:
        yield server.start()
    finally:
        server.stop()
