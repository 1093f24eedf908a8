"""The original CompanyOS's clients, unchanged but for the base URL, against a real
`companyos serve`: the `requests` examples of its README, the checks of its tests/test_env.py
that an HTTP client can make, its random baseline's loop, its README's vendor-onboarding
trace over 60 seeds, its notebook's scripted expert on the curriculum mount, and the
compatibility surface's own promises (one episode per client, recorded in the store)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
import requests

from companyos.agents.original import NotebookExpert, ReadmeTrace, random_baseline
from companyos.domain.original import TASK_IDS

from .serving import ServerProcess

INFO_KEYS = {"step", "progress", "total_reward", "success", "timeout", "shortcut_attempts"}
OBS_KEYS = {"task", "step", "max_steps", "steps_remaining", "last_result", "message", "tools"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    db = tmp_path_factory.mktemp("original") / "store.db"
    proc = ServerProcess(f"sqlite:///{db}")
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def env_url(server: ServerProcess) -> str:
    """What the original's clients call ENV_URL: the one thing changed."""
    return f"{server.url}/original"


def step(url: str, app: str, method: str, params: dict | None = None) -> dict:
    r = requests.post(f"{url}/step", json={"app": app, "method": method, "params": params or {}})
    r.raise_for_status()
    return r.json()


# ------------------------------------------------------------------ its README's requests


def test_readme_quick_example(env_url):
    ENV_URL = env_url
    obs = requests.post(f"{ENV_URL}/reset", json={"task_id": "task_vendor_onboarding"}).json()
    assert obs["observation"]["task"].startswith("Complete vendor onboarding for ACME Corp")
    result = requests.post(
        f"{ENV_URL}/step", json={"app": "ticketdesk", "method": "list_tickets", "params": {}}
    ).json()
    assert result["reward"] == -0.1 and result["done"] is False
    ids = [t["id"] for t in result["observation"]["last_result"]["tickets"]]
    assert ids == ["T-001", "T-002", "T-003", "T-004", "T-005"]


def test_readme_benchmark_in_five_lines(env_url):
    ENV = env_url
    obs = requests.post(f"{ENV}/reset").json()  # no body at all
    assert obs["observation"]["step"] == 0
    result = requests.post(
        f"{ENV}/step", json={"app": "ticketdesk", "method": "list_tickets", "params": {}}
    ).json()
    assert isinstance(result["reward"], float) and result["done"] is False


def test_notebook_reachability_cell(env_url):
    health = requests.get(f"{env_url}/health", timeout=30).json()
    assert health["status"] == "ok"
    assert requests.head(f"{env_url}/health").status_code == 200
    obs = requests.post(f"{env_url}/curriculum/reset", json={}, timeout=30).json()
    assert list(obs["observation"]["tools"]) == ["ticketdesk", "datahub", "approvalflow"]
    assert obs["observation"]["progress"] and not any(obs["observation"]["progress"].values())


# ------------------------------------------------------------------ its tests/test_env.py over HTTP


def test_reset_returns_an_observation_without_the_graders_flags(env_url):
    obs = requests.post(f"{env_url}/reset", json={"task_id": "task_vendor_onboarding"}).json()
    o = obs["observation"]
    assert set(o) == OBS_KEYS and o["step"] == 0 and o["task"]
    assert "progress" not in o  # the agent's view: the flags go to info (and the curriculum)
    assert o["tools"]["ticketdesk"][3] == "update_ticket(ticket_id, field, value)"


def test_step_shape_counter_and_penalty(env_url):
    requests.post(f"{env_url}/reset", json={"task_id": "task_vendor_onboarding", "seed": 42})
    out = step(env_url, "ticketdesk", "list_tickets")
    assert isinstance(out["observation"], dict) and isinstance(out["reward"], float)
    assert isinstance(out["done"], bool) and set(out["info"]) == INFO_KEYS
    bad = step(env_url, "fakapp", "fakemethod")
    assert bad["reward"] < 0 and bad["observation"]["last_result"]["error"]
    assert bad["info"]["step"] == 2
    good = step(env_url, "ticketdesk", "update_ticket",
                {"ticket_id": "T-001", "field": "priority", "value": "high"})  # fmt: skip
    assert good["reward"] > 0 or "error" in good["observation"]["last_result"]


def test_timeout_ends_the_episode(env_url):
    requests.post(f"{env_url}/reset", json={"task_id": "task_license_renewal"})
    out: dict = {}
    for _ in range(16):
        out = step(env_url, "ticketdesk", "list_tickets")
    assert out["done"] is True and out["info"]["timeout"] is True and out["reward"] < -5
    after = step(env_url, "ticketdesk", "list_tickets")
    assert after["done"] is True and after["reward"] == 0.0


def test_render_and_manifest(env_url):
    requests.post(f"{env_url}/reset", json={"task_id": "task_bug_escalation"})
    snap = requests.get(f"{env_url}/render").json()
    assert {"task", "ticketdesk_state", "datahub_state", "approvalflow_state"} <= set(snap)
    assert snap["ticketdesk_state"] == {"open": 4, "blocked": 1, "verified": 0}
    manifest = requests.get(f"{env_url}/manifest").json()
    assert set(manifest) == {"tools", "action_format"}
    assert "submit_approval(approval_type, approver, data)" in manifest["tools"]["approvalflow"]


def test_all_five_tasks_are_resettable_and_others_refused(env_url):
    for tid in TASK_IDS:
        obs = requests.post(f"{env_url}/reset", json={"task_id": tid}).json()["observation"]
        assert obs["step"] == 0 and obs["task"]
    r = requests.post(f"{env_url}/reset", json={"task_id": "task_coffee_run"})
    assert r.status_code == 400 and "task_vendor_onboarding" in r.json()["detail"]


def full_trace(url: str, seed: int) -> dict:
    requests.post(f"{url}/reset", json={"task_id": "task_vendor_onboarding", "seed": seed})
    trace, out, last = ReadmeTrace(), {"done": False}, None
    while not out["done"]:
        out = requests.post(f"{url}/step", json=trace.act(last)).json()
        last = out["observation"]["last_result"]
    return out


def test_the_readme_trace_succeeds_over_60_seeds(env_url):
    """The original README's vendor-onboarding trace on its fixed world at its chaos level:
    every seed succeeds within the 20-step budget, ending on the +15 bonus."""
    ends = [full_trace(env_url, seed) for seed in range(60)]
    assert all(e["info"]["success"] for e in ends)
    assert all(e["reward"] > 10.0 for e in ends)
    assert max(e["info"]["step"] for e in ends) <= 20


# ------------------------------------------------------------------ its random baseline


def test_random_baseline_loop_terminates_and_adds_up(env_url, server):
    *_, (_, run) = random_baseline(env_url, 30, random.Random(5))
    assert len(run.rewards) == 30
    for total, info_total, steps in zip(run.rewards, run.info_totals, run.steps, strict=True):
        assert total == pytest.approx(info_total, abs=1e-6) and 1 <= steps <= 20
    listed = requests.get(
        f"{server.url}/episodes", params={"agent": "original:default", "limit": 200}
    ).json()["episodes"]
    assert len(listed) >= 30 and {e["scenario"] for e in listed} <= set(TASK_IDS)


# ------------------------------------------------------------------ its notebook's expert


def test_notebook_expert_on_the_curriculum_mount(env_url):
    """The expert succeeds unless chance beats it: it never escalates a rejection, and a
    status check that fails leaves it without the id it polls."""
    url = f"{env_url}/curriculum"
    wins = 0
    for tid in TASK_IDS:
        for seed in range(6):
            obs = requests.post(f"{url}/reset", json={"task_id": tid, "seed": seed}).json()
            o, out, seen = obs["observation"], {"done": False}, []
            while not out["done"]:
                out = requests.post(f"{url}/step", json=NotebookExpert.act(o)).json()
                o = out["observation"]
                seen.append(o["last_result"])
            if out["info"]["success"]:
                wins += 1
                continue
            rejected = any(r.get("status") == "rejected" for r in seen)
            submitted = next(
                (i for i, r in enumerate(seen) if r.get("success") and "approval_id" in r), None
            )
            faulted_after_submit = submitted is not None and any(
                "error" in r for r in seen[submitted:]
            )
            assert rejected or faulted_after_submit, (tid, seed)
    # About 60%: 61% over 300 episodes here, 64% for the same expert in the original's own
    # code (its rejections are 20% too, and it never escalates).
    assert wins >= 12  # of 30


# ------------------------------------------------------------------ the surface's own promises


def test_each_client_has_its_own_episode(server):
    a, b = f"{server.url}/original/c/alice", f"{server.url}/original/c/bob"
    requests.post(f"{a}/reset", json={"task_id": "task_expense_report", "seed": 1})
    r = requests.post(f"{b}/step", json={"app": "ticketdesk", "method": "list_tickets"})
    assert r.status_code == 409 and "reset" in r.json()["detail"]
    requests.post(f"{b}/reset", json={"task_id": "task_handbook_update", "seed": 1})
    assert step(a, "ticketdesk", "list_tickets")["observation"]["task"].startswith("Process exp")
    assert step(b, "ticketdesk", "list_tickets")["observation"]["task"].startswith("Process the")
    assert step(a, "ticketdesk", "list_tickets")["info"]["step"] == 2
    bad = requests.post(f"{server.url}/original/c/no%20spaces/reset")
    assert bad.status_code == 422


def test_a_clients_episode_survives_a_restart(server):
    url = f"{server.url}/original/c/durable"
    requests.post(f"{url}/reset", json={"task_id": "task_vendor_onboarding", "seed": 9})
    before = step(url, "ticketdesk", "list_tickets")
    server.stop()
    server.start()
    after = step(url, "ticketdesk", "list_tickets")
    assert after["episode_id"] == before["episode_id"] and after["info"]["step"] == 2
