"""No answer names where or how the events are stored: not the SQLite file's path, not the
PostgreSQL URL, host, schema or password; not in the episode and analytics routes, not in any
error, not when the database drops the server's connections (a 503 that names the failure's
kind only, then recovery). The server's own log masks the password too."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets.sync.client as ws_client
from sqlalchemy import create_engine, text

from . import ledger
from .conftest import POSTGRES_URL, drop_postgres_schema, postgres_schema_url
from .serving import ServerProcess

pytestmark = pytest.mark.reliability

PASSWORD = "s3cr3t-Pa55word"
APP_NAME = "companyos-secrets-test"


def _answers(url: str) -> list[str]:
    """The bodies of a request to every route, and of the usual mistakes."""
    with httpx.Client(base_url=url, timeout=30) as http:
        eid = http.post("/reset", json={"seed": 1}).json()["observation"]["episode_id"]
        http.post(
            "/step",
            json={"action": {"app": "ticketdesk", "method": "list_tickets", "episode_id": eid}},
        )
        schema = http.get("/openapi.json").json()
        bodies = [json.dumps(schema)]
        for path, ops in schema["paths"].items():
            for method in ops:
                concrete = path.replace("{episode_id}", eid)
                params = {"episode_id": eid} if path in ("/render", "/state") else None
                body = {"seed": 2} if path == "/reset" else {"at_step": 0}
                bodies.append(http.request(method, concrete, json=body, params=params).text)
        for method, path, body in [
            ("GET", "/episodes/nope", None),
            ("GET", "/episodes/nope/events", None),
            ("GET", "/render?episode_id=nope", None),
            ("POST", "/reset", {"task_id": "payroll"}),
            ("POST", "/reset", {"fork_from": "nope", "at_step": 0}),
            ("POST", "/reset", {"episode_id": eid}),
            ("POST", "/step", {"action": {"app": 1}}),
            ("GET", "/episodes?after=-1", None),
            ("GET", "/docs", None),
        ]:
            bodies.append(http.request(method, path, json=body).text)
    return bodies


def test_a_sqlite_servers_answers_never_name_its_file(tmp_path):
    private = tmp_path / "private-dir-7f3a"
    private.mkdir()
    server = ServerProcess(f"sqlite:///{private / 'hidden-events.db'}", log=tmp_path / "log")
    server.start()
    try:
        bodies = _answers(server.url)
    finally:
        server.stop()
    leaks = [b[:200] for b in bodies if "private-dir-7f3a" in b or "hidden-events" in b]
    assert not leaks and not [b for b in bodies if "sqlite" in b.lower()]
    ledger.record(
        "access: no store path, URL or password in any answer",
        note=f"{len(bodies)} answers checked",
    )


@pytest.fixture
def postgres_with_password(tmp_path: Any) -> Iterator[tuple[ServerProcess, str, Any]]:
    if not POSTGRES_URL:
        pytest.skip("set COMPANYOS_TEST_POSTGRES_URL")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    # The test server trusts local connections: the password is carried, never checked.
    url = postgres_schema_url(POSTGRES_URL, schema).replace("://root@", f"://root:{PASSWORD}@")
    url += f"&application_name={APP_NAME}"
    assert PASSWORD in url
    server = ServerProcess(url, log=tmp_path / "server.log")
    server.start()
    try:
        yield server, schema, admin
    finally:
        server.stop()
        log = (tmp_path / "server.log").read_text()
        assert PASSWORD not in log and "Traceback" not in log, log[-3000:]
        admin.dispose()
        drop_postgres_schema(POSTGRES_URL, schema)


def _drop_connections(admin: Any) -> int:
    with admin.begin() as conn:
        return len(
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = :name"
                ),
                {"name": APP_NAME},
            ).all()
        )


def test_a_postgres_outage_is_a_503_that_names_no_secret(postgres_with_password):
    server, schema, admin = postgres_with_password
    secrets = (PASSWORD, schema, "postgresql", "127.0.0.1:5432", APP_NAME)
    bodies = _answers(server.url)
    faults = 0
    with httpx.Client(base_url=server.url, timeout=30) as http:
        eid = http.post("/reset", json={"seed": 3}).json()["observation"]["episode_id"]
        step = {"action": {"app": "ticketdesk", "method": "list_tickets", "episode_id": eid}}
        faults += _drop_connections(admin) > 0
        failed = http.post("/step", json=step)
        assert failed.status_code == 503, failed.text
        assert failed.json()["detail"].startswith("event store unavailable (OperationalError)")
        bodies.append(failed.text)
        recovered = http.post("/step", json=step)  # a new connection: the store is back
        assert recovered.status_code == 200 and recovered.json()["observation"]["step"] == 1
        with ws_client.connect(server.url.replace("http://", "ws://") + "/ws") as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 4}}))
            ws.recv(timeout=30)
            faults += _drop_connections(admin) > 0
            for _ in range(2):
                ws.send(
                    json.dumps(
                        {"type": "step", "data": {"app": "datahub", "method": "list_metrics"}}
                    )
                )
                bodies.append(ws.recv(timeout=30))
        failed_frame, recovered_frame = json.loads(bodies[-2]), json.loads(bodies[-1])
        assert failed_frame["type"] == "error"
        assert failed_frame["data"]["message"].startswith("event store unavailable")
        assert recovered_frame["data"]["observation"]["step"] == 1
        assert http.post(f"/episodes/{eid}/verify").json()["ok"]
    leaks = [(s, b[:300]) for b in bodies for s in secrets if s in b]
    assert not leaks
    ledger.record(
        "access: no store path, URL or password in any answer",
        faults=faults,
        note="PostgreSQL connections dropped twice: 503 and an error frame naming no secret, "
        "then recovery",
    )
