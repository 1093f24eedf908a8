"""The replay viewer in a real browser: headless Chromium (the system's, driven by Playwright)
against a real server holding real episodes. It filters the list, steps through a timeline with
the keyboard, checks the world diff and the milestones against the API, forks, and runs the
commands the page offers to continue the fork.

Needs Chromium at /usr/bin/chromium (`apt-get install -y chromium`; `.ci/run` does it) and the
`playwright` package (a dev extra); browsers are never downloaded. Without them the tests skip,
unless COMPANYOS_REQUIRE_BROWSER is set (as `.ci/run` does once Chromium is installed): then
they fail, so that CI cannot pass by silently skipping.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from companyos.agents import RandomAgent, in_process_oracle, play
from companyos.analytics.no_return import point_of_no_return
from companyos.api import CompanyOSEnvironment
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.projections.mistakes import decisive as diagnose

from .serving import running_server

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("COMPANYOS_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 15_000

# (agent, scenario, difficulty, seed): successes and timeouts over every family and difficulty.
PLAYS = [
    ("oracle", "vendor_onboarding", 3, 10),
    ("oracle", "expense_report", 2, 11),
    ("oracle", "license_renewal", 0, 13),
    ("random", "bug_escalation", 3, 22),
    ("random", "vendor_onboarding", 1, 20),
]


def unavailable(reason: str) -> None:
    if os.environ.get("COMPANYOS_REQUIRE_BROWSER"):
        pytest.fail(f"browser test required but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("viewer") / "events.db"
    store = SQLEventStore(sqlite_url(path))
    env = CompanyOSEnvironment(store)
    for agent, scenario, difficulty, seed in PLAYS:
        policy = in_process_oracle(env) if agent == "oracle" else RandomAgent(seed)
        play(env, policy, seed=seed, task_id=scenario, difficulty=difficulty)
    store.close()
    return path


@pytest.fixture(scope="module")
def server(db) -> Iterator[str]:
    with running_server(f"sqlite:///{db}", log=db.parent / "server.log") as url:
        yield url


@pytest.fixture(scope="module")
def api(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed (pip install -e '.[dev]')")
    if not Path(CHROMIUM).exists():
        unavailable(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        try:
            context = pw.chromium.launch_persistent_context(
                str(profile),
                executable_path=CHROMIUM,
                args=ARGS,
                headless=True,
                viewport={"width": 1440, "height": 1000},
            )
        except Exception as exc:  # a broken install: say so instead of a stack of CDP noise
            unavailable(f"Chromium at {CHROMIUM} did not start: {exc}")
        context.set_default_timeout(TIMEOUT_MS)
        yield context
        context.close()


@pytest.fixture
def problems() -> list[str]:
    """Script errors and failed requests of the test's tab (a test that expects one clears it)."""
    return []


@pytest.fixture
def page(browser, problems) -> Iterator[Any]:
    """A fresh tab that fails the test on any script error or failed request."""
    tab = browser.new_page()
    tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    tab.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    yield tab
    tab.close()
    assert not problems, problems


def episodes(api: httpx.Client, **filters: Any) -> list[dict[str, Any]]:
    """As the viewer lists them: newest first."""
    params = {"limit": 200, "order": "newest", **filters}
    return api.get("/episodes", params=params).json()["episodes"]


def rows(page: Any) -> list[str]:
    page.wait_for_function("document.querySelector('#list-status').textContent !== 'loading\u2026'")
    return page.eval_on_selector_all(
        "#episodes tbody tr", "trs => trs.map(tr => tr.dataset.episodeId)"
    )


def shows(page: Any, expected: list[str]) -> list[str]:
    """The rows once the list shows ``expected`` (or after 10 s, whatever it shows): a filter
    changes the URL before its fetch lands, so reading the table at once can see the old list."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(
            """ids => document.querySelector('#list-status').textContent !== 'loading\u2026'
                && JSON.stringify([...document.querySelectorAll('#episodes tbody tr')]
                       .map(tr => tr.dataset.episodeId)) === JSON.stringify(ids)""",
            arg=expected,
            timeout=10_000,
        )
    return rows(page)


def selected(page: Any) -> int:
    return int(page.get_attribute("#step-list li.selected", "data-step"))


def fmt(x: float) -> str:
    """The page's number format: a sign, two decimals, a real minus."""
    return ("+" if x > 0 else "\u2212" if x < 0 else "") + f"{abs(x):.2f}"


# ---------------------------------------------------------------------------- the list


def test_the_list_filters_like_the_api(page, server, api):
    page.goto(f"{server}/")  # the server's address opens the viewer
    assert page.url.endswith("/viewer/#/") or page.url.endswith("/viewer/")
    every = [e["episode_id"] for e in episodes(api)]
    assert shows(page, every) == every and len(every) == len(PLAYS)

    page.select_option("#filters select[name=outcome]", "success")
    page.wait_for_url("**outcome=success*")
    successes = [e["episode_id"] for e in episodes(api, outcome="success")]
    assert shows(page, successes) == successes and len(successes) == 3

    page.fill("#filters input[name=agent]", "random")
    page.press("#filters input[name=agent]", "Enter")
    page.wait_for_url("**agent=random*")
    assert shows(page, []) == []  # the random agent never succeeds
    assert page.inner_text("#list-status") == "No episodes match these filters."

    page.click("#clear-filters")
    # Clearing re-renders the form from the (empty) URL: let it land before typing again.
    assert shows(page, every) == every
    page.fill("#filters input[name=scenario]", "vendor_onboarding")
    page.select_option("#filters select[name=difficulty]", "1")
    page.wait_for_url("**difficulty=1*")
    want = episodes(api, scenario="vendor_onboarding", difficulty=1)
    ids = [e["episode_id"] for e in want]
    assert shows(page, ids) == ids and len(want) == 1
    assert want[0]["agent"] == "random"

    page.reload()  # the filters live in the URL
    assert shows(page, ids) == ids
    assert page.input_value("#filters input[name=scenario]") == "vendor_onboarding"


# ---------------------------------------------------------------------------- a timeline


def open_episode(page: Any, server: str, episode_id: str, step: int | None = None) -> None:
    suffix = "" if step is None else f"/{step}"
    page.goto(f"{server}/viewer/#/episode/{episode_id}{suffix}")
    page.wait_for_selector("#step-list li.selected")


def test_stepping_through_a_timeline(page, server, api, tmp_path):
    oracle = episodes(api, agent="oracle", scenario="vendor_onboarding", difficulty=3)[0]
    eid = oracle["episode_id"]
    t = api.get(f"/episodes/{eid}/timeline").json()
    steps = t["steps"]

    page.goto(f"{server}/viewer/")
    page.click(f"#episodes tbody tr[data-episode-id='{eid}']")
    page.wait_for_selector("#step-list li.selected")
    assert page.locator("#step-list li").count() == len(steps) + 1
    assert selected(page) == 0
    assert t["episode"]["task"] in page.inner_text("#episode-head")

    # The keyboard walks the steps; each shows what the API says about it.
    for s in steps:
        page.keyboard.press("ArrowDown" if s["step"] % 2 else "j")
        assert selected(page) == s["step"]
        assert (
            page.inner_text(".step-title .callname") == f"{s['call']['app']}.{s['call']['method']}"
        )
        assert page.inner_text("#result-message") == s["message"]
        assert page.inner_text("#return-so-far") == fmt(s["return"])
        assert page.locator("#changes li").count() == len(s["changes"])
        assert page.url.endswith(f"/{s['step']}")
        for m in s["gained"]:
            assert page.locator(f"#milestones .chip.gained[data-milestone='{m}']").count() == 1
        gained_here = page.eval_on_selector_all(
            "#milestones .chip.gained", "cs => cs.map(c => c.dataset.milestone)"
        )
        assert sorted(gained_here) == sorted(s["gained"])
        done = page.eval_on_selector_all(
            "#milestones .chip.done", "cs => cs.map(c => c.dataset.milestone)"
        )
        assert sorted(done) == sorted(m for m, ok in s["progress"].items() if ok)
    page.keyboard.press("ArrowDown")  # past the end: stays on the last step
    assert selected(page) == len(steps)
    page.keyboard.press("Home")
    assert selected(page) == 0
    page.keyboard.press("End")
    assert selected(page) == len(steps)
    assert page.locator("#step-list li.selected").inner_text().count("\n") >= 1

    # The step that set the priority: the changed field is highlighted with old and new value.
    k = next(s["step"] for s in steps if "ticket_priority" in s["gained"])
    page.keyboard.press("Home")
    for _ in range(k):
        page.keyboard.press("ArrowRight")
    assert selected(page) == k
    tid = next(
        c["path"][2]
        for c in steps[k - 1]["changes"]
        if c["path"][:2] == ["ticketdesk", "tickets"] and c["path"][-1] == "priority"
    )
    path = json.dumps(["ticketdesk", "tickets", tid, "priority"], separators=(",", ":"))
    cell = page.locator(f"#world span.changed[data-path='{path}']")
    assert cell.count() == 1
    assert cell.locator("del").inner_text() == "null" and cell.locator("ins").inner_text() == "high"
    ticket = json.dumps(["ticketdesk", "tickets", tid], separators=(",", ":"))
    record = page.locator(f"#world details.record[data-path='{ticket}']")
    assert record.get_attribute("open") is not None and "within" in record.get_attribute("class")
    # Unchanged records stay folded, and "only what changed" hides them.
    folded = page.locator("#world details.record.same")
    assert folded.count() > 0 and folded.first.get_attribute("open") is None
    page.check("#only-changed")
    assert not folded.first.is_visible() and record.is_visible()
    page.uncheck("#only-changed")

    # Faults and chaos are marked in the step list where the API puts them.
    for s in steps:
        li = page.locator(f"#step-list li[data-step='{s['step']}']")
        assert li.locator(".mark.fault").count() == (1 if s["faults"] else 0)
        assert li.locator(".mark.chaos").count() == (1 if s["chaos"] else 0)
    page.screenshot(path=str(tmp_path / "viewer-timeline.png"), full_page=True)


def test_faults_show_on_their_step(page, server, api):
    """At least one played episode had a transient fault; its step says so in the detail."""
    found = None
    for e in episodes(api):
        for s in api.get(f"/episodes/{e['episode_id']}/timeline").json()["steps"]:
            if s["faults"]:
                found = (e["episode_id"], s)
                break
        if found:
            break
    assert found, "no played episode had a fault: pick seeds that give one"
    eid, s = found
    open_episode(page, server, eid, s["step"])
    assert selected(page) == s["step"]
    shown = page.eval_on_selector_all(
        "#detail .chaos-list li.fault", "ls => ls.map(l => l.textContent)"
    )
    assert shown == [f"fault {f['app']}.{f['method']}: {f['kind']}" for f in s["faults"]]
    assert page.locator(f"#step-list li[data-step='{s['step']}'] .mark.fault").count() == 1
    assert page.inner_text(".errcode") == "service_unavailable"


def test_an_unknown_episode_says_so(page, server, problems):
    page.goto(f"{server}/viewer/#/episode/no-such-episode/3")
    page.wait_for_selector("#error:not([hidden])")
    assert "404" in page.inner_text("#error") and "no-such-episode" in page.inner_text("#error")
    assert "Could not load episode" in page.inner_text("#episode-head")
    assert problems and all("404" in p for p in problems)  # the failed fetch, logged
    problems.clear()
    page.click("#episode-head a")
    page.wait_for_selector("#episodes tbody tr")
    assert page.is_hidden("#error")


# ---------------------------------------------------------------------------- forking


def run(snippet: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_fork_at_a_step_and_continue_with_the_commands_shown(page, server, api):
    source = episodes(api, agent="oracle", scenario="expense_report")[0]["episode_id"]
    src = api.get(f"/episodes/{source}/timeline").json()["steps"]
    k = 1  # early enough that repeating the next call three times cannot finish the task
    open_episode(page, server, source, k)
    page.keyboard.press("f")
    page.wait_for_selector("#fork-id")
    new = page.get_attribute("#fork-id", "data-episode-id")
    assert new and new != source
    notice = page.locator("#notice")  # the key's answer, however far the page is scrolled
    assert notice.is_visible() and new in notice.inner_text()

    forked = api.get(f"/episodes/{new}")
    assert forked.status_code == 200
    assert (forked.json()["forked_from"], forked.json()["fork_step"]) == (source, k)
    assert forked.json()["steps"] == k and forked.json()["outcome"] is None

    # Each command continues the fork with the source's next call.
    python = page.inner_text("#cmd-python")
    generic = page.inner_text("#cmd-generic")
    curl = page.inner_text("#cmd-curl")
    assert new in python and new in generic and new in curl
    out = run(python)
    assert out.split()[0] == str(k + 1)
    out = run(generic)
    assert out.split()[0] == str(k + 2)
    expected = k + 2
    if shutil.which("curl") and shutil.which("bash"):
        shown = subprocess.run(["bash", "-c", curl], capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["observation"]["step"] == k + 3, shown.stdout
        expected = k + 3
    steps = api.get(f"/episodes/{new}/timeline").json()["steps"]
    assert len(steps) == expected
    assert steps[k]["call"] == src[k]["call"]  # the command replayed the source's next call
    assert steps[k]["message"] == src[k]["message"]

    # The page links to the fork, which says where it came from.
    page.click("#fork-result a")
    page.wait_for_function(f"location.hash.includes('{new}')")
    page.wait_for_selector(".lineage")
    assert source in page.inner_text(".lineage") and f"after step {k}" in page.inner_text(
        ".lineage"
    )
    assert page.locator("#step-list li").count() == expected + 1


def test_no_fork_after_the_end(page, server, api):
    done = episodes(api, outcome="success")[0]
    open_episode(page, server, done["episode_id"], done["steps"])
    assert page.is_disabled("#fork-button")
    page.keyboard.press("ArrowUp")
    assert page.is_enabled("#fork-button")
    assert (
        api.post(
            f"/episodes/{done['episode_id']}/fork", json={"at_step": done["steps"]}
        ).status_code
        == 400
    )


# ---------------------------------------------------------------------------- diagnosis


def test_failure_and_point_of_no_return_show_for_a_failed_episode(page, server, api, db):
    """The server works out the failure label and the point of no return of a failed episode
    from its log; the page shows both, marks their steps, and links to them. A success shows
    neither."""
    failed = episodes(api, outcome="timeout")[0]["episode_id"]
    store = SQLEventStore(sqlite_url(db))
    try:
        records = store.read(failed)
        mistake = diagnose(records)
        ponr = point_of_no_return(records)
    finally:
        store.close()
    assert mistake is not None and mistake.step is not None and ponr is not None
    open_episode(page, server, failed)
    page.wait_for_selector("#failure-label", timeout=TIMEOUT_MS)
    label = page.inner_text("#failure-label")
    assert mistake.label in label and f"step {mistake.step}" in label
    assert mistake.detail in page.inner_text("#failure-detail")
    where = "before step 1" if ponr == 0 else f"step {ponr}"
    assert where in page.inner_text("#ponr-label")
    assert page.locator(f"#step-list li[data-step='{mistake.step}'] .mark.failure").count() == 1
    if ponr:
        assert page.locator(f"#step-list li[data-step='{ponr}'] .mark.ponr").count() == 1
    page.click("#failure-label a")
    page.wait_for_function(f"location.hash.endsWith('/{mistake.step}')")
    page.wait_for_selector(
        f"#step-list li.selected[data-step='{mistake.step}']", timeout=TIMEOUT_MS
    )
    assert selected(page) == mistake.step

    success = episodes(api, outcome="success")[0]["episode_id"]
    open_episode(page, server, success)
    assert page.locator("#failure-label, #ponr-label").count() == 0
    assert page.locator(".mark.failure, .mark.ponr").count() == 0


# ---------------------------------------------------------------------------- the picture


def test_screenshot(page, server, api, tmp_path):
    """A screenshot for people: the hardest oracle episode at the step that refreshed stale
    data. Set COMPANYOS_UPDATE_SCREENSHOT=1 to also write it to docs/viewer.png."""
    eid = episodes(api, agent="oracle", difficulty=3)[0]["episode_id"]
    steps = api.get(f"/episodes/{eid}/timeline").json()["steps"]
    k = next(s["step"] for s in steps if s["call"]["method"] == "refresh_data")
    open_episode(page, server, eid, k)
    page.wait_for_selector("#changes li")
    shot = tmp_path / "viewer.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
    if os.environ.get("COMPANYOS_UPDATE_SCREENSHOT"):
        (ROOT / "docs").mkdir(exist_ok=True)
        shutil.copyfile(shot, ROOT / "docs" / "viewer.png")
