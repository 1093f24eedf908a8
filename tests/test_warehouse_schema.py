"""The warehouse as an analyst meets it: the ``approvals`` and ``chaos`` tables agree with the
events they are folded from, every table and column carries a description visible from SQL
(also in the sandbox's snapshot), docs/events.md is up to date with the code, and every canned
query that help text or the README names exists."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from companyos.agents import RandomAgent, in_process_naive, in_process_oracle, play
from companyos.analytics import docs
from companyos.analytics.lifecycle import approval_rows, chaos_rows
from companyos.analytics.queries import CANNED
from companyos.analytics.sandbox import run_query, snapshot
from companyos.analytics.warehouse import TABLES, Warehouse
from companyos.api import CompanyOSEnvironment
from companyos.domain import FAMILY_NAMES
from companyos.events import InMemoryEventStore
from companyos.events.types import (
    ApprovalDecided,
    ApprovalPolled,
    ApprovalSubmitted,
    ChaosInjected,
    EpisodeStarted,
    FaultInjected,
    ToolCalled,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[InMemoryEventStore, Warehouse]:
    store = InMemoryEventStore()
    env = CompanyOSEnvironment(store)
    agents = [in_process_oracle(env), in_process_naive(env), RandomAgent(3)]
    for seed in range(12):
        for agent in agents:
            play(env, agent, seed=seed, task_id=FAMILY_NAMES[seed % 6], difficulty=3 - seed % 2)
    wh = Warehouse(tmp_path_factory.mktemp("wh") / "w.duckdb", page_size=700)
    wh.catch_up(store)
    return store, wh


def _episodes(store: InMemoryEventStore) -> dict[str, list]:
    out = {}
    for s in store.streams(limit=10_000):
        events = [r.event for r in store.read(s.stream_id)]
        if events and isinstance(events[0], EpisodeStarted):
            out[s.stream_id] = events
    return out


def test_approvals_follow_each_request_from_submission_to_decision(loaded):
    store, wh = loaded
    expected = []
    for eid, events in _episodes(store).items():
        step = 0
        requests: dict[str, dict] = {}
        for e in events:
            if isinstance(e, ToolCalled):
                step = e.step
            elif isinstance(e, ApprovalSubmitted):
                requests[e.approval_id] = {"at": step, "type": e.approval_type, "polls": 0}
            elif isinstance(e, ApprovalPolled) and e.approval_id in requests:
                requests[e.approval_id]["polls"] = e.polls
            elif isinstance(e, ApprovalDecided) and e.approval_id in requests:
                requests[e.approval_id].update(decided=step, decision=e.decision, cause=e.cause)
        expected += [
            (
                eid,
                aid,
                r["type"],
                r["at"],
                r["polls"],
                r.get("decided"),
                r.get("decision"),
                r.get("cause"),
            )
            for aid, r in requests.items()
        ]
    rows = wh.con.execute(
        "SELECT episode_id, approval_id, approval_type, requested_step, polls, decided_step, "
        "decision, cause FROM approvals"
    ).fetchall()
    assert sorted(rows, key=str) == sorted(expected, key=str)
    assert len(rows) > 10
    # Chance rejections are flagged as such (causes: see the pure test below).
    assert "review" in {r[7] for r in rows}
    # A chance rejection is exactly a request that chaos rejected (it may be approved since).
    [(bad, chance)] = wh.con.execute(
        """SELECT count(*) FILTER (WHERE a.chance_rejection <> EXISTS (
                  SELECT 1 FROM chaos c WHERE c.episode_id = a.episode_id
                  AND c.kind = 'approval_rejection' AND c.target = a.approval_id)),
                  count(*) FILTER (WHERE a.chance_rejection)
           FROM approvals a"""
    ).fetchall()
    assert bad == 0 and chance > 0


def test_chaos_rows_are_every_injection_and_fault_with_its_step(loaded):
    store, wh = loaded
    expected = []
    for eid, events in _episodes(store).items():
        step = 0
        for e in events:
            if isinstance(e, ToolCalled):
                step = e.step
            elif isinstance(e, ChaosInjected):
                expected.append((eid, step, "setup" if step == 0 else "live", e.kind, e.target))
            elif isinstance(e, FaultInjected):
                expected.append((eid, step, "live", None, f"{e.app}.{e.method}"))
    rows = wh.con.execute("SELECT episode_id, step, phase, kind, target FROM chaos").fetchall()
    assert len(rows) == len(expected)
    assert {r[2] for r in rows} == {"setup", "live"}
    assert sorted((*e[:3], e[4]) for e in expected) == sorted((*r[:3], r[4]) for r in rows)
    # Kinds are plain columns an analyst can group by.
    kinds = dict(wh.con.execute("SELECT kind, count(*) FROM chaos GROUP BY kind").fetchall())
    assert {"stale_metric", "approval_latency"} <= set(kinds)
    # Every chaos kind of an episode is in its rows, and only those.
    [(mismatched,)] = wh.con.execute(
        """SELECT count(*) FROM episodes e WHERE list_sort(list_distinct(e.chaos_kinds)) <>
           coalesce((SELECT list_sort(list_distinct(list(c.kind))) FROM chaos c
                     WHERE c.episode_id = e.episode_id), [])"""
    ).fetchall()
    assert mismatched == 0


def test_lifecycle_rows_are_pure_functions_of_the_events():
    events = [
        ChaosInjected(kind="stale_metric", target="m", params={"days": 3}),
        ToolCalled(step=1, app="approvalflow", method="submit_request", params={}),
        ApprovalSubmitted(approval_id="A1", approval_type="t", approver="p", data={"x": 1}),
        ToolCalled(step=2, app="approvalflow", method="check_status", params={}),
        ChaosInjected(kind="approval_rejection", target="A1", params={}),
        ApprovalDecided(approval_id="A1", decision="rejected", cause="chance", reason="no"),
        ApprovalPolled(approval_id="A1", polls=1, status="rejected"),
        ToolCalled(step=3, app="datahub", method="query", params={}),
        FaultInjected(app="datahub", method="query", kind="rate_limited", retry_after_minutes=5),
    ]
    [a] = approval_rows("e", events)
    assert a[:4] == ("e", "A1", "t", "p")
    assert orjson.loads(a[5]) == {"x": 1}
    assert a[6:15] == (1, 1, 2, "rejected", 2, "rejected", "chance", "no", True)
    assert chaos_rows("e", events) == [
        ("e", 0, "setup", "stale_metric", "m", '{"days":3}', "ChaosInjected"),
        ("e", 2, "live", "approval_rejection", "A1", "{}", "ChaosInjected"),
        (
            "e",
            3,
            "live",
            "rate_limit",
            "datahub.query",
            '{"fault":"rate_limited","retry_after_minutes":5}',
            "FaultInjected",
        ),
    ]


def test_every_table_and_column_is_described_in_sql(loaded, tmp_path):
    _, wh = loaded
    tables = dict(
        wh.con.execute(
            "SELECT table_name, comment FROM duckdb_tables() WHERE NOT temporary "
            "AND schema_name = 'main'"
        ).fetchall()
    )
    assert set(TABLES) <= set(tables)
    assert all(tables[t] for t in tables), {t: c for t, c in tables.items() if not c}
    missing = wh.con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE schema_name = 'main' AND table_name IN (SELECT table_name FROM duckdb_tables() "
        "WHERE NOT temporary AND schema_name = 'main') AND (comment IS NULL OR comment = '')"
    ).fetchall()
    assert missing == []
    # What an analyst types, in the sandbox: the descriptions travel with the snapshot.
    snap = snapshot(wh.con, tmp_path / "snaps")
    answer = run_query(
        snap,
        "SELECT table_name, column_name, comment FROM duckdb_columns() "
        "WHERE table_name = 'approvals' AND column_name = 'cause'",
    )
    [[_, _, comment]] = answer.rows
    assert "chance" in comment and "wrong_approver" in comment
    described = run_query(snap, "SELECT comment FROM duckdb_tables() WHERE table_name='chaos'")
    assert "chaos" in described.rows[0][0]


def test_the_events_page_is_generated_and_up_to_date():
    page = (ROOT / "docs" / "events.md").read_text(encoding="utf-8")
    assert page == docs.render(), "run: python -m companyos.analytics.docs"
    from companyos.events.types import EVENT_TYPES

    for name, cls in EVENT_TYPES.items():
        assert f"### {name}\n" in page
        for field in cls.model_fields:
            if field != "type":
                assert f"`{field}`" in page
    for milestone in ("clean", "ticket_verified", "approved:", "data_fresh:"):
        assert f"`{milestone}" in page


HELP_SOURCES = [
    ROOT / "README.md",
    ROOT / "companyos" / "analyze.py",
    ROOT / "api" / "analytics_routes.py",
    ROOT / "docs" / "failure_taxonomy.md",
]


def test_every_canned_query_named_in_help_or_docs_exists():
    # `--query NAME`, `"name": "NAME"`, `{"name": ...}` examples and `/analytics/query` calls.
    patterns = [
        re.compile(r"--query[ =]([a-z_][a-z0-9_]*)"),
        re.compile(r"""["']name["']\s*:\s*["']([a-z_][a-z0-9_]*)["']"""),
    ]
    named = set()
    for path in HELP_SOURCES:
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            for p in patterns:
                named |= set(p.findall(text))
    assert named, "the help examples name canned queries"
    assert named <= set(CANNED), f"not canned queries: {sorted(named - set(CANNED))}"
