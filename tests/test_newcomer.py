"""A newcomer's path without a stumble: the command line at 80 columns, listings newest first
with ids that can be typed back, a closed pipe, a busy port, `make` that says what it does,
and the HTTP details a first curl trips on (empty filters, `from_step=0`, `/`)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from rich.console import Console

from companyos.api import CompanyOSEnvironment
from companyos.cli import main
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.tables import print_table

from .serving import ServerProcess

ROOT = Path(__file__).resolve().parents[1]
COMPANYOS = [sys.executable, "-m", "companyos"]


@pytest.fixture
def store_url(tmp_path: Path) -> Iterator[str]:
    """A SQLite store with five short episodes, two of whose ids share a long prefix."""
    url = sqlite_url(tmp_path / "events.db")
    store = SQLEventStore(url)
    env = CompanyOSEnvironment(store)
    ids = ["abcdef01-first", "abcdef01-second", "0badc0de", "feedface", "newest-one"]
    for i, eid in enumerate(ids):
        env.reset(seed=i, task_id="handbook_update", episode_id=eid)
        env.step({"app": "ticketdesk", "method": "list_tickets", "params": {}})
    store.close()
    yield url


def test_episodes_lists_newest_first_and_fits_80_columns(store_url, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["episodes", "--store", store_url]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    order = [eid for eid in ("newest", "feedface", "0badc0de", "abcdef01-s", "abcdef01-f")]
    positions = [out.find(e) for e in order]
    assert -1 not in positions and positions == sorted(positions), out
    assert "handbook_update" in out  # labels whole, never cut to "…"


def test_show_and_verify_take_a_unique_prefix_and_explain_an_ambiguous_one(store_url, capsys):
    assert main(["show", "feed", "--store", store_url]) == 0
    assert '"episode_id": "feedface"' in capsys.readouterr().out
    assert main(["verify", "0bad", "--store", store_url]) == 0
    assert '"ok": true' in capsys.readouterr().out
    assert main(["verify", "abcdef01", "--store", store_url]) == 2
    err = capsys.readouterr().err
    assert "ambiguous" in err and "abcdef01-first" in err and "abcdef01-second" in err
    assert main(["show", "zzz", "--store", store_url]) == 2
    assert "no episode 'zzz'" in capsys.readouterr().err


def test_a_closed_pipe_ends_quietly():
    """`companyos tasks --suite test | head`: the reader goes away; no traceback."""
    proc = subprocess.Popen(
        [*COMPANYOS, "tasks", "--suite", "test"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before it writes a byte: every write now fails with EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_busy_port_is_one_clear_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*COMPANYOS, "serve", "--port", str(port), "--store", "memory://"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f":{port}" in lines[0] and "--port" in lines[0], done.stderr


def test_tables_keep_labels_whole_at_80_columns():
    console = Console(width=80, record=True, force_terminal=False)
    columns = ["agent", "label", "failures", "mean_point_of_no_return", "description"]
    rows = [["random", "submitted_wrong_data", "22", "11.909", "x " * 60]]
    print_table(console, columns, rows, text={4})
    table = console.export_text()
    assert "submitted_wrong_data" in table and max(map(len, table.splitlines())) <= 80
    wide = [f"column_{i}" for i in range(12)]
    print_table(console, wide, [[f"value_{i}_long" for i in range(12)]], heading=2)
    blocks = console.export_text()
    assert all(f"value_{i}_long" in blocks for i in range(12))  # one block per row instead
    assert max(map(len, blocks.splitlines())) <= 80


def test_tasks_fits_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "approval_rejection" in out and "as the original" in out


def test_make_says_what_it_does_and_serves_on_host_and_port():
    dry = subprocess.run(
        ["make", "-n", "-B", "serve", "HOST=0.0.0.0", "PORT=8123"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "companyos serve --host 0.0.0.0 --port 8123" in dry
    assert re.search(r"pip install .*-e '\.\[dev\]'.*> \.venv/install\.log", dry, re.S), dry


# ------------------------------------------------------------------ over HTTP


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    db = tmp_path_factory.mktemp("newcomer") / "store.db"
    server = ServerProcess(f"sqlite:///{db}")
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            for seed in range(5):
                r = client.post("/reset", json={"seed": seed, "task_id": "expense_report"})
                r.raise_for_status()
            yield client
    finally:
        server.stop()


def test_empty_filters_are_no_filters(http):
    everything = http.get("/episodes").json()["episodes"]
    assert len(everything) == 5
    r = http.get("/episodes?outcome=&scenario=&difficulty=&agent=&limit=")
    assert r.status_code == 200 and r.json()["episodes"] == everything
    r = http.get("/episodes?outcome=&scenario=expense_report")
    assert [e["episode_id"] for e in r.json()["episodes"]] == [e["episode_id"] for e in everything]
    assert http.get("/episodes?difficulty=x").status_code == 422  # a wrong value still is wrong


def test_newest_first_pages_backwards(http):
    oldest = [e["episode_id"] for e in http.get("/episodes").json()["episodes"]]
    seen, before = [], None
    while True:
        params = {"order": "newest", "limit": 2, **({"before": before} if before else {})}
        page = http.get("/episodes", params=params).json()
        seen += [e["episode_id"] for e in page["episodes"]]
        if not page["episodes"] or page["next"] is None:
            break
        before = page["next"]
    assert seen == oldest[::-1]


def test_timeline_from_step_zero_is_the_start(http):
    eid = http.get("/episodes").json()["episodes"][0]["episode_id"]
    http.post(
        "/step",
        json={"action": {"app": "ticketdesk", "method": "list_tickets", "episode_id": eid}},
    )
    zero = http.get(f"/episodes/{eid}/timeline", params={"from_step": 0})
    assert zero.status_code == 200
    assert zero.json()["steps"] == http.get(f"/episodes/{eid}/timeline").json()["steps"]


def test_the_root_opens_the_viewer(http):
    r = http.get("/", follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"] == "viewer/"
    assert "replay viewer" in http.get("/", follow_redirects=True).text
