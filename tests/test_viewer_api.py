"""The viewer's server side over real sockets: the timeline route, its errors, and the static
page (a uvicorn process on loopback; no TestClient)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from companyos.agents import in_process_oracle, play
from companyos.api import CompanyOSEnvironment
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.projections.timeline import timeline

from .serving import running_server

VIEWER = Path(__file__).resolve().parents[1] / "api" / "viewer"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("viewer_api") / "events.db"


@pytest.fixture(scope="module")
def episode_id(db) -> str:
    store = SQLEventStore(sqlite_url(db))
    env = CompanyOSEnvironment(store)
    done = play(env, in_process_oracle(env), seed=10, task_id="vendor_onboarding", difficulty=3)
    store.close()
    return done.episode_id


@pytest.fixture(scope="module")
def http(db, episode_id) -> Any:
    with (
        running_server(f"sqlite:///{db}", log=db.parent / "server.log") as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        yield client


def test_the_timeline_route_serves_the_projection(http, db, episode_id):
    body = http.get(f"/episodes/{episode_id}/timeline").json()
    store = SQLEventStore(sqlite_url(db))
    try:
        # Through JSON, as the route sends it (tuples become lists).
        assert body == json.loads(json.dumps(timeline(store.read(episode_id))))
    finally:
        store.close()
    assert body["episode"]["agent"] == "oracle" and body["episode"]["failure"] is None
    n = len(body["steps"])
    page = http.get(f"/episodes/{episode_id}/timeline", params={"from_step": 2, "limit": 2})
    assert [s["step"] for s in page.json()["steps"]] == [2, 3]
    assert page.json()["next_step"] == (4 if n > 3 else None)


@pytest.mark.parametrize(
    ("path", "params", "status", "says"),
    [
        ("/episodes/nope/timeline", {}, 404, "no episode 'nope'"),
        ("/episodes/..%2F..%2Fetc/timeline", {}, 404, ""),
        (f"/episodes/{'x' * 300}/timeline", {}, 404, "no episode"),
        ("/episodes/{eid}/timeline", {"from_step": 99}, 400, "from_step must be from 1 to"),
        ("/episodes/{eid}/timeline", {"from_step": -1}, 422, "from_step"),
        ("/episodes/{eid}/timeline", {"from_step": "abc"}, 422, "from_step"),
        ("/episodes/{eid}/timeline", {"limit": 0}, 422, "limit"),
        ("/episodes/{eid}/timeline", {"limit": 10_000}, 422, "limit"),
    ],
)
def test_bad_timeline_requests_get_a_4xx_with_a_message(
    http, episode_id, path, params, status, says
):
    r = http.get(path.replace("{eid}", episode_id), params=params)
    assert r.status_code == status, r.text
    assert says in r.text and r.json()["detail"]


def test_the_viewer_page_and_its_assets(http):
    r = http.get("/viewer", follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"] == "viewer/"
    page = http.get("/viewer", follow_redirects=True)
    assert page.status_code == 200 and str(page.url).endswith("/viewer/")
    assert page.headers["content-type"].startswith("text/html")
    assert page.text == (VIEWER / "index.html").read_text()
    for asset, kind in (("app.js", "javascript"), ("style.css", "text/css")):
        assert f'"{asset}"' in page.text  # relative: works under a path prefix too
        got = http.get(f"/viewer/{asset}")
        assert got.status_code == 200 and kind in got.headers["content-type"]
        assert got.text == (VIEWER / asset).read_text()


@pytest.mark.parametrize("path", ["/viewer/nope.js", "/viewer/..%2F..%2Fpyproject.toml"])
def test_the_viewer_serves_nothing_else(http, path):
    assert http.get(path).status_code == 404
