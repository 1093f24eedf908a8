"""The report as an analyst reads it, in headless Chromium, with fifteen agents: the summary
(headline and every agent side by side) fits on the first screen, every agent has a colour of
its own, the family x difficulty and agent x family grids hold the SQL's success rates, each
failure label links example episodes to the replay viewer at the mistake's step, and the
canned queries sit closed behind links until one is opened.

Set COMPANYOS_SAVE_SCREENSHOT=docs/analytics_report.png to refresh the screenshot in docs/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote

import duckdb
import pytest

from companyos.analytics import queries
from companyos.analytics.report import render_report, report_data

from .analytics_fixtures import fill_warehouse
from .test_report import browser, open_page  # noqa: F401 - fixtures

AGENTS = 15
VIEWPORT = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> Path:
    """The fixture warehouse with its episodes spread over fifteen agents."""
    path = tmp_path_factory.mktemp("wide") / "warehouse.duckdb"
    fill_warehouse(path, instances=16)
    con = duckdb.connect(str(path))
    con.execute(
        f"UPDATE episodes SET agent = 'agent-' || lpad((hash(episode_id) % {AGENTS})::VARCHAR, "
        "2, '0')"
    )
    con.close()
    return path


@pytest.fixture(scope="module")
def page_file(wide, tmp_path_factory) -> Path:
    con = duckdb.connect(str(wide), read_only=True)
    out = render_report(
        con, tmp_path_factory.mktemp("html") / "report.html", viewer_url="http://v.test/viewer/"
    )
    con.close()
    return out


def test_the_summary_fits_the_first_screen_with_fifteen_agents(page_file, open_page):  # noqa: F811
    page = open_page(page_file)
    page.set_viewport_size(VIEWPORT)
    rows = page.eval_on_selector_all("table[data-table=by-agent] tbody tr", "trs => trs.length")
    assert rows == AGENTS
    bottom = page.eval_on_selector(
        "table[data-table=by-agent]", "t => t.getBoundingClientRect().bottom"
    )
    assert bottom <= VIEWPORT["height"], "the agents table runs past the first screen"
    colors = page.eval_on_selector_all(
        "table[data-table=by-agent] .swatch", "els => els.map(e => getComputedStyle(e).background)"
    )
    assert len(colors) == AGENTS == len(set(colors)), "two agents share a colour"
    if target := os.environ.get("COMPANYOS_SAVE_SCREENSHOT"):
        shot = page_file.parent / "shot.png"
        page.screenshot(path=str(shot), full_page=False)
        shutil.copyfile(shot, Path(__file__).resolve().parents[1] / target)


def test_the_grids_hold_the_success_rates(wide, page_file, open_page):  # noqa: F811
    page = open_page(page_file)
    con = duckdb.connect(str(wide), read_only=True)
    expected = {
        (f, str(d)): r
        for f, d, r in con.execute(
            "SELECT family, difficulty, avg(success::INT) FILTER (WHERE outcome IS NOT NULL) "
            "FROM episodes GROUP BY ALL"
        ).fetchall()
    }
    per_agent = {
        (a, f): r
        for a, f, r in con.execute(
            "SELECT agent, family, avg(success::INT) FILTER (WHERE outcome IS NOT NULL) "
            "FROM episodes GROUP BY ALL"
        ).fetchall()
    }
    con.close()
    for table, want in (("family-difficulty", expected), ("agent-family", per_agent)):
        cells = page.eval_on_selector_all(
            f"table[data-table={table}] td.heat[data-row]",
            "tds => tds.map(td => [td.dataset.row, td.dataset.col, JSON.parse(td.dataset.value)])",
        )
        got = {(r, c): v for r, c, v in cells}
        assert set(got) == set(want), table
        for key, value in want.items():
            assert got[key] == pytest.approx(value), (table, key)


def test_each_label_links_example_episodes_to_the_viewer(wide, page_file, open_page):  # noqa: F811
    page = open_page(page_file)
    con = duckdb.connect(str(wide), read_only=True)
    failures = {
        (e, s): label
        for e, s, label in con.execute("SELECT episode_id, step, label FROM failures").fetchall()
    }
    labelled = {label for (label,) in con.execute("SELECT DISTINCT label FROM failures").fetchall()}
    con.close()
    links = page.eval_on_selector_all(
        "table[data-table=failure-taxonomy] tbody tr",
        "trs => trs.map(tr => [tr.cells[0].innerText,"
        " [...tr.querySelectorAll('td.examples a')].map(a => a.href)])",
    )
    seen = set()
    for label, hrefs in links:
        if label in labelled:
            assert 1 <= len(hrefs) <= 3, label
        for href in hrefs:
            assert href.startswith("http://v.test/viewer/#/episode/")
            tail = href.split("#/episode/", 1)[1].split("/")
            episode, step = unquote(tail[0]), int(tail[1]) if len(tail) > 1 else None
            assert failures[(episode, step)] == label  # the episode failed so, at that step
            seen.add(label)
    assert seen == labelled


def test_canned_queries_are_behind_links(page_file, open_page):  # noqa: F811
    page = open_page(page_file)
    links = page.eval_on_selector_all("a.query-link", "els => els.map(a => a.dataset.query)")
    assert links == list(queries.CANNED)
    # Closed: none of their rows is laid out until asked for.
    shown = page.eval_on_selector_all(
        "section.query tbody tr", "trs => trs.filter(tr => tr.checkVisibility()).length"
    )
    assert shown == 0
    name = links[0]
    page.click(f"a.query-link[data-query={name}]")
    page.wait_for_function(f"document.getElementById('query-{name}').open")
    opened = page.eval_on_selector(
        f"section.query[data-query={name}]",
        "s => [...s.querySelectorAll('tbody tr')].filter(tr => tr.checkVisibility()).length",
    )
    assert opened > 0


def test_the_report_data_carry_the_new_sections(wide):
    con = duckdb.connect(str(wide), read_only=True)
    data = report_data(con)
    con.close()
    assert {r["agent"] for r in data["by_agent"]} == {f"agent-{i:02d}" for i in range(AGENTS)}
    for r in data["by_agent"]:
        assert r["failures"] >= 0
        mine = [x for x in data["failure_taxonomy_by_agent"] if x["agent"] == r["agent"]]
        if mine:
            top = max(x["failures"] for x in mine)
            assert r["top_label"] in {x["label"] for x in mine if x["failures"] == top}
    assert sum(r["episodes"] for r in data["by_family_difficulty"]) == data["headline"]["episodes"]
