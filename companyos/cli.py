"""The `companyos` command line."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

DEFAULT_STORE = "sqlite:///data/companyos.db"

EPILOG = """\
examples:
  companyos serve                                 the OpenEnv server on 127.0.0.1:8000
  companyos serve --store postgresql+psycopg://user@host/db --port 8001
  companyos demo                                  play one oracle episode, print its timeline
  companyos demo --agent random --difficulty 3    the random baseline at the hardest level
  companyos episodes --store sqlite:///data/companyos.db
  companyos show EPISODE_ID --step 3              the world after step 3 (time travel)
  companyos verify EPISODE_ID                     re-simulate and compare hash chains
  companyos tools                                 the tool manifest (what agents can call)
  companyos tasks                                 families, difficulties, chaos catalogue, suites
  companyos tasks --suite test                    the frozen test suite's instance ids
  companyos tasks --instance purchase_order-d2-s17  one instance: text, goal, chaos, budget
  companyos eval --agent oracle --suite test --trials 4   success, return, pass^k, plots
  companyos analyze                               why agents failed: canned reports over DuckDB
  companyos analyze --report data/report.html     the HTML report with plots
  companyos export --parquet data/parquet         the warehouse as hive-partitioned Parquet
"""


def _store(url: str) -> Any:
    from companyos.events import open_store

    return open_store(url)


def check_port(host: str, port: int) -> None:
    """Refuse at once, in one line, an address the server could not listen on (a busy port
    otherwise shows up after the banner, inside uvicorn's traceback)."""
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError, OverflowError) as exc:
        raise ValueError(f"cannot listen on {host}:{port}: {exc}; check --host/--port") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            hint = (
                "another server is running there: stop it, or pick another port (--port N, "
                "COMPANYOS_PORT=N, or PORT=N make serve)"
                if exc.errno == errno.EADDRINUSE
                else "check --host/--port"
            )
            raise ValueError(f"cannot listen on {host}:{port}: {exc.strerror}; {hint}") from None


def cmd_serve(args: argparse.Namespace) -> int:
    from companyos.api.server import check_workers, serve
    from companyos.api.settings import Settings
    from companyos.domain import Limits
    from companyos.events.sql import redact_url

    settings = Settings(
        host=args.host,
        port=args.port,
        store=args.store,
        difficulty=args.difficulty,
        reward_profile=args.reward_profile,
        max_sessions=args.max_sessions,
        session_timeout=args.session_timeout if args.session_timeout > 0 else None,
        request_timeout=args.request_timeout,
        max_body_bytes=args.max_body_bytes,
        cache_episodes=args.cache_episodes,
        max_episode_steps=args.max_episode_steps,
        max_page=args.max_page,
        max_events_page=args.max_events_page,
        api_key=args.api_key or None,
        agent_key=args.agent_key or None,
        limits=Limits(max_string=args.max_value_chars, max_params_chars=args.max_params_chars),
        log_level=args.log_level,
    )
    check_workers(settings, args.workers)
    check_port(settings.host, settings.port)
    guarded = "; API key required" if settings.api_key else ""
    guarded += " (an agent key reaches the agent's routes only)" if settings.agent_key else ""
    processes = f"; {args.workers} worker processes" if args.workers > 1 else ""
    print(
        f"CompanyOS on http://{settings.host}:{settings.port} (store {redact_url(settings.store)})"
        f"{guarded}{processes}; docs at /docs, episodes at /episodes",
        flush=True,
    )
    serve(settings, args.workers)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from companyos.agents import RandomAgent, in_process_oracle
    from companyos.api import CompanyOSEnvironment

    console = Console()
    store = _store(args.store)
    env = CompanyOSEnvironment(store)
    obs = env.reset(seed=args.seed, task_id=args.task, difficulty=args.difficulty)
    agent = in_process_oracle(env) if args.agent == "oracle" else RandomAgent(args.seed or 0)
    agent.reset(obs)
    console.print(
        f"[bold]{obs.task_id}[/] seed={obs.seed} difficulty={obs.difficulty} "
        f"episode={obs.episode_id}\n[italic]{obs.task}[/]"
    )
    table = Table("step", "call", "result", "reward", "return")
    while not obs.done:
        action = agent.act(obs)
        obs = env.step(action)
        params = json.dumps(action.get("params", {}))
        call = f"{action['app']}.{action['method']}({params[:60]})"
        table.add_row(
            str(obs.step),
            call,
            obs.message[:70],
            f"{obs.reward:+.2f}",
            f"{env.state.cumulative_return:+.2f}",
        )
    console.print(table)
    console.print(
        f"outcome: [bold]{obs.outcome}[/] in {obs.step} steps, return "
        f"{env.state.cumulative_return:+.2f}; stored in {args.store}"
    )
    store.close()
    return 0


def _newest_episodes(store: Any, limit: int, prefix: str | None) -> list[Any]:
    """Up to ``limit`` episode streams, newest first (other streams, such as a session's
    orphan calls, are skipped)."""
    found: list[Any] = []
    before = None
    while len(found) < limit:
        page = store.streams(limit=200, prefix=prefix, newest_first=True, before_position=before)
        if not page:
            break
        for info in page:
            before = info.first_position
            first = store.read(info.stream_id, 0, 0)
            if first and first[0].type == "EpisodeStarted":
                found.append(info)
                if len(found) >= limit:
                    break
    return found


def short_id(store: Any, episode_id: str, least: int = 8) -> str:
    """The shortest prefix of ``episode_id`` (at least ``least`` characters) that starts no
    other stream: what `show` and `verify` accept."""
    n = least
    while n < len(episode_id):
        if len(store.streams(prefix=episode_id[:n], limit=2)) < 2:
            return episode_id[:n]
        n += 2
    return episode_id


def resolve_episode(store: Any, text: str) -> str:
    """The episode ``text`` names: its id, or a prefix that starts exactly one episode."""
    if store.version(text) != -1:
        return text
    matches = [
        s.stream_id
        for s in store.streams(prefix=text, limit=6)
        if (first := store.read(s.stream_id, 0, 0)) and first[0].type == "EpisodeStarted"
    ]
    if not matches:
        raise ValueError(f"no episode {text!r} in this store (`companyos episodes` lists them)")
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise ValueError(
            f"{text!r} is ambiguous: it begins several episodes ({shown}); give more characters"
        )
    return matches[0]


def cmd_episodes(args: argparse.Namespace) -> int:
    from rich.console import Console

    from companyos.projections import summarize

    from .tables import fits, print_table

    store = _store(args.store)
    console = Console()
    infos = _newest_episodes(store, args.limit, args.prefix)
    rows = []
    for info in infos:
        s = summarize(store.read(info.stream_id))
        rows.append(
            [
                s.episode_id,
                s.scenario,
                str(s.difficulty),
                str(s.seed),
                str(s.steps),
                s.outcome or "running",
                f"{s.total_return:+.2f}",
            ]
        )
    columns = ["episode", "family", "d", "seed", "steps", "outcome", "return"]
    caption = f"{len(rows)} newest first"
    if len(rows) == args.limit:
        caption += " (--limit for more)"
    if rows and not args.full and not fits(console, columns, rows):
        for row in rows:
            row[0] = short_id(store, row[0])
        caption += "; ids cut to unique prefixes, which show and verify accept (--full: whole)"
    if not rows:
        caption = "no episodes yet: play one with `companyos demo` or `companyos eval`"
    print_table(console, columns, rows, right={2, 3, 4, 6}, caption=caption, heading=1)
    store.close()
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from companyos.projections import render_world, replay

    store = _store(args.store)
    episode_id = resolve_episode(store, args.episode_id)
    r = replay(store.read(episode_id))
    step = len(r.steps) if args.step is None else args.step
    out = {
        "episode_id": episode_id,
        "step": min(step, len(r.steps)),
        "steps": len(r.steps),
        "outcome": r.outcome,
        "return": r.total,
        "world": render_world(r.world_at(step)),
    }
    print(json.dumps(out, indent=2, default=str))
    store.close()
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from companyos.api.verify import verify_episode

    store = _store(args.store)
    report = verify_episode(store, resolve_episode(store, args.episode_id))
    print(json.dumps(report.as_dict(), indent=2))
    store.close()
    return 0 if report.ok else 1


def cmd_tools(args: argparse.Namespace) -> int:
    from companyos.projections import tool_manifest

    print(json.dumps(tool_manifest(), indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="companyos",
        description="CompanyOS: an event-sourced OpenEnv environment of chaotic enterprise "
        "workflows. Every action and every piece of chaos is an event in an append-only log.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")

    def with_store(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--store",
            default=DEFAULT_STORE,
            help=f"event store URL: memory://, sqlite:///path.db or "
            f"postgresql+psycopg://user@host/db (default {DEFAULT_STORE})",
        )

    from companyos.api.settings import Settings

    env_defaults = Settings.from_env()
    srv = sub.add_parser(
        "serve",
        help="run the OpenEnv server (HTTP, WebSocket, MCP, episode API)",
        description="Run the OpenEnv server. Flags default to COMPANYOS_* environment variables "
        "(COMPANYOS_HOST, _PORT, _STORE, _DIFFICULTY, _REWARD_PROFILE, _MAX_SESSIONS, "
        "_SESSION_TIMEOUT, _MAX_BODY_BYTES, _CACHE_EPISODES, _MAX_EPISODE_STEPS, _MAX_PAGE, "
        "_MAX_EVENTS_PAGE, _MAX_VALUE_CHARS, _MAX_PARAMS_CHARS, _API_KEY, _LOG_LEVEL).",
    )
    srv.add_argument("--host", default=env_defaults.host, help="default 127.0.0.1")
    srv.add_argument("--port", type=int, default=env_defaults.port, help="default 8000")
    srv.add_argument(
        "--store",
        default=env_defaults.store,
        help=f"event store URL (default {env_defaults.store}); several servers may "
        "share one SQLite file or PostgreSQL database",
    )
    srv.add_argument(
        "--difficulty",
        type=int,
        choices=(0, 1, 2, 3),
        default=env_defaults.difficulty,
        help="default chaos level for resets that do not say (default 2)",
    )
    srv.add_argument(
        "--reward-profile",
        default=env_defaults.reward_profile,
        help="default reward profile: default | original",
    )
    srv.add_argument(
        "--max-sessions",
        type=int,
        default=env_defaults.max_sessions,
        help="concurrent WebSocket/MCP sessions (default 64)",
    )
    srv.add_argument(
        "--session-timeout",
        type=float,
        default=env_defaults.session_timeout or 0,
        help="close WebSocket sessions whose client sends nothing for this many seconds; "
        "0: never (default 600)",
    )
    srv.add_argument(
        "--request-timeout",
        type=float,
        default=env_defaults.request_timeout,
        help="seconds an HTTP request's headers and body may take to arrive; a slower "
        "client gets 408 and is disconnected (default 15)",
    )
    srv.add_argument(
        "--max-body-bytes",
        type=int,
        default=env_defaults.max_body_bytes,
        help="larger HTTP bodies get 413 and larger WebSocket frames close the "
        "socket (default 1 MiB)",
    )
    srv.add_argument(
        "--cache-episodes",
        type=int,
        default=env_defaults.cache_episodes,
        help="folded episodes kept in memory (default 4096)",
    )
    srv.add_argument(
        "--max-episode-steps",
        type=int,
        default=env_defaults.max_episode_steps,
        help="the largest max_steps a reset may ask for (default 1000)",
    )
    srv.add_argument(
        "--max-page",
        type=int,
        default=env_defaults.max_page,
        help="the largest page of GET /episodes (default 200)",
    )
    srv.add_argument(
        "--max-events-page",
        type=int,
        default=env_defaults.max_events_page,
        help="the largest page of GET /episodes/{id}/events (default 2000)",
    )
    srv.add_argument(
        "--max-value-chars",
        type=int,
        default=env_defaults.limits.max_string,
        help="characters in one string value of a tool call (default 4096)",
    )
    srv.add_argument(
        "--max-params-chars",
        type=int,
        default=env_defaults.limits.max_params_chars,
        help="serialised size of one tool call's params (default 16384)",
    )
    srv.add_argument(
        "--api-key",
        default=env_defaults.api_key,
        help="require this key on every route but /health (Authorization: Bearer KEY or "
        "X-API-Key: KEY; ?api_key=KEY on WebSockets); prefer COMPANYOS_API_KEY, which "
        "does not show in the process list",
    )
    srv.add_argument(
        "--agent-key",
        default=env_defaults.agent_key,
        help="a second key, for the agent: it reaches /reset, /step, /ws and MCP only, with no "
        "state, episodes, analytics or viewer (the grader's view), and resets that choose the "
        "task, not a fork or a curriculum; needs --api-key; prefer COMPANYOS_AGENT_KEY",
    )
    srv.add_argument(
        "--workers",
        type=int,
        default=int(os.environ.get("COMPANYOS_WORKERS", "1") or 1),
        help="server processes sharing the port and the store (default 1; one per core uses "
        "every core). Needs a SQLite file or PostgreSQL: any process serves any episode; a "
        "WebSocket session stays on its process; --max-sessions is per process",
    )
    srv.add_argument(
        "--log-level",
        default=env_defaults.log_level,
        choices=("critical", "error", "warning", "info", "debug"),
    )
    srv.set_defaults(run=cmd_serve)

    demo = sub.add_parser(
        "demo",
        help="play one episode and print its timeline",
        description="Play one episode in-process and print every step.",
    )
    demo.add_argument("--agent", choices=("oracle", "random"), default="oracle")
    demo.add_argument(
        "--task",
        default=None,
        help="family name or index 0-11, see `companyos tasks` (default: drawn from the seed)",
    )
    demo.add_argument(
        "--difficulty",
        type=int,
        default=2,
        choices=(0, 1, 2, 3),
        help="chaos level; 2 is the original CompanyOS (default 2)",
    )
    demo.add_argument("--seed", type=int, default=None, help="default: a fresh seed, printed")
    with_store(demo)
    demo.set_defaults(run=cmd_demo)

    eps = sub.add_parser(
        "episodes",
        help="list stored episodes with their outcome and return",
        description="List the episodes in an event store, newest first, with their family, "
        "difficulty, seed, steps, outcome and return (rebuilt from each log). Ids are cut to "
        "unique prefixes when the terminal is narrow; show and verify accept those.",
    )
    eps.add_argument("--limit", type=int, default=50, help="how many (default 50)")
    eps.add_argument("--prefix", default=None, help="only episode ids starting with this")
    eps.add_argument(
        "--full", action="store_true", help="whole ids even when they do not fit the terminal"
    )
    with_store(eps)
    eps.set_defaults(run=cmd_episodes)

    show = sub.add_parser(
        "show",
        help="print an episode's world at a step (time travel)",
        description="Replay a stored episode up to a step and print the three apps' state "
        "then, as JSON: the world is a projection of the log, so any step can be shown.",
    )
    show.add_argument("episode_id", help="an episode id, or a prefix that starts only one")
    show.add_argument("--step", type=int, default=None, help="default: the last step")
    with_store(show)
    show.set_defaults(run=cmd_show)

    verify = sub.add_parser(
        "verify",
        help="check an episode's hash chain and re-simulate it",
        description="Exit status 0 when the stored episode verifies, 1 when it does not.",
    )
    verify.add_argument("episode_id", help="an episode id, or a prefix that starts only one")
    with_store(verify)
    verify.set_defaults(run=cmd_verify)

    tools = sub.add_parser(
        "tools",
        help="print the tool manifest as JSON",
        description="Print every tool an agent can call (app, method, description, JSON "
        "schema of its parameters): the same manifest as GET /manifest.",
    )
    tools.set_defaults(run=cmd_tools)

    from companyos.tasks import add_parser as add_tasks

    add_tasks(sub)
    from companyos.evaluate import add_parser as add_eval

    add_eval(sub)
    from companyos.analyze import add_parser as add_analyze

    add_analyze(sub)
    from companyos.export import add_parser as add_export

    add_export(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
    except ValueError as exc:  # a malformed COMPANYOS_* variable
        print(f"companyos: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    try:
        code = int(args.run(args))
        sys.stdout.flush()  # inside the try: a reader gone away (`| head`) is caught below
        return code
    except BrokenPipeError:
        # The reader closed the pipe (`companyos tasks --suite test | head`): stop quietly, as
        # any Unix tool would, and keep the interpreter's last flush from complaining.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool a closed pipe stopped
    except Exception as exc:  # a clear message for the person at the terminal, not a trace
        from companyos.api import ResetError
        from companyos.events import StoreError

        if isinstance(exc, ResetError | StoreError | ValueError):
            print(f"companyos: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
