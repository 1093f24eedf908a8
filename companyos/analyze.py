"""`companyos analyze`: why did this agent fail? Catch the DuckDB warehouse up with the log
(each new failure with its decisive mistake and its point of no return), then print the canned
reports, run ad-hoc SQL (in the sandbox), or write the HTML report with its plots."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DEFAULT_STORE = "sqlite:///data/companyos.db"
DEFAULT_WAREHOUSE = "data/warehouse.duckdb"

DESCRIPTION = """\
Load the event log into a DuckDB warehouse (incrementally: only what was appended since the
last run; --rebuild starts over), list every mistake of every episode, label every failed
episode with its decisive mistake and its point of no return (the last step from which the
honest solver, taking over with only observations, still succeeds), then answer questions.

tables: events, steps (one row per tool call), episodes, failures (label, step, detail,
point_of_no_return), mistakes (episode_id, step, label, evidence, made_good_at, decisive,
harmless), taxonomy (label, description); see analytics/sql/schema.sql and
docs/failure_taxonomy.md.

With no --query, --sql or --report, every canned report is printed. --sql runs one read-only
statement in the sandbox (a read-only snapshot, no file or network access, memory and time
limits); anything else is refused."""

EPILOG = """\
examples:
  companyos analyze                                         every canned report
  companyos analyze --list                                  the canned queries
  companyos analyze --query failure_taxonomy --query pass_k
  companyos analyze --sql "SELECT label, count(*) FROM failures GROUP BY ALL ORDER BY 2 DESC"
  companyos analyze --report data/report.html               HTML report with PNG plots
  companyos analyze --store postgresql+psycopg://user@host/db --warehouse data/pg.duckdb
  companyos analyze --rebuild --format json --query pass_k
"""


class AnalyzeError(ValueError):
    pass


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def _catch_up(wh: Any, store: Any, rebuild: bool, quiet: bool) -> Any:
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TextColumn("{task.completed:,} events"),
        TimeElapsedColumn(),
        console=_console(),
        disable=quiet,
        transient=True,
    ) as bar:
        task = bar.add_task("rebuilding the warehouse" if rebuild else "catching up", total=None)

        def progress(loaded: int, position: int) -> None:
            bar.update(task, completed=loaded)

        return (wh.rebuild if rebuild else wh.catch_up)(store, progress=progress)


def work_out_points_of_no_return(wh: Any, store: Any, quiet: bool) -> int:
    """Work out the point of no return of every failed episode that has none yet (a warehouse
    file loaded by an earlier version; the load works out new failures' own); how many."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from companyos.analytics.no_return import point_of_no_return

    pending = wh.failed_without_no_return()
    if not pending:
        return 0
    values: dict[str, int | None] = {}
    with Progress(
        TextColumn("points of no return"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=_console(),
        disable=quiet,
        transient=True,
    ) as bar:
        task = bar.add_task("ponr", total=len(pending))
        for episode_id in pending:
            values[episode_id] = point_of_no_return(store.read(episode_id))
            bar.advance(task)
    wh.set_points_of_no_return(values)
    return len(values)


def _print(
    title: str, columns: list[str], rows: list[list[Any]], fmt: str, max_rows: int = 40
) -> None:
    from companyos.analytics.sandbox import jsonable

    if fmt == "json":
        print(
            json.dumps(
                {
                    "title": title,
                    "columns": columns,
                    "rows": [[jsonable(v) for v in r] for r in rows],
                }
            )
        )
        return
    if fmt == "csv":
        import csv

        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
        return
    from rich.console import Console

    from .tables import print_table

    console = Console()
    if not console.is_terminal:  # piped to a file or a pager: room for every column
        console = Console(width=max(console.width, 200))
    cells = [[_cell(v) for v in r] for r in rows[:max_rows]]
    # Labels and numbers are shown whole; long text (descriptions, params) wraps. When that
    # does not fit the terminal, each row is printed as a block (`--format json`: as data).
    text = {i for i in range(len(columns)) if any(len(r[i]) > 40 for r in cells)}
    caption = None
    if not rows:
        caption = "no rows (no episodes yet? play some with `companyos eval`)"
    elif len(rows) > max_rows:
        caption = f"the first {max_rows} of {len(rows):,} rows (--format csv: all of them)"
    print_table(console, columns, cells, title=title, text=text, caption=caption, heading=2)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, list | tuple):
        return ", ".join(str(x) for x in v)
    return str(v)


@contextmanager
def caught_up(args: argparse.Namespace, quiet: bool) -> Iterator[Any]:
    """The warehouse at ``args.warehouse``, caught up with ``args.store`` (or rebuilt); the
    points of no return that a file loaded by an earlier version left for later are worked out
    unless ``args.skip_no_return`` (new failures get theirs in the load)."""
    from companyos.analytics.warehouse import Warehouse
    from companyos.events import open_store

    started = time.perf_counter()
    store = open_store(args.store)
    path = Path(args.warehouse)
    try:
        with Warehouse(path) as wh:
            done = _catch_up(wh, store, args.rebuild, quiet)
            ponr = 0 if args.skip_no_return else work_out_points_of_no_return(wh, store, quiet)
            if not quiet:
                older = f", {ponr:,} earlier points of no return" if ponr else ""
                _console().print(
                    f"[dim]warehouse {path}: +{done.events:,} events, {done.episodes:,} "
                    f"episodes derived{older}, position {done.position:,} "
                    f"({time.perf_counter() - started:.1f} s)[/dim]"
                )
            yield wh
    finally:
        store.close()


def run(args: argparse.Namespace) -> int:
    from companyos.analytics.queries import CANNED
    from companyos.analytics.queries import run as run_canned
    from companyos.analytics.report import render_report
    from companyos.analytics.sandbox import QueryFailed, QueryRefused, run_query, snapshot

    if args.list:
        rows = [[q.name, q.title, q.description] for q in CANNED.values()]
        _print("canned queries", ["name", "title", "what it answers"], rows, args.format)
        return 0
    unknown = [n for n in args.query or [] if n not in CANNED]
    if unknown:
        raise AnalyzeError(
            f"no canned query {', '.join(map(repr, unknown))}; "
            f"the canned queries: {', '.join(CANNED)} (`companyos analyze --list`)"
        )
    with caught_up(args, quiet=args.quiet or args.format != "table") as wh:
        if args.sql is not None:
            path = Path(args.warehouse)
            snap = snapshot(wh.con, path.parent / f"{path.stem}-snapshots")
            try:
                result = run_query(snap, args.sql, timeout_s=args.timeout)
            except (QueryRefused, QueryFailed) as exc:
                raise AnalyzeError(str(exc)) from None
            _print("query", result.columns, result.rows, args.format)
            if result.truncated:
                _console().print(f"[yellow]only the first {len(result.rows):,} rows[/yellow]")
        for name in args.query or ([] if args.sql is not None or args.report else CANNED):
            columns, rows = run_canned(wh.con, name)
            _print(CANNED[name].title, list(columns), [list(r) for r in rows], args.format)
        if args.report:
            out = render_report(wh.con, Path(args.report), viewer_url=args.viewer_url)
            _console().print(f"report written to {out}")
    return 0


def add_warehouse_args(p: argparse.ArgumentParser) -> None:
    """What `caught_up` reads: where the log is, where the warehouse is, how to load it."""
    p.add_argument(
        "--store", default=DEFAULT_STORE, help=f"event store URL (default {DEFAULT_STORE})"
    )
    p.add_argument(
        "--warehouse",
        default=DEFAULT_WAREHOUSE,
        help=f"DuckDB warehouse file, created or caught up (default {DEFAULT_WAREHOUSE})",
    )
    p.add_argument("--rebuild", action="store_true", help="reload everything from the log")
    p.add_argument(
        "--skip-no-return",
        action="store_true",
        help="do not work out the points of no return that a warehouse file loaded by an "
        "earlier version left for later (new failures get theirs as they are loaded)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress or status lines")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "analyze",
        help="failure analysis over the log: canned reports, SQL, an HTML report with plots",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_warehouse_args(p)
    p.add_argument(
        "--query",
        action="append",
        metavar="NAME",
        help="print this canned query (repeatable; --list names them)",
    )
    p.add_argument("--list", action="store_true", help="list the canned queries and stop")
    p.add_argument("--sql", help="run one read-only SQL statement (sandboxed) and print its rows")
    p.add_argument("--timeout", type=float, default=30.0, help="--sql time limit in s (default 30)")
    p.add_argument("--report", metavar="OUT.html", help="write the HTML report with PNG plots")
    p.add_argument(
        "--viewer-url",
        default="http://127.0.0.1:8000/viewer/",
        metavar="URL",
        help="the replay viewer the report's example episodes link to "
        "(default: a local `companyos serve`, http://127.0.0.1:8000/viewer/)",
    )
    p.add_argument(
        "--format", choices=["table", "json", "csv"], default="table", help="output format"
    )
    p.set_defaults(run=run)
