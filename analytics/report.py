"""The analytics report: headline numbers, the canned queries' tables and PNG plots, as one
self-contained HTML file (`render_report`, for ``companyos analyze --report out.html``) or as
JSON-ready data (`report_data`, for ``GET /analytics/report?format=json``).

Everything is computed by SQL on the warehouse (the connection given), once, in
`report_data`; the HTML and the plots are drawn from that same dictionary, so the pictures,
the tables and the JSON cannot disagree. The plots are embedded as base64 PNG data URIs: the
report is one file that can be mailed, attached to a CI run or moved anywhere. Every value
that reaches the page is HTML-escaped (agent names and query results are data, not markup).

Definitions used throughout: an episode has *ended* when its outcome is set; success rates,
mean returns and mean steps are over ended episodes (running ones are counted apart); an
episode without an agent name is shown as ``(not named)``.
"""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb
import numpy as np

from . import plots, queries
from .sandbox import jsonable

__all__ = ["MAX_TABLE_ROWS", "UNNAMED", "render_report", "report_data"]

UNNAMED = "(not named)"
NO_CHAOS = "(no chaos)"
VIEWER_URL = "/viewer/"
"""Where example episodes link to by default: the replay viewer of the server serving it."""
MAX_TABLE_ROWS = 100
"""Rows of each canned query kept in the report (a report is read, not scrolled through)."""
EXAMPLES_PER_LABEL = 3
"""Failed episodes linked to the replay viewer under each label."""
MIN_RETURN_BINS = 15
MAX_RETURN_BINS = 40

_AGENT = f"coalesce(agent, '{UNNAMED}')"


# --- the data ----------------------------------------------------------------------------------


def report_data(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Everything the report shows, JSON-ready (no NaN: missing figures are None)."""
    # A cursor of its own: the caller's connection may be in use by another thread (the
    # server's warehouse), and a DuckDB connection is not to be shared across threads.
    cur = con.cursor()
    try:
        by_agent = _by_agent(cur)
        agents = [r["agent"] for r in by_agent]
        by_label = _records(
            cur,
            f"""SELECT f.label, {_AGENT} AS agent, count(*) AS failures
                FROM failures f JOIN episodes e USING (episode_id)
                GROUP BY ALL ORDER BY f.label, agent""",
        )
        top: dict[str, tuple[int, str]] = {}
        for r in by_label:  # the most frequent label, the first by name among equals
            best = top.get(r["agent"])
            if best is None or r["failures"] > best[0]:
                top[r["agent"]] = (r["failures"], r["label"])
        for r in by_agent:
            r["top_label"] = top[r["agent"]][1] if r["agent"] in top else None
        return {
            "checkpoint": _scalar(cur, "SELECT max(position) FROM checkpoint"),
            "headline": _headline(cur),
            "by_agent": by_agent,
            "returns": _returns(cur, agents),
            "success_by_chaos": _success_by_chaos(cur),
            "failure_taxonomy": _taxonomy(cur),
            "failure_taxonomy_by_agent": by_label,
            "point_of_no_return": _point_of_no_return(cur, agents),
            "by_family_difficulty": _records(
                cur,
                """SELECT family, difficulty, count(*) AS episodes,
                          avg(success::INTEGER) FILTER (WHERE outcome IS NOT NULL) AS success_rate
                   FROM episodes GROUP BY ALL ORDER BY family, difficulty""",
            ),
            "by_agent_family": _records(
                cur,
                f"""SELECT {_AGENT} AS agent, family, count(*) AS episodes,
                           avg(success::INTEGER) FILTER (WHERE outcome IS NOT NULL)
                               AS success_rate
                    FROM episodes GROUP BY ALL ORDER BY agent, family""",
            ),
            "label_examples": _records(
                cur,
                f"""SELECT label, episode_id, agent, step FROM (
                        SELECT f.label, f.episode_id, {_AGENT} AS agent, f.step,
                               row_number() OVER (PARTITION BY f.label
                                                  ORDER BY e.agent NULLS LAST, f.episode_id) AS k
                        FROM failures f JOIN episodes e USING (episode_id))
                    WHERE k <= {EXAMPLES_PER_LABEL} ORDER BY label, k""",
            ),
            "queries": _canned(cur),
        }
    finally:
        cur.close()


def _headline(cur: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    (row,) = _records(
        cur,
        """SELECT count(*) AS episodes,
                  count(outcome) AS ended,
                  count(*) - count(outcome) AS running,
                  count(*) FILTER (WHERE success) AS successes,
                  avg(success::INTEGER) FILTER (WHERE outcome IS NOT NULL) AS success_rate,
                  avg(total_return) FILTER (WHERE outcome IS NOT NULL) AS mean_return,
                  avg(steps) FILTER (WHERE outcome IS NOT NULL) AS mean_steps
           FROM episodes""",
    )
    row["failures"] = _scalar(cur, "SELECT count(*) FROM failures")
    return row


def _by_agent(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    return _records(
        cur,
        f"""SELECT {_AGENT} AS agent,
                   count(*) AS episodes,
                   count(outcome) AS ended,
                   count(*) FILTER (WHERE success) AS successes,
                   avg(success::INTEGER) FILTER (WHERE outcome IS NOT NULL) AS success_rate,
                   avg(total_return) FILTER (WHERE outcome IS NOT NULL) AS mean_return,
                   avg(steps) FILTER (WHERE outcome IS NOT NULL) AS mean_steps,
                   count(f.episode_id) AS failures
            FROM episodes LEFT JOIN failures f USING (episode_id)
            GROUP BY ALL ORDER BY episodes DESC, agent""",
    )


def _returns(cur: duckdb.DuckDBPyConnection, agents: Sequence[str]) -> dict[str, Any]:
    """Shared histogram bins over every ended episode's return, and each agent's counts."""
    rows = cur.execute(
        f"SELECT {_AGENT}, total_return FROM episodes WHERE outcome IS NOT NULL"
    ).fetchall()
    values = np.array([r[1] for r in rows], dtype=float)
    if not len(values):
        return {"episodes": 0, "edges": [], "by_agent": {}}
    # numpy's automatic choice, but never coarser than MIN_RETURN_BINS (few episodes make
    # a handful of wide bins that hide the shape) nor finer than MAX_RETURN_BINS.
    auto = len(np.histogram_bin_edges(values, bins="auto")) - 1
    edges = np.histogram_bin_edges(values, bins=min(MAX_RETURN_BINS, max(MIN_RETURN_BINS, auto)))
    by_agent: dict[str, list[int]] = {}
    for agent in agents:
        mine = np.array([r[1] for r in rows if r[0] == agent], dtype=float)
        if len(mine):
            by_agent[agent] = [int(c) for c in np.histogram(mine, bins=edges)[0]]
    return {"episodes": len(values), "edges": [float(e) for e in edges], "by_agent": by_agent}


def _success_by_chaos(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    # An episode counts once under each kind present (a set: list_distinct), and under
    # "(no chaos)" when none was.
    return _records(
        cur,
        f"""WITH ended AS (
                SELECT {_AGENT} AS agent, list_distinct(chaos_kinds) AS kinds, success
                FROM episodes WHERE outcome IS NOT NULL
            ), per_kind AS (
                SELECT unnest(kinds) AS chaos_kind, agent, success FROM ended
                UNION ALL
                SELECT '{NO_CHAOS}', agent, success FROM ended WHERE len(kinds) = 0
            )
            SELECT chaos_kind, agent, count(*) AS episodes,
                   count(*) FILTER (WHERE success) AS successes,
                   avg(success::INTEGER) AS success_rate
            FROM per_kind GROUP BY chaos_kind, agent
            ORDER BY chaos_kind <> '{NO_CHAOS}', chaos_kind, agent""",
    )


def _taxonomy(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    # Every label defined (with zero when unseen) and any label found but not defined.
    return _records(
        cur,
        """WITH counted AS (SELECT label, count(*) AS failures FROM failures GROUP BY label),
                labels AS (SELECT label FROM taxonomy UNION SELECT label FROM counted)
           SELECT l.label,
                  coalesce((SELECT any_value(t.description) FROM taxonomy t
                            WHERE t.label = l.label), '') AS description,
                  coalesce(c.failures, 0) AS failures,
                  coalesce(c.failures, 0) / nullif((SELECT count(*) FROM failures), 0) AS share
           FROM labels l LEFT JOIN counted c USING (label)
           ORDER BY failures DESC, l.label""",
    )


def _point_of_no_return(cur: duckdb.DuckDBPyConnection, agents: Sequence[str]) -> dict[str, Any]:
    """How many failures have their point of no return computed, and two histograms of those
    that have one: its place as a fraction of the episode's steps, and the steps after it."""
    counts = _records(
        cur,
        """SELECT count(*) AS failures,
                  count(*) FILTER (WHERE no_return_checked) AS checked,
                  count(point_of_no_return) AS with_step,
                  count(*) FILTER (WHERE no_return_checked AND point_of_no_return IS NULL)
                      AS no_step
           FROM failures""",
    )[0]
    rows = cur.execute(
        f"""SELECT {_AGENT}, f.point_of_no_return, e.steps
            FROM failures f JOIN episodes e USING (episode_id)
            WHERE f.point_of_no_return IS NOT NULL AND e.steps > 0"""
    ).fetchall()
    fraction_edges = [round(i / 10, 1) for i in range(11)]
    after = [max(0, steps - p) for _, p, steps in rows]
    top = max(after, default=0)
    # Whole steps: one bin per step count while that stays readable, wider bins beyond.
    width = max(1, math.ceil((top + 1) / 30))
    after_edges = [float(i) - 0.5 for i in range(0, top + width + 1, width)]
    fraction: dict[str, list[int]] = {}
    steps_after: dict[str, list[int]] = {}
    for agent in agents:
        mine = [(p, steps) for a, p, steps in rows if a == agent]
        if mine:
            fr = [min(1.0, p / steps) for p, steps in mine]
            fraction[agent] = [int(c) for c in np.histogram(fr, bins=fraction_edges)[0]]
            gaps = [max(0, steps - p) for p, steps in mine]
            steps_after[agent] = [int(c) for c in np.histogram(gaps, bins=after_edges)[0]]
    mean_fraction = sum(min(1.0, p / steps) for _, p, steps in rows) / len(rows) if rows else None
    return {
        **counts,
        "plotted": len(rows),
        "mean_fraction": mean_fraction,
        "mean_steps_after": sum(after) / len(after) if after else None,
        "fraction": {"edges": fraction_edges, "by_agent": fraction},
        "steps_after": {"edges": after_edges, "by_agent": steps_after},
    }


def _canned(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every canned query (``queries.CANNED``) run on the warehouse; one that fails is shown
    with its error rather than sinking the whole report."""
    out: list[dict[str, Any]] = []
    for name, query in queries.CANNED.items():
        entry: dict[str, Any] = {
            "name": name,
            "title": query.title,
            "description": query.description,
            "sql": query.sql,
        }
        try:
            columns, rows = queries.run(cur, name)
        except duckdb.Error as e:
            entry.update(columns=[], rows=[], row_count=0, truncated=False, error=str(e))
        else:
            entry.update(
                columns=list(columns),
                rows=[[jsonable(v) for v in row] for row in rows[:MAX_TABLE_ROWS]],
                row_count=len(rows),
                truncated=len(rows) > MAX_TABLE_ROWS,
                error=None,
            )
        out.append(entry)
    return out


def _records(cur: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cur.execute(sql)
    names = [d[0] for d in cur.description or []]
    return [{k: jsonable(v) for k, v in zip(names, row, strict=True)} for row in cur.fetchall()]


def _scalar(cur: duckdb.DuckDBPyConnection, sql: str) -> Any:
    # fetchall, not fetchone: DuckDB 2 keeps a connection busy until its result is drained.
    rows = cur.execute(sql).fetchall()
    return jsonable(rows[0][0]) if rows else None


# --- the page ----------------------------------------------------------------------------------


def render_report(
    con: duckdb.DuckDBPyConnection,
    out_path: Path,
    *,
    title: str = "CompanyOS trajectory analytics",
    png_dir: Path | None = None,
    viewer_url: str = VIEWER_URL,
    freshness: Callable[[int], Any] | None = None,
) -> Path:
    """Write the HTML report to ``out_path`` (its folder is created) and return the path. With
    ``png_dir``, each plot is also written there as a PNG file (the page still embeds them).
    Example episodes link to ``viewer_url`` (the replay viewer; the server's by default).
    ``freshness``, given the checkpoint, says how fresh that is (`service.Freshness`)."""
    data = report_data(con)
    if freshness is not None:
        data["freshness"] = freshness(data["checkpoint"] or 0).to_dict()
    pngs = _plots(data)
    if png_dir is not None:
        png_dir.mkdir(parents=True, exist_ok=True)
        for name, png in pngs.items():
            if png is not None:
                (png_dir / f"{name}.png").write_bytes(png)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(_page(title, data, pngs, viewer_url), encoding="utf-8")
    return out_path


def _plots(data: Mapping[str, Any]) -> dict[str, bytes | None]:
    agents = [r["agent"] for r in data["by_agent"]]
    colors = plots.agent_colors(agents)
    returns = data["returns"]
    chaos = data["success_by_chaos"]
    seen = [r for r in data["failure_taxonomy"] if r["failures"]]
    ponr = data["point_of_no_return"]
    return {
        "returns": (
            plots.returns_histogram(
                returns["edges"],
                returns["by_agent"],
                {r["agent"]: r["mean_return"] for r in data["by_agent"]},
                colors,
            )
            if returns["episodes"]
            else None
        ),
        "success_by_chaos": plots.success_by_chaos(chaos, agents, colors) if chaos else None,
        "failure_taxonomy": (
            plots.failure_taxonomy(
                [r["label"] for r in seen], data["failure_taxonomy_by_agent"], agents, colors
            )
            if seen
            else None
        ),
        "point_of_no_return": plots.point_of_no_return(ponr, colors) if ponr["plotted"] else None,
    }


_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d1d1f;
       max-width: 1200px; margin: 1.2em auto; padding: 0 1.2em; }
h1 { font-size: 1.6em; margin: 0 0 0.1em; }
h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
h3 { margin-top: 1.4em; }
nav { margin: 0.4em 0 0.8em; font-size: 0.9em; }
nav a { margin-right: 1em; }
.sub, .note, .nodata { color: #555; }
.nodata { font-style: italic; }
.error { color: #a00; }
.cards { display: flex; flex-wrap: wrap; gap: 0.6em; margin: 0.6em 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 0.35em 0.8em; min-width: 7em; }
.card .value { font-size: 1.3em; font-weight: 600; }
.card .label { color: #555; font-size: 0.8em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.88em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; vertical-align: top; }
th { background: #f4f4f6; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.long { min-width: 22em; }
td.heat { text-align: center; font-variant-numeric: tabular-nums; min-width: 3.5em; }
.scroll { overflow-x: auto; max-width: 100%; }
td.null { color: #999; text-align: center; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 2px;
          margin-right: 0.4em; vertical-align: -0.05em; }
.bar { display: inline-block; height: 0.7em; background: #4c78a8; vertical-align: 0; }
td.barcell { width: 64px; border-left: none; }
.examples a { font-family: ui-monospace, monospace; font-size: 0.85em; margin-right: 0.6em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
details summary { cursor: pointer; color: #245; }
pre { background: #f6f6f8; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
ul.queries { columns: 2; padding-left: 1.2em; }
.legend { font-size: 0.85em; color: #444; }
"""


def _heat(rate: float | None) -> str:
    """A cell background for a success rate: red (0) through yellow to green (1), light enough
    for black text; grey when there is no rate. Same scale in every matrix (see the legend)."""
    if rate is None:
        return "#f0f0f0"
    hue = 120 * max(0.0, min(1.0, rate))
    return f"hsl({hue:.0f}, 70%, 82%)"


def _page(
    title: str, data: Mapping[str, Any], pngs: Mapping[str, bytes | None], viewer_url: str
) -> str:
    h = data["headline"]
    e = html.escape
    agents = [r["agent"] for r in data["by_agent"]]
    colors = plots.agent_colors(agents)
    fresh = data.get("freshness")
    lag = ""
    if fresh is not None and fresh.get("lag_events"):
        lag = f" ({fresh['lag_events']:,} events behind the log: still catching up)"
    parts: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f'<p class="sub">Warehouse loaded up to event position '
        f'<span id="checkpoint">{e(_fmt(data["checkpoint"]))}</span>{e(lag)}. Rates, mean '
        "returns and mean steps are over ended episodes; running episodes are counted apart.</p>",
        '<nav><a href="#summary">Summary</a><a href="#families">Families and difficulty</a>'
        '<a href="#labels">Why episodes failed</a><a href="#plots">Plots</a>'
        '<a href="#queries">Canned queries</a></nav>',
        '<section id="summary"><h2 id="headline">Summary</h2>',
    ]
    if not h["episodes"]:
        parts.append('<p class="nodata">No episodes in the warehouse yet: no data.</p>')
    cards = [
        ("episodes", "episodes", h["episodes"], _fmt),
        ("ended", "ended", h["ended"], _fmt),
        ("running", "still running", h["running"], _fmt),
        ("successes", "successes", h["successes"], _fmt),
        ("success_rate", "success rate", h["success_rate"], _pct),
        ("mean_return", "mean return", h["mean_return"], _num),
        ("mean_steps", "mean steps", h["mean_steps"], _num),
        ("failures", "failures labelled", h["failures"], _fmt),
    ]
    parts.append('<div class="cards">')
    for key, label, value, fmt in cards:
        parts.append(
            f'<div class="card" data-key="{key}" data-value="{_attr(value)}">'
            f'<div class="value">{e(fmt(value))}</div><div class="label">{e(label)}</div></div>'
        )
    parts.append("</div>")
    parts.append('<h3 id="by-agent">Agents side by side</h3>')
    parts.append(
        '<p class="legend">Each agent keeps its colour in every table and plot of this '
        "report. The bar is the success rate.</p>"
    )
    parts.append(_agents_table(data["by_agent"], colors))
    parts.append("</section>")

    parts.append('<section id="families"><h2>Families and difficulty</h2>')
    parts.append(
        '<p class="legend">Success rate of ended episodes; cell colour from red (0%) through '
        "yellow to green (100%), grey: no ended episode.</p>"
    )
    parts.append(
        _matrix(
            "family-difficulty",
            data["by_family_difficulty"],
            "family",
            "difficulty",
            "family \\ difficulty",
        )
    )
    parts.append('<h3 id="agent-family">Per agent and family</h3>')
    parts.append(
        _matrix("agent-family", data["by_agent_family"], "agent", "family", "agent", colors)
    )
    parts.append("</section>")

    parts.append('<section id="labels"><h2>Why episodes failed</h2>')
    parts.append(
        '<p class="legend">Each failed episode\'s label, with up to '
        f"{EXAMPLES_PER_LABEL} example episodes: a link opens it in the replay viewer at the "
        "step of the mistake.</p>"
    )
    parts.append(_labels_table(data, viewer_url))
    parts.append("</section>")

    parts.append('<section id="plots"><h2>Plots</h2>')
    ponr = data["point_of_no_return"]
    figures = [
        (
            "returns",
            "Return distribution",
            "Returns of ended episodes, one histogram per agent over shared bins.",
            "No ended episodes yet: no return distribution.",
        ),
        (
            "success_by_chaos",
            "Success by chaos kind",
            "Success rate of ended episodes in which each kind of chaos was present (an "
            "episode counts under every kind it had); bars are labelled successes/episodes.",
            "No ended episodes yet: no success by chaos kind.",
        ),
        (
            "failure_taxonomy",
            "Failure taxonomy",
            "Failed episodes by their first unrecovered mistake, stacked by agent.",
            "No failures labelled yet: no taxonomy plot.",
        ),
        (
            "point_of_no_return",
            "Point of no return",
            f"The point of no return is known for {ponr['with_step']} of {ponr['failures']} "
            f"failures ({ponr['checked']} checked, of which {ponr['no_step']} the oracle could "
            "not win even from the start). It is the last step after which the oracle, taking "
            "over, still succeeds. Left: where it fell, as a fraction of the episode's steps; "
            "right: steps played after it.",
            f"No point of no return computed yet ({ponr['failures']} failures, "
            f"{ponr['checked']} checked): no histogram.",
        ),
    ]
    for key, heading, caption, missing in figures:
        parts.append(f'<h3 id="plot-{key}">{e(heading)}</h3>')
        png = pngs.get(key)
        if png is None:
            parts.append(f'<p class="nodata" data-plot="{key}">{e(missing)}</p>')
            continue
        src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        w, h_px = _png_size(png)
        parts.append(
            f'<figure><img data-plot="{key}" src="{src}" alt="{e(heading)}" width="{w}" '
            f'height="{h_px}"><figcaption>{e(caption)}</figcaption></figure>'
        )
    parts.append('<h3 id="chaos-table">Success by chaos kind</h3>')
    parts.append(
        _table(
            "success-by-chaos",
            data["success_by_chaos"],
            [
                ("chaos_kind", "chaos kind", str),
                ("agent", "agent", str),
                ("episodes", "episodes", _fmt),
                ("successes", "successes", _fmt),
                ("success_rate", "success rate", _pct),
            ],
            empty="No ended episodes yet.",
        )
    )
    parts.append("</section>")

    parts.append('<section id="queries"><h2>Canned queries</h2>')
    if not data["queries"]:
        parts.append('<p class="nodata">No canned queries are defined.</p>')
    else:
        parts.append(
            '<p class="legend">Each query\'s result is behind its link (also '
            "<code>companyos analyze --query NAME</code>, or <code>POST /analytics/query "
            '{"name": NAME}</code>).</p><ul class="queries">'
        )
        for q in data["queries"]:
            parts.append(
                f'<li><a class="query-link" href="#query-{e(q["name"])}" '
                f'data-query="{e(q["name"])}">{e(q["title"])}</a> '
                f'<span class="note">({_fmt(q["row_count"])} rows)</span></li>'
            )
        parts.append("</ul>")
    for q in data["queries"]:
        parts.append(f'<section class="query" data-query="{e(q["name"])}">')
        parts.append(f'<details id="query-{e(q["name"])}"><summary>')
        parts.append(f'<h3 style="display:inline">{e(q["title"])}</h3> <code>{e(q["name"])}</code>')
        parts.append("</summary>")
        parts.append(f'<p class="note">{e(q["description"])}</p>')
        parts.append(f"<details><summary>SQL</summary><pre>{e(q['sql'])}</pre></details>")
        if q["error"]:
            parts.append(f'<p class="error">This query failed: {e(q["error"])}</p>')
        elif not q["rows"]:
            parts.append('<p class="nodata">No rows: no data for this query yet.</p>')
        else:
            parts.append(_grid(q["columns"], q["rows"]))
            if q["truncated"]:
                parts.append(
                    f'<p class="note">First {len(q["rows"])} of {q["row_count"]} rows.</p>'
                )
        parts.append("</details></section>")
    parts.append("</section>")
    # A link to a query opens its (closed) section.
    parts.append(
        "<script>function openQuery(){const d=document.getElementById("
        "decodeURIComponent(location.hash.slice(1)));if(d&&d.tagName==='DETAILS')d.open=true;}"
        "addEventListener('hashchange',openQuery);openQuery();</script>"
    )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _agents_table(rows: Sequence[Mapping[str, Any]], colors: Mapping[str, str]) -> str:
    if not rows:
        return '<p class="nodata" data-table="by-agent">No episodes yet.</p>'
    e = html.escape
    head = "".join(
        f"<th>{e(c)}</th>"
        for c in (
            "agent",
            "episodes",
            "ended",
            "successes",
            "success rate",
            "",
            "mean return",
            "mean steps",
            "failures",
            "most frequent label",
        )
    )
    body = []
    for r in rows:
        swatch = f'<span class="swatch" style="background:{colors[r["agent"]]}"></span>'
        rate = r["success_rate"]
        bar = f'<span class="bar" style="width:{round(60 * (rate or 0))}px"></span>'
        cells = [
            f'<td data-key="agent" data-value="{_attr(r["agent"])}">{swatch}{e(r["agent"])}</td>',
            _cell(r["episodes"], _fmt, "episodes"),
            _cell(r["ended"], _fmt, "ended"),
            _cell(r["successes"], _fmt, "successes"),
            f'<td class="num" data-key="success_rate" data-value="{_attr(rate)}">'
            f"{e(_pct(rate))}</td>",
            f'<td class="barcell" data-key="success_bar">{bar}</td>',
            _cell(r["mean_return"], _num, "mean_return"),
            _cell(r["mean_steps"], _num, "mean_steps"),
            _cell(r["failures"], _fmt, "failures"),
            _cell(r["top_label"], str, "top_label"),
        ]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<table data-table="by-agent"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _matrix(
    table_id: str,
    rows: Sequence[Mapping[str, Any]],
    row_key: str,
    col_key: str,
    corner: str,
    colors: Mapping[str, str] | None = None,
) -> str:
    """Success rates as a grid, ``row_key`` down and ``col_key`` across; each cell carries
    its rate and episode count."""
    if not rows:
        return f'<p class="nodata" data-table="{table_id}">No episodes yet.</p>'
    e = html.escape
    row_values = list(dict.fromkeys(r[row_key] for r in rows))
    col_values = sorted({r[col_key] for r in rows})
    by = {(r[row_key], r[col_key]): r for r in rows}
    head = f"<th>{e(corner)}</th>" + "".join(f"<th>{e(str(c))}</th>" for c in col_values)
    body = []
    for rv in row_values:
        swatch = ""
        if colors is not None and rv in colors:
            swatch = f'<span class="swatch" style="background:{colors[rv]}"></span>'
        cells = [f"<th>{swatch}{e(str(rv))}</th>"]
        for cv in col_values:
            r = by.get((rv, cv))
            if r is None:
                cells.append('<td class="heat null" data-value="null">—</td>')
                continue
            rate = r["success_rate"]
            cells.append(
                f'<td class="heat" style="background:{_heat(rate)}" data-row="{e(str(rv))}" '
                f'data-col="{e(str(cv))}" data-value="{_attr(rate)}" '
                f'data-episodes="{r["episodes"]}" title="{r["episodes"]} episodes">'
                f"{e(_pct(rate))}</td>"
            )
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<div class="scroll"><table data-table="{table_id}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _labels_table(data: Mapping[str, Any], viewer_url: str) -> str:
    rows = data["failure_taxonomy"]
    if not rows:
        return (
            '<p class="nodata" data-table="failure-taxonomy">No taxonomy and no failures yet.</p>'
        )
    e = html.escape
    examples: dict[str, list[Mapping[str, Any]]] = {}
    for x in data["label_examples"]:
        examples.setdefault(x["label"], []).append(x)
    body = []
    for r in rows:
        links = "".join(
            f'<a href="{e(_viewer_link(viewer_url, x["episode_id"], x["step"]))}" '
            f'title="{e(x["agent"])}, step {e(_fmt(x["step"]))}">'
            f"{e(x['episode_id'][:8])}</a>"
            for x in examples.get(r["label"], [])
        )
        body.append(
            "<tr>"
            + _cell(r["label"], str, "label")
            + _cell(r["description"], str, "description")
            + _cell(r["failures"], _fmt, "failures")
            + _cell(r["share"], _pct, "share")
            + f'<td class="examples" data-key="examples">{links}</td>'
            + "</tr>"
        )
    head = "".join(
        f"<th>{c}</th>" for c in ("label", "definition", "failures", "share", "examples")
    )
    return (
        f'<table data-table="failure-taxonomy"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _viewer_link(viewer_url: str, episode_id: str, step: int | None) -> str:
    """The replay viewer's address of an episode at a step (its hash route)."""
    tail = "" if step is None else f"/{int(step)}"
    return f"{viewer_url}#/episode/{quote(episode_id, safe='')}{tail}"


Column = tuple[str, str, Callable[[Any], str]]


def _table(
    table_id: str, rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], *, empty: str
) -> str:
    """A table of records; each cell carries its raw value in ``data-value`` (what the
    formatted text was made from)."""
    if not rows:
        return f'<p class="nodata" data-table="{table_id}">{html.escape(empty)}</p>'
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label, _ in columns)
    body = []
    for row in rows:
        cells = "".join(_cell(row[key], fmt, key) for key, _, fmt in columns)
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<table data-table="{table_id}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _grid(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(_cell(v, _fmt, str(c)) for c, v in zip(columns, row, strict=True))
        + "</tr>"
        for row in rows
    )
    # Wide results scroll sideways inside the page instead of squeezing every column.
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _cell(value: Any, fmt: Callable[[Any], str], key: str) -> str:
    if value is None:
        return f'<td class="null" data-key="{html.escape(key)}" data-value="null">—</td>'
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    text = fmt(value)
    # Long text (a definition, a detail) gets room instead of a word per line.
    cls = ' class="num"' if numeric else (' class="long"' if len(text) > 40 else "")
    return (
        f'<td{cls} data-key="{html.escape(key)}" data-value="{_attr(value)}">'
        f"{html.escape(text)}</td>"
    )


def _attr(value: Any) -> str:
    return html.escape(json.dumps(value), quote=True)


def _fmt(value: Any) -> str:
    """A value for a table cell: integers with thousands separators, floats to four
    significant figures (one decimal from a thousand up), lists and objects as JSON."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _num(value: Any) -> str:
    return "—" if value is None else f"{value:.2f}"


def _png_size(png: bytes) -> tuple[int, int]:
    # The IHDR chunk: width and height as big-endian 32-bit integers at bytes 16-24.
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
