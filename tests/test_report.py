"""The analytics report: its data match SQL on the warehouse, and the HTML renders in a real
browser (headless Chromium, driven by Playwright) with every plot loaded and every table there.

The browser tests need Chromium at /usr/bin/chromium (or COMPANYOS_CHROMIUM) and the
`playwright` package; without them they skip, unless COMPANYOS_REQUIRE_BROWSER is set (then
they fail, so that CI cannot pass by silently skipping). Browsers are never downloaded.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from companyos.analytics import queries
from companyos.analytics.report import MAX_TABLE_ROWS, UNNAMED, render_report, report_data
from companyos.analytics.sandbox import jsonable

from .analytics_fixtures import empty_warehouse, fill_warehouse

CHROMIUM = os.environ.get("COMPANYOS_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
PLOTS = ("returns", "success_by_chaos", "failure_taxonomy", "point_of_no_return")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def unavailable(reason: str) -> None:
    if os.environ.get("COMPANYOS_REQUIRE_BROWSER"):
        pytest.fail(f"browser test required but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "warehouse.duckdb"
    fill_warehouse(path)
    return path


@pytest.fixture(scope="module")
def con(warehouse: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(warehouse), read_only=True)
    yield con
    con.close()


@pytest.fixture(scope="module")
def rendered(con, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("out")
    return render_report(con, out / "report.html", title="Fixture <report>", png_dir=out / "png")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed (pip install -e '.[dev]')")
    if not Path(CHROMIUM).exists():
        unavailable(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")
    with sync_playwright() as pw:
        try:
            chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        except Exception as exc:  # a broken install: say so instead of a stack of CDP noise
            unavailable(f"Chromium at {CHROMIUM} did not start: {exc}")
        yield chromium
        chromium.close()


@pytest.fixture
def open_page(browser) -> Iterator[Any]:
    """Opens a file in a fresh tab that fails the test on any script error or failed load."""
    problems: list[str] = []
    pages: list[Any] = []

    def opener(path: Path) -> Any:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("console", lambda m: m.type == "error" and problems.append(m.text))
        page.on("requestfailed", lambda r: problems.append(f"failed: {r.url[:80]}"))
        page.goto(path.resolve().as_uri())
        page.wait_for_load_state("load")
        pages.append(page)
        return page

    yield opener
    for page in pages:
        page.close()
    assert not problems, problems


def sql(con: duckdb.DuckDBPyConnection, query: str) -> list[dict[str, Any]]:
    cur = con.execute(query)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


# --- the data ----------------------------------------------------------------------------------


def test_the_headline_matches_sql(con):
    data = report_data(con)
    (expected,) = sql(
        con,
        """SELECT count(*) AS episodes,
                  count(*) FILTER (WHERE outcome IS NOT NULL) AS ended,
                  count(*) FILTER (WHERE outcome IS NULL) AS running,
                  count(*) FILTER (WHERE success) AS successes,
                  sum(CASE WHEN success THEN 1 ELSE 0 END) FILTER (WHERE outcome IS NOT NULL)
                      / count(*) FILTER (WHERE outcome IS NOT NULL) AS success_rate,
                  avg(total_return) FILTER (WHERE outcome IS NOT NULL) AS mean_return,
                  avg(steps) FILTER (WHERE outcome IS NOT NULL) AS mean_steps
           FROM episodes""",
    )
    expected["failures"] = con.execute("SELECT count(*) FROM failures").fetchone()[0]
    headline = data["headline"]
    assert set(headline) == set(expected)
    for key, value in expected.items():
        assert close(headline[key], value), key
    assert headline["episodes"] > headline["ended"] > 0 and headline["running"] > 0
    assert data["checkpoint"] == con.execute("SELECT max(position) FROM events").fetchone()[0]


def test_by_agent_matches_sql(con):
    data = report_data(con)
    expected = sql(
        con,
        f"""SELECT coalesce(agent, '{UNNAMED}') AS agent, count(*) AS episodes,
                   count(outcome) AS ended, count(*) FILTER (WHERE success) AS successes,
                   avg(total_return) FILTER (WHERE outcome IS NOT NULL) AS mean_return
            FROM episodes GROUP BY 1""",
    )
    got = {r["agent"]: r for r in data["by_agent"]}
    assert set(got) == {r["agent"] for r in expected}
    assert UNNAMED in got  # the fixture has episodes without an agent name
    for row in expected:
        mine = got[row["agent"]]
        for key, value in row.items():
            assert close(mine[key], value), (row["agent"], key)
        assert close(mine["success_rate"], mine["successes"] / mine["ended"])


def test_the_plots_data_add_up(con):
    data = report_data(con)
    ended = con.execute("SELECT count(*) FROM episodes WHERE outcome IS NOT NULL").fetchone()[0]
    returns = data["returns"]
    assert returns["episodes"] == ended
    assert sum(sum(c) for c in returns["by_agent"].values()) == ended
    assert len(returns["edges"]) == len(next(iter(returns["by_agent"].values()))) + 1

    # Success by chaos kind: per kind, the episodes where it was present.
    for row in data["success_by_chaos"]:
        agent = "agent IS NULL" if row["agent"] == UNNAMED else f"agent = '{row['agent']}'"
        where = (
            "len(chaos_kinds) = 0"
            if row["chaos_kind"] == "(no chaos)"
            else f"list_contains(chaos_kinds, '{row['chaos_kind']}')"
        )
        n, wins = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE success) FROM episodes "
            f"WHERE outcome IS NOT NULL AND {agent} AND {where}"
        ).fetchone()
        assert (row["episodes"], row["successes"]) == (n, wins)

    taxonomy = {r["label"]: r["failures"] for r in data["failure_taxonomy"]}
    assert taxonomy == dict(
        con.execute(
            "SELECT t.label, count(f.label) FROM taxonomy t LEFT JOIN failures f USING (label) "
            "GROUP BY 1"
        ).fetchall()
    )

    ponr = data["point_of_no_return"]
    (expected,) = sql(
        con,
        """SELECT count(*) AS failures, count(*) FILTER (WHERE no_return_checked) AS checked,
                  count(point_of_no_return) AS with_step FROM failures""",
    )
    assert {k: ponr[k] for k in expected} == expected
    assert 0 < ponr["plotted"] <= ponr["with_step"] <= ponr["checked"] <= ponr["failures"]
    for hist in (ponr["fraction"], ponr["steps_after"]):
        assert sum(sum(c) for c in hist["by_agent"].values()) == ponr["plotted"]


def test_the_data_are_json(con):
    data = report_data(con)
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert [q["name"] for q in data["queries"]] == list(queries.CANNED)


def test_canned_queries_are_run_on_the_warehouse(con):
    data = report_data(con)
    assert [q["name"] for q in data["queries"]] == list(queries.CANNED) and queries.CANNED
    for entry in data["queries"]:
        columns, rows = queries.run(con, entry["name"])
        assert entry["error"] is None
        assert entry["columns"] == list(columns)
        assert entry["rows"] == [[jsonable(v) for v in r] for r in rows[:MAX_TABLE_ROWS]]
        assert entry["row_count"] == len(rows) and rows  # the fixture gives each query rows
        assert entry["title"] == queries.CANNED[entry["name"]].title


def test_the_pngs_are_pngs(rendered):
    pngs = sorted((rendered.parent / "png").iterdir())
    assert [p.stem for p in pngs] == sorted(PLOTS)
    for png in pngs:
        data = png.read_bytes()
        assert data.startswith(PNG_MAGIC)
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert 600 <= width <= 1400 and 300 <= height <= 1400, (png.name, width, height)


def test_rendering_is_deterministic(con, tmp_path):
    a = render_report(con, tmp_path / "a.html").read_bytes()
    b = render_report(con, tmp_path / "b.html").read_bytes()
    assert a == b


# --- the page in a browser ---------------------------------------------------------------------


def test_the_report_renders_with_every_plot_loaded(rendered, con, open_page):
    page = open_page(rendered)
    assert page.title() == "Fixture <report>"  # escaped in the source, shown as text
    images = page.eval_on_selector_all(
        "img",
        "els => els.map(e => ({plot: e.dataset.plot, complete: e.complete,"
        " w: e.naturalWidth, h: e.naturalHeight, shown: e.getBoundingClientRect().width}))",
    )
    assert sorted(i["plot"] for i in images) == sorted(PLOTS)
    for image in images:
        assert image["complete"] and image["w"] > 0 and image["h"] > 0, image
        assert image["shown"] > 300, image  # laid out at a readable size, not squashed
    assert not page.query_selector_all(".nodata[data-plot]")
    assert not page.query_selector_all(".error")


def test_the_tables_show_the_sql_numbers(rendered, con, open_page):
    page = open_page(rendered)
    data = report_data(con)
    cards = {
        c["key"]: json.loads(c["value"])
        for c in page.eval_on_selector_all(
            ".card", "els => els.map(e => ({key: e.dataset.key, value: e.dataset.value}))"
        )
    }
    for key, value in data["headline"].items():
        assert close(cards[key], value), key
    rate = page.inner_text(".card[data-key=success_rate] .value")
    assert rate == f"{100 * data['headline']['success_rate']:.1f}%"

    rows = page.eval_on_selector_all(
        "table[data-table=by-agent] tbody tr",
        "trs => trs.map(tr => Object.fromEntries([...tr.cells].map("
        "td => [td.dataset.key, [td.dataset.value, td.innerText]])))",
    )
    expected = {
        r["agent"]: r
        for r in sql(
            con,
            f"""SELECT coalesce(agent, '{UNNAMED}') AS agent, count(*) AS episodes,
                       avg(total_return) FILTER (WHERE outcome IS NOT NULL) AS mean_return
                FROM episodes GROUP BY 1""",
        )
    }
    assert len(rows) == len(expected)
    for row in rows:
        agent = row["agent"][1]
        assert json.loads(row["episodes"][0]) == expected[agent]["episodes"]
        assert close(json.loads(row["mean_return"][0]), expected[agent]["mean_return"])
        assert row["mean_return"][1] == f"{expected[agent]['mean_return']:.2f}"

    for table in ("success-by-chaos", "failure-taxonomy"):
        assert page.query_selector_all(f"table[data-table={table}] tbody tr")
    taxonomy_rows = page.eval_on_selector_all(
        "table[data-table=failure-taxonomy] tbody tr",
        "trs => trs.map(tr => [tr.cells[0].innerText, Number(tr.cells[2].dataset.value)])",
    )
    assert dict(taxonomy_rows) == {r["label"]: r["failures"] for r in data["failure_taxonomy"]}


def test_the_canned_query_tables_are_there(rendered, con, open_page):
    page = open_page(rendered)
    sections = page.eval_on_selector_all(
        "section.query",
        "els => els.map(s => ({name: s.dataset.query, title: s.querySelector('h3').innerText,"
        " rows: s.querySelectorAll('tbody tr').length,"
        " first: s.querySelector('tbody tr') ?"
        " [...s.querySelector('tbody tr').cells].map(td => JSON.parse(td.dataset.value)) : null}))",
    )
    assert [s["name"] for s in sections] == list(queries.CANNED)
    for section in sections:
        assert section["title"] == queries.CANNED[section["name"]].title
        _, rows = queries.run(con, section["name"])
        assert section["rows"] == min(len(rows), MAX_TABLE_ROWS) > 0
        assert section["first"] == [jsonable(v) for v in rows[0]]


def test_an_empty_warehouse_renders_with_notes(tmp_path, open_page):
    path = empty_warehouse(tmp_path / "empty.duckdb")
    con = duckdb.connect(str(path), read_only=True)
    try:
        data = report_data(con)
        out = render_report(con, tmp_path / "empty.html", png_dir=tmp_path / "png")
    finally:
        con.close()
    assert data["headline"]["episodes"] == 0 and data["headline"]["success_rate"] is None
    json.dumps(data, allow_nan=False)
    assert not list((tmp_path / "png").iterdir())
    page = open_page(out)
    assert page.query_selector_all("img") == []
    notes = page.eval_on_selector_all(".nodata[data-plot]", "els => els.map(e => e.dataset.plot)")
    assert sorted(notes) == sorted(PLOTS)
    text = page.inner_text("body")
    assert "No episodes in the warehouse yet" in text and "no data" in text
    assert page.inner_text(".card[data-key=success_rate] .value") == "—"


def test_no_point_of_no_return_yet_is_a_note(tmp_path, open_page):
    path = tmp_path / "wh.duckdb"
    fill_warehouse(path, instances=4)
    writer = duckdb.connect(str(path))
    writer.execute("UPDATE failures SET point_of_no_return = NULL, no_return_checked = false")
    writer.close()
    con = duckdb.connect(str(path), read_only=True)
    out = render_report(con, tmp_path / "r.html")
    con.close()
    page = open_page(out)
    plotted = page.eval_on_selector_all("img", "els => els.map(e => e.dataset.plot)")
    assert "point_of_no_return" not in plotted and len(plotted) == 3
    note = page.inner_text(".nodata[data-plot=point_of_no_return]")
    assert "No point of no return computed yet" in note


def test_values_are_escaped(tmp_path, open_page):
    path = tmp_path / "wh.duckdb"
    fill_warehouse(path, instances=4)
    hostile = "<script>window.__pwned = 1</script><img src=x onerror='window.__pwned = 2'>"
    writer = duckdb.connect(str(path))
    writer.execute("UPDATE episodes SET agent = ? WHERE agent = 'random'", [hostile])
    writer.execute("UPDATE taxonomy SET description = ? WHERE label = 'wrong_data'", [hostile])
    writer.close()
    con = duckdb.connect(str(path), read_only=True)
    out = render_report(con, tmp_path / "r.html", title=hostile)
    con.close()
    source = out.read_text()
    # The one script is the report's own (it opens a canned query's section from its link).
    assert source.count("<script") == 1 and "__pwned" not in source.split("<script")[1]
    assert "&lt;script&gt;" in source
    page = open_page(out)
    assert page.evaluate("window.__pwned") is None
    assert page.title() == hostile
    agents = page.eval_on_selector_all(
        "table[data-table=by-agent] tbody tr td:first-child", "tds => tds.map(td => td.innerText)"
    )
    assert hostile in agents
