"""The analytics routes over real sockets (a uvicorn process on loopback, a SQLite file): canned
queries, sandboxed SQL and its refusals, the report, and the viewer's timeline carrying the
failure label and the point of no return."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from companyos.agents import RandomAgent, in_process_naive, in_process_oracle, play
from companyos.analytics.no_return import point_of_no_return
from companyos.analytics.queries import CANNED
from companyos.api import CompanyOSEnvironment
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.projections.mistakes import LABELS
from companyos.projections.mistakes import decisive as diagnose

from .serving import running_server


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("analytics_api") / "events.db"


@pytest.fixture(scope="module")
def played(db) -> dict[str, list[str]]:
    """Oracle, naive and random episodes on a few instances at difficulty 2."""
    store = SQLEventStore(sqlite_url(db))
    env = CompanyOSEnvironment(store)
    out: dict[str, list[str]] = {"oracle": [], "naive": [], "random": []}
    for seed, task in [(3, "vendor_onboarding"), (5, "expense_report"), (8, "purchase_order")]:
        for name, agent in [
            ("oracle", in_process_oracle(env)),
            ("naive", in_process_naive(env)),
            ("random", RandomAgent(seed)),
        ]:
            done = play(env, agent, seed=seed, task_id=task, difficulty=2)
            out[name].append(done.episode_id)
    store.close()
    return out


@pytest.fixture(scope="module")
def http(db, played) -> Any:
    with (
        running_server(f"sqlite:///{db}", log=db.parent / "server.log") as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        yield client


def test_canned_queries_are_listed_and_run(http, played):
    listed = http.get("/analytics/queries").json()
    assert {q["name"] for q in listed} == set(CANNED)
    for name in CANNED:
        r = http.post("/analytics/query", json={"name": name})
        assert r.status_code == 200, (name, r.text)
        body = r.json()
        assert body["columns"] and body["row_count"] == len(body["rows"])
    r = http.post("/analytics/query", json={"name": "nope"})
    assert r.status_code == 400 and "known:" in r.json()["detail"]


def test_answers_say_how_fresh_they_are(http, played, db):
    r = http.post("/analytics/query", json={"name": "pass_k", "wait_s": 30})
    assert r.status_code == 200, r.text
    body = r.json()
    store = SQLEventStore(sqlite_url(db))
    head = len(store.read_all(0, 1_000_000))
    store.close()
    assert (body["as_of_event"], body["lag_events"], body["catching_up"]) == (head, 0, False)
    r = http.post("/analytics/query", json={"sql": "SELECT 1", "wait_s": 30})
    assert r.json()["as_of_event"] == head and r.json()["lag_events"] == 0
    report = http.get("/analytics/report", params={"format": "json", "wait_s": 30}).json()
    assert report["freshness"] == {"as_of_event": head, "lag_events": 0, "catching_up": False}
    assert http.post("/analytics/query", json={"name": "pass_k", "wait_s": -1}).status_code == 422


def test_user_sql_sees_every_episode_and_step(http, played):
    r = http.post(
        "/analytics/query",
        json={"sql": "SELECT agent, count(*) AS n, sum(steps) AS s FROM episodes GROUP BY agent"},
    )
    assert r.status_code == 200, r.text
    rows = {a: (n, s) for a, n, s in r.json()["rows"]}
    assert {a: n for a, (n, _) in rows.items()} == {"oracle": 3, "naive": 3, "random": 3}
    r = http.post("/analytics/query", json={"sql": "SELECT count(*) FROM steps"})
    assert r.json()["rows"] == [[sum(s for _, s in rows.values())]]


def test_the_warehouse_catches_up_between_requests(http, db, played):
    before = http.post("/analytics/query", json={"sql": "SELECT count(*) FROM episodes"})
    store = SQLEventStore(sqlite_url(db))
    env = CompanyOSEnvironment(store)
    play(env, in_process_oracle(env), seed=11, task_id="bug_escalation", difficulty=1)
    store.close()
    after = http.post("/analytics/query", json={"sql": "SELECT count(*) FROM episodes"})
    assert after.json()["rows"][0][0] == before.json()["rows"][0][0] + 1


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE episodes",
        "SELECT 1; DROP TABLE episodes",
        "COPY episodes TO '/tmp/x.csv'",
        "SELECT * FROM read_text('/etc/passwd')",
        "ATTACH '/tmp/evil.duckdb' AS evil",
        "INSTALL httpfs",
        "SET enable_external_access = true",
    ],
)
def test_attack_sql_is_a_400_that_names_no_path(http, sql):
    r = http.post("/analytics/query", json={"sql": sql})
    assert r.status_code == 400, r.text
    detail = r.json()["detail"]
    assert "companyos-analytics-" not in detail and "/tmp/pytest" not in detail
    assert http.post("/analytics/query", json={"name": next(iter(CANNED))}).status_code == 200


def test_a_body_with_both_or_neither_is_refused(http):
    assert http.post("/analytics/query", json={}).status_code == 422
    r = http.post("/analytics/query", json={"sql": "SELECT 1", "name": "x"})
    assert r.status_code == 422 and "exactly one" in r.text


def test_the_report_renders_as_html_and_json(http, played):
    r = http.get("/analytics/report")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "<img" in r.text and "data:image/png;base64," in r.text
    data = http.get("/analytics/report", params={"format": "json"}).json()
    assert isinstance(data, dict) and data


def test_the_timeline_carries_the_diagnosis(http, db, played):
    store = SQLEventStore(sqlite_url(db))
    try:
        failed = [
            e for e in played["naive"] + played["random"] if diagnose(store.read(e)) is not None
        ]
        assert failed, "no failed episode among the naive and random ones"
        for episode_id in failed:
            records = store.read(episode_id)
            mistake = diagnose(records)
            assert mistake is not None and mistake.label in LABELS
            body = http.get(f"/episodes/{episode_id}/timeline").json()["episode"]
            assert body["point_of_no_return"] == point_of_no_return(records)
            assert body["failure"] == {
                "label": mistake.label,
                "step": mistake.step,
                "detail": mistake.detail,
            }
        for episode_id in played["oracle"]:
            body = http.get(f"/episodes/{episode_id}/timeline").json()["episode"]
            assert body["failure"] is None and body["point_of_no_return"] is None
    finally:
        store.close()
