"""What survives a crash (SIGKILL) of a process writing episodes to SQLite: every acknowledged
step with per-step commits; with group commit, a prefix of whole steps (at most one group
lost); never a torn step, never a broken chain."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from companyos.events import first_broken_link
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.events.types import StepScored, ToolCalled

WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from companyos.api import CompanyOSEnvironment
    from companyos.domain import plan
    from companyos.events.sql import SQLEventStore, sqlite_url

    path, group, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = SQLEventStore(sqlite_url(path), group_commit=group, group_delay=3600)
    env = CompanyOSEnvironment(store)
    obs = env.reset(seed=1, task_id="vendor_onboarding", difficulty=3, episode_id="crash",
                    max_steps=1000)
    store.flush()
    for i in range(steps):
        env.step({"app": "ticketdesk", "method": "get_ticket", "params": {"ticket_id": "TKT-1042"}})
        print(i + 1, flush=True)  # acknowledged to the caller
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.parametrize(("group", "steps"), [(1, 40), (16, 40), (16, 47)])
def test_sigkill_keeps_whole_steps(tmp_path, group, steps):
    path = tmp_path / "crash.db"
    done = subprocess.run(
        [sys.executable, "-c", WRITER, str(path), str(group), str(steps)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -9
    acknowledged = int(done.stdout.split()[-1])
    store = SQLEventStore(sqlite_url(path))
    records = store.read("crash")
    assert first_broken_link(records) is None
    calls = [r for r in records if isinstance(r.event, ToolCalled)]
    scored = [r for r in records if isinstance(r.event, StepScored)]
    assert len(calls) == len(scored)  # no torn step
    assert records[-1].event.type in ("StepScored", "TaskAssigned", "ChaosInjected")
    kept = len(calls)
    if group == 1:
        assert kept == acknowledged
    else:
        assert acknowledged - group < kept <= acknowledged
        assert kept % group == 0
    assert store.version("crash") == records[-1].seq
    store.close()
