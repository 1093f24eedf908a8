"""Two replicas behind a real load balancer: Debian's nginx, started by the test with the
configuration the README documents (`deploy/nginx.conf`, only its addresses and file paths
replaced), in front of two `companyos serve` processes on one PostgreSQL schema.

Every step states the step it expects (`expected_step`), and nginx hands consecutive requests
to alternating replicas, so every other step reaches a replica whose cached copy is stale: not
one correct expected step may be refused. Sessions over `/ws` go through nginx's upgrade, and
`HEAD /health` (a health check) answers 200.

nginx missing: the test skips, unless COMPANYOS_REQUIRE_NGINX is set (CI installs nginx and sets
it, so there it must run)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text
from websockets.sync import client as ws_client

from companyos.api import CompanyOSEnvironment
from companyos.domain import plan

from . import ledger
from .conftest import POSTGRES_URL, drop_postgres_schema, postgres_schema_url
from .serving import ServerProcess, free_port

NGINX = shutil.which("nginx") or next(
    (p for p in ("/usr/sbin/nginx", "/sbin/nginx") if os.access(p, os.X_OK)), None
)
REQUIRED = bool(os.environ.get("COMPANYOS_REQUIRE_NGINX"))
CONFIG = Path(__file__).resolve().parent.parent / "deploy" / "nginx.conf"
PHASE = "replicas: 2 servers behind nginx (PostgreSQL), expected_step on every call"

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.postgres,
    pytest.mark.skipif(not POSTGRES_URL, reason="set COMPANYOS_TEST_POSTGRES_URL to run"),
]


def nginx_config(replicas: list[str], port: int, where: Path) -> str:
    """`deploy/nginx.conf` pointed at the test's replicas and port, its files under ``where``."""
    conf = CONFIG.read_text()
    servers = re.findall(r"^\s*server 10\.0\.0\.5:\d+.*$", conf, re.M)
    assert len(servers) == 2, "deploy/nginx.conf lists two replicas in its upstream"
    conf = conf.replace(servers[1] + "\n", "")
    conf = conf.replace(
        servers[0],
        "\n".join(servers[0].replace("10.0.0.5:8001", r.removeprefix("http://")) for r in replicas),
    )
    assert "listen 8000;" in conf
    conf = conf.replace("listen 8000;", f"listen 127.0.0.1:{port};")
    conf = conf.replace("/var/log/nginx/companyos.log", str(where / "access.log"))
    conf = conf.replace("worker_processes auto;", "worker_processes 2;")
    temp = "\n".join(
        f"    {kind}_temp_path {where / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = conf.replace("http {", "http {\n" + temp, 1)
    main = f"pid {where / 'nginx.pid'};\nerror_log {where / 'error.log'} warn;\n"
    if os.geteuid() == 0:
        main += "user root;\n"  # the workers read and write the test's private folder
    return main + conf


@pytest.fixture(scope="module")
def front(tmp_path_factory: Any) -> Iterator[tuple[str, list[ServerProcess], Path]]:
    if NGINX is None:
        if REQUIRED:
            pytest.fail("COMPANYOS_REQUIRE_NGINX is set but nginx is not installed")
        pytest.skip("nginx is not installed (apt-get install nginx-light)")
    assert POSTGRES_URL
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    admin.dispose()
    url = postgres_schema_url(POSTGRES_URL, schema)
    where = tmp_path_factory.mktemp("nginx")
    replicas = [ServerProcess(url, log=where / f"replica-{i}.log") for i in range(2)]
    failures: list[BaseException] = []

    def start(replica: ServerProcess) -> None:
        try:
            replica.start(timeout=180)  # a loaded CI machine starts slowly
        except BaseException as exc:
            failures.append(exc)

    starting = [threading.Thread(target=start, args=(r,)) for r in replicas]
    for t in starting:
        t.start()
    for t in starting:
        t.join()
    if failures:
        for r in replicas:
            r.stop()
        drop_postgres_schema(POSTGRES_URL, schema)
        raise failures[0]
    port = free_port()
    (where / "nginx.conf").write_text(nginx_config([r.url for r in replicas], port, where))
    check = subprocess.run(
        [NGINX, "-t", "-p", str(where), "-c", str(where / "nginx.conf")],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    nginx = subprocess.Popen(
        [NGINX, "-p", str(where), "-c", str(where / "nginx.conf"), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    front_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{front_url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert nginx.poll() is None and time.monotonic() < deadline, (
                (where / "error.log").read_text() if (where / "error.log").exists() else ""
            )
            time.sleep(0.1)
        yield front_url, replicas, where
    finally:
        nginx.terminate()
        try:
            nginx.wait(15)
        except subprocess.TimeoutExpired:
            nginx.kill()
            nginx.wait()
        for r in replicas:
            r.stop()
        for i in range(2):
            log = (where / f"replica-{i}.log").read_text()
            assert "Traceback" not in log, log[-3000:]
        drop_postgres_schema(POSTGRES_URL, schema)


def _upstreams(where: Path) -> Counter[str]:
    lines = (where / "access.log").read_text().splitlines()
    return Counter(m.group(1) for line in lines if (m := re.search(r"upstream=(\S+)", line)))


def _play(front_url: str, seed: int, outcome: dict[str, int]) -> None:
    """One oracle episode over plain HTTP through nginx, every step with expected_step."""
    local = CompanyOSEnvironment()
    local.reset(seed=seed, task_id=seed % 5, difficulty=seed % 4)
    with httpx.Client(base_url=front_url, timeout=60) as http:
        r = http.post("/reset", json={"seed": seed, "task_id": seed % 5, "difficulty": seed % 4})
        outcome["5xx"] += r.status_code >= 500
        eid = r.json()["observation"]["episode_id"]
        done, step = False, 0
        while not done:
            assert local.episode is not None
            call = plan(local.episode.world)
            assert call is not None
            action = {**call.as_action(), "episode_id": eid, "expected_step": step}
            r = http.post("/step", json={"action": action})
            outcome["5xx"] += r.status_code >= 500
            assert r.status_code == 200, r.text
            obs = r.json()["observation"]
            outcome["steps"] += 1
            if obs["error"] == "conflict":
                outcome["refused"] += 1
                return
            local.step(call)
            step += 1
            assert obs["step"] == step
            done = r.json()["done"]
        outcome["episodes"] += 1
        outcome["success"] += obs["outcome"] == "success"


def test_replicas_behind_nginx(front):
    """One deployment for all three checks (a module fixture would be built once per xdist
    worker that runs a test of this module)."""
    front_url, _, where = front
    health_checks_answer(front_url)
    expected_steps_are_never_refused(front_url, where)
    websocket_sessions_upgrade(front_url)


def expected_steps_are_never_refused(front_url: str, where: Path) -> None:
    sessions = ledger.scaled(4, 12)
    rounds = ledger.scaled(2, 5)
    outcome: Counter[str] = Counter()
    for r in range(rounds):
        players = [
            threading.Thread(target=_play, args=(front_url, 5000 + r * 100 + i, outcome))
            for i in range(sessions)
        ]
        for t in players:
            t.start()
        for t in players:
            t.join()
    served = _upstreams(where)
    assert outcome["refused"] == 0, outcome
    assert outcome["episodes"] == outcome["success"] == sessions * rounds, outcome
    assert outcome["5xx"] == 0
    assert len(served) == 2 and min(served.values()) > outcome["steps"] // 4, served
    ledger.record(
        PHASE,
        episodes=outcome["episodes"],
        http_5xx=outcome["5xx"],
        note=f"nginx {_nginx_version()} with deploy/nginx.conf: {outcome['steps']:,} steps "
        f"with expected_step ({sessions} episodes at a time), 0 refused; requests per "
        f"replica {sorted(served.values())}",
    )


def websocket_sessions_upgrade(front_url: str) -> None:
    url = front_url.replace("http://", "ws://") + "/ws"
    steps = 0
    for seed in range(ledger.scaled(2, 6)):
        local = CompanyOSEnvironment()
        local.reset(seed=seed, task_id=seed % 5, difficulty=1)
        with ws_client.connect(url) as ws:
            ws.send(
                json.dumps(
                    {"type": "reset", "data": {"seed": seed, "task_id": seed % 5, "difficulty": 1}}
                )
            )
            reply = json.loads(ws.recv(timeout=60))
            assert reply["type"] == "observation", reply
            done = False
            while not done:
                assert local.episode is not None
                call = plan(local.episode.world)
                assert call is not None
                ws.send(json.dumps({"type": "step", "data": call.as_action()}))
                reply = json.loads(ws.recv(timeout=60))
                assert reply["type"] == "observation", reply
                local.step(call)
                steps += 1
                done = reply["data"]["done"]
            assert reply["data"]["observation"]["outcome"] == "success"
    ledger.record(PHASE, note=f"/ws through nginx's upgrade: {steps} steps")


def health_checks_answer(front_url: str) -> None:
    assert httpx.head(f"{front_url}/health").status_code == 200
    assert httpx.get(f"{front_url}/health").json()


def _nginx_version() -> str:
    assert NGINX
    out = subprocess.run([NGINX, "-v"], capture_output=True, text=True).stderr
    return out.strip().rsplit("/", 1)[-1]
