"""`companyos analyze` and `companyos export` as a user runs them: on a SQLite store with real
episodes, through `companyos.cli.main`."""

from __future__ import annotations

import json

import duckdb
import pandas as pd
import pytest

from companyos.agents import RandomAgent, in_process_naive, in_process_oracle, play
from companyos.analytics.queries import CANNED
from companyos.api import CompanyOSEnvironment
from companyos.cli import main
from companyos.events.sql import SQLEventStore, sqlite_url


@pytest.fixture(scope="module")
def store_url(tmp_path_factory) -> str:
    db = tmp_path_factory.mktemp("analyze") / "events.db"
    store = SQLEventStore(sqlite_url(db))
    env = CompanyOSEnvironment(store)
    for seed, task in [(2, "license_renewal"), (4, "handbook_update")]:
        play(env, in_process_oracle(env), seed=seed, task_id=task, difficulty=2)
        play(env, in_process_naive(env), seed=seed, task_id=task, difficulty=3)
        play(env, RandomAgent(seed), seed=seed, task_id=task, difficulty=1)
    store.close()
    return f"sqlite:///{db}"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_canned_report_prints(store_url, tmp_path, capsys):
    wh = str(tmp_path / "wh.duckdb")
    code, out, _ = _run(capsys, "analyze", "--store", store_url, "--warehouse", wh)
    assert code == 0
    for q in CANNED.values():
        assert q.title in out


def test_sql_json_output_and_points_of_no_return(store_url, tmp_path, capsys):
    wh = str(tmp_path / "wh.duckdb")
    sql = "SELECT count(*) AS n, count(*) FILTER (WHERE NOT success) AS failed FROM episodes"
    code, out, _ = _run(
        capsys, "analyze", "--store", store_url, "--warehouse", wh, "--sql", sql, "--format", "json"
    )
    assert code == 0
    body = json.loads(out)
    n, failed = body["rows"][0]
    assert n == 6 and failed >= 1
    with duckdb.connect(wh, read_only=True) as con:
        [(labelled, checked)] = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE no_return_checked) FROM failures"
        ).fetchall()
    assert labelled == failed and checked == failed


def test_refused_sql_is_a_clear_error_and_changes_nothing(store_url, tmp_path, capsys):
    wh = tmp_path / "wh.duckdb"
    assert _run(capsys, "analyze", "--store", store_url, "--warehouse", str(wh))[0] == 0
    with duckdb.connect(str(wh), read_only=True) as con:
        before = con.execute("SELECT count(*) FROM events").fetchall()
    code, _, err = _run(
        capsys,
        "analyze",
        "--store",
        store_url,
        "--warehouse",
        str(wh),
        "--sql",
        "DROP TABLE events",
    )
    assert code == 2 and "single SELECT" in err
    with duckdb.connect(str(wh), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM events").fetchall() == before
    code, _, err = _run(capsys, "analyze", "--store", store_url, "--query", "nope")
    assert code == 2 and "analyze --list" in err


def test_the_report_is_written(store_url, tmp_path, capsys):
    out = tmp_path / "report.html"
    args = ["analyze", "--store", store_url, "--warehouse", str(tmp_path / "w.duckdb")]
    assert _run(capsys, *args, "--report", str(out))[0] == 0
    html = out.read_text()
    assert "<img" in html and "data:image/png;base64," in html


def test_export_writes_partitioned_parquet(store_url, tmp_path, capsys):
    target = tmp_path / "parquet"
    args = ["export", "--store", store_url, "--warehouse", str(tmp_path / "w.duckdb")]
    assert _run(capsys, *args, "--parquet", str(target))[0] == 0
    assert any((target / "episodes").glob("family-*/difficulty-*/*.parquet"))
    episodes = pd.read_parquet(target / "episodes")
    assert len(episodes) == 6
    [(n,)] = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{target}/steps/**/*.parquet')"
    ).fetchall()
    assert n == int(episodes["steps"].sum())
    code, _, err = _run(capsys, *args, "--parquet", str(target))
    assert code == 2 and "--overwrite" in err
