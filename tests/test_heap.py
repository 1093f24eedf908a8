"""The server's garbage-collection policy (`api.heap`) is what a serving process runs with.

Each check runs in a fresh interpreter: the policy freezes the heap of the process it is
applied in, which this test process must not be."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from companyos.api import heap
from companyos.api.server import WORKER_SETTINGS

PROBE = """
import gc, json
{setup}
print(json.dumps({{"thresholds": gc.get_threshold(), "frozen": gc.get_freeze_count()}}))
"""


def probe(setup: str, env: dict[str, str] | None = None) -> dict[str, object]:
    code = PROBE.format(setup=textwrap.dedent(setup))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout.splitlines()[-1])


def test_the_policy_differs_from_cpython_s_defaults_only_in_the_old_generation() -> None:
    fresh = probe("")
    assert fresh["frozen"] == 0
    young, middle, old = fresh["thresholds"]
    assert list(heap.THRESHOLDS) == [young, middle, heap.THRESHOLDS[2]]
    assert heap.THRESHOLDS[2] > old


def test_serve_freezes_the_built_app_and_applies_the_thresholds() -> None:
    got = probe(
        """
        import uvicorn
        uvicorn.run = lambda *a, **k: None  # everything serve does but serving
        from companyos.api.server import serve
        from companyos.api.settings import Settings
        serve(Settings(store="memory://"))
        """
    )
    assert got["thresholds"] == list(heap.THRESHOLDS)
    assert got["frozen"] > 10_000  # the app, its modules and schemas


def test_each_worker_process_applies_the_policy_too(tmp_path) -> None:
    import dataclasses
    import os

    from companyos.api.settings import Settings

    settings = dataclasses.asdict(Settings(store=f"sqlite:///{tmp_path / 'w.db'}"))
    env = {**os.environ, WORKER_SETTINGS: json.dumps(settings)}
    got = probe(
        """
        import companyos.api.server as server
        server.listen_on_own_sockets = lambda: None  # no sockets handed over here
        server.app_from_environment()
        """,
        env,
    )
    assert got["thresholds"] == list(heap.THRESHOLDS)
    assert got["frozen"] > 10_000


def test_a_training_process_applies_the_policy_as_the_readme_says() -> None:
    """The README's call for a loop that hosts the environment itself: the policy, and an
    environment that still plays; the collector of a process that does not ask is left alone."""
    asked = probe(
        """
        import sys
        import companyos.api.heap
        assert "openenv" not in sys.modules  # the call costs no server stack
        from companyos import CompanyOSEnvironment
        env = CompanyOSEnvironment()
        companyos.api.heap.settle()
        env.reset(seed=7, task_id="vendor_onboarding")
        assert env.step({"app": "ticketdesk", "method": "list_tickets"}).error is None
        """
    )
    assert asked["thresholds"] == list(heap.THRESHOLDS)
    assert asked["frozen"] > 1_000
    left_alone = probe(
        """
        from companyos import CompanyOSEnvironment
        CompanyOSEnvironment().reset(seed=7)
        """
    )
    assert left_alone["frozen"] == 0
    assert left_alone["thresholds"] != list(heap.THRESHOLDS)
