"""`companyos eval`: play agents on a suite's instances and report success, return, steps and
pass^k, with a live progress bar, a results table, a JSON results file and PNG plots."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from companyos.domain import DIFFICULTIES, FAMILY_NAMES, LEVELS, SUITES, parse_instance_id

DEFAULT_STORE = "sqlite:///data/companyos.db"
DEFAULT_OUT = "data/eval"

DESCRIPTION = """\
Play one or more agents on the instances of a frozen suite (or chosen instances), k trials
each, and report success, mean return, mean steps and pass^1..pass^k (tau-bench's: the chance
that all k trials of an instance succeed) per family and difficulty. Every episode is stored in
the event log, labelled with its agent, for analytics and the replay viewer.

agents:
  random   a uniformly random tool with plausible parameters (the original's baseline)
  naive    does what the task text says and ignores chaos (privileged: reads the world)
  honest   a careful solver that sees only what an agent sees (the proof of solvability)
  oracle   plans from the true world and handles every chaos kind (privileged)
  llm      a model behind any OpenAI-compatible chat completions endpoint, native tool calls

In-process (default) each worker is a process with its own environment over --store; with --url
each worker is a thread with its own session on that server, which stores the episodes.
Trials of one instance play the same world; the random agent and a sampling LLM get their own
seed per trial, so their trials differ (the oracle, honest and naive agents are deterministic)."""

EPILOG = """\
examples:
  companyos eval --agent oracle --suite test --trials 4
  companyos eval --agent random,naive,honest,oracle --suite test --workers 2   the baselines
  companyos eval --agent random --suite original --difficulty 2 --trials 4
  companyos eval --agent oracle --url http://127.0.0.1:8000 --workers 2 --per-cell 5
  companyos eval --agent llm --llm-url http://127.0.0.1:8001/v1 --model Qwen/Qwen2.5-7B-Instruct \\
      --family expense_report --difficulty 0,2 --per-cell 5 --trials 2

writes OUT/results.json (config, summaries, every episode), OUT/results.md (the tables),
OUT/success_by_difficulty.png and OUT/return_distribution.png.
"""


class EvalError(ValueError):
    """A request `eval` cannot run; the message says what to do instead."""


def _names(values: list[str] | None) -> list[str]:
    """``--x a,b --x c`` -> [a, b, c], each once, in order."""
    return list(dict.fromkeys(n.strip() for v in values or [] for n in v.split(",") if n.strip()))


def select_instances(args: argparse.Namespace) -> list[tuple[str, int, int]]:
    if args.instance:
        chosen = []
        for text in _names(args.instance):
            parsed = parse_instance_id(text)
            if parsed is None or parsed[0] not in FAMILY_NAMES or parsed[1] not in LEVELS:
                raise EvalError(
                    f"not an instance id: {text!r}; instance ids look like purchase_order-d2-s17 "
                    "(`companyos tasks --suite test` lists a suite's)"
                )
            chosen.append(parsed)
        return chosen
    suite = SUITES.get(args.suite)
    if suite is None:
        raise EvalError(f"unknown suite {args.suite!r}: use one of {', '.join(SUITES)}")
    families = _names(args.family) or list(suite.families)
    for f in families:
        if f not in FAMILY_NAMES:
            raise EvalError(f"unknown family {f!r}: use one of {', '.join(FAMILY_NAMES)}")
        if f not in suite.families:
            raise EvalError(f"family {f!r} is not in the {suite.name} suite ({suite.description})")
    try:
        difficulties = [int(d) for d in _names(args.difficulty)] or list(DIFFICULTIES)
    except ValueError as exc:
        raise EvalError(f"difficulties are numbers 0-3 ({exc})") from exc
    for d in difficulties:
        if d not in LEVELS:
            raise EvalError(f"difficulty must be one of {list(LEVELS)}, not {d}")
    if args.per_cell is not None and args.per_cell < 1:
        raise EvalError("--per-cell must be at least 1")
    return suite.instances(tuple(difficulties), tuple(families), args.per_cell)


def llm_settings(args: argparse.Namespace) -> Any:
    from companyos.agents.llm import LLMSettings

    url = args.llm_url or os.environ.get("OPENAI_BASE_URL")
    if not url or not args.model:
        raise EvalError(
            "the llm agent needs an OpenAI-compatible endpoint and a model: --llm-url "
            "http://host:port/v1 (or OPENAI_BASE_URL) and --model NAME"
        )
    return LLMSettings(
        base_url=url,
        model=args.model,
        api_key=os.environ.get(args.api_key_env) or "EMPTY",
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        timeout=args.llm_timeout,
        max_retries=args.llm_retries,
        history=args.history,
    )


def check_reachable(url: str, path: str, what: str, fix: str) -> None:
    """Fail early, with what to do, when nothing answers at ``url`` (any HTTP answer will do:
    some endpoints have no such route)."""
    import httpx

    try:
        httpx.get(url.rstrip("/") + path, timeout=5.0)
    except httpx.HTTPError as exc:
        raise EvalError(
            f"cannot reach {what} at {url} ({exc.__class__.__name__}: {exc}); {fix}"
        ) from exc


def command_line(args: argparse.Namespace) -> str:
    """The command that repeats this run (what the results file and markdown cite)."""
    words = ["companyos", "eval", "--agent", ",".join(_names(args.agent))]
    if args.instance:
        words += ["--instance", ",".join(_names(args.instance))]
    else:
        words += ["--suite", args.suite]
        for flag, value in (("--family", args.family), ("--difficulty", args.difficulty)):
            if value:
                words += [flag, ",".join(_names(value))]
        if args.per_cell is not None:
            words += ["--per-cell", str(args.per_cell)]
    for flag, value, default in (
        ("--trials", args.trials, 1),
        ("--max-steps", args.max_steps, None),
        ("--url", args.url, None),
        ("--store", None if args.url else args.store, None if args.url else DEFAULT_STORE),
        ("--workers", args.workers, 1),
        ("--seed", args.seed, 0),
        ("--model", args.model, None),
    ):
        if value != default:
            words += [flag, str(value)]
    return shlex.join(words)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from companyos.agents.harness import Setup, make_jobs, run_jobs
    from companyos.agents.registry import check_agent

    from .eval_report import console_tables, report, write_results

    agents = _names(args.agent)
    if not agents:
        raise EvalError("name at least one agent with --agent (random, naive, oracle, llm)")
    for a in agents:
        check_agent(a)
    if args.trials < 1 or args.workers < 1:
        raise EvalError("--trials and --workers must be at least 1")
    if args.label and len(agents) > 1:
        raise EvalError("--label names the episodes of one agent; run one agent per label")
    instances = select_instances(args)
    llm = llm_settings(args) if "llm" in agents else None
    if args.url:
        check_reachable(
            args.url,
            "/health",
            "a CompanyOS server",
            "start one with `companyos serve`, or drop --url to play in-process",
        )
    if llm is not None:
        check_reachable(
            llm.base_url, "/models", "the LLM endpoint", "check --llm-url and that it is up"
        )
    labels = {a: a for a in agents}
    if llm is not None:
        labels["llm"] = f"llm:{llm.model}"[:64]
    if args.label:
        labels[agents[0]] = args.label[:64]
    setup = Setup(
        store=args.store,
        url=args.url,
        llm=llm,
        labels=tuple(labels.items()),
        agent_seed=args.seed,
        max_steps=args.max_steps,
    )
    jobs = make_jobs(agents, instances, args.trials)
    console = Console(stderr=True)
    where = f"server {args.url}" if args.url else f"in-process, store {args.store}"
    console.print(
        f"{len(jobs)} episodes: {', '.join(agents)} x {len(instances)} instances x "
        f"{args.trials} trial(s); {where}; {args.workers} worker(s)"
    )
    started = time.perf_counter()
    try:
        records = _play(jobs, setup, args.workers, agents, console, run_jobs)
    except (ConnectionError, OSError) as exc:
        raise EvalError(
            f"lost the connection to {args.url or args.store} ({exc}); nothing was lost that "
            "was stored: the episodes played so far are in the log"
        ) from exc
    elapsed = time.perf_counter() - started
    # Workers finish in any order; report in the order asked for, whatever the parallelism.
    order = {name: i for i, name in enumerate([*agents, *FAMILY_NAMES])}
    records.sort(key=lambda r: (order[r.agent], order[r.family], r.difficulty, r.seed, r.trial))
    rate = len(records) / elapsed if elapsed else 0.0
    out = Console() if sys.stdout.isatty() else Console(width=120)  # a file has no width
    for table in console_tables(report(records)):
        out.print(table)
    config = {
        "command": command_line(args),
        "agents": agents,
        "labels": labels,
        "suite": None if args.instance else args.suite,
        "instances": len(instances),
        "trials": args.trials,
        "workers": args.workers,
        "url": args.url,
        "store": None if args.url else args.store,
        "llm": None if llm is None else {"base_url": llm.base_url, "model": llm.model},
        "max_steps": args.max_steps,
        "episodes": len(records),
        "seconds": round(elapsed, 3),
        "episodes_per_second": round(rate, 2),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    written = write_results(Path(args.out), config, records, plots=not args.no_plots)
    out.print(
        f"{len(records)} episodes in {elapsed:.1f} s ({rate:.1f} episodes/s, "
        f"{args.workers} worker(s)); " + ", ".join(str(p) for p in written.values())
    )
    return 0


def _play(
    jobs: list[Any], setup: Any, workers: int, agents: list[str], console: Any, run_jobs: Any
) -> list[Any]:
    """Run the jobs under a progress bar per agent with its live success rate."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    records = []
    wins = dict.fromkeys(agents, 0)
    results = run_jobs(jobs, setup, workers)  # workers start before the progress bar's thread
    with Progress(
        TextColumn("{task.description:>10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("success {task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    ) as progress:
        bars = {
            a: progress.add_task(a, total=sum(j.agent == a for j in jobs), rate="-") for a in agents
        }
        for record in results:
            records.append(record)
            wins[record.agent] += record.success
            done = progress.tasks[bars[record.agent]].completed + 1
            progress.update(bars[record.agent], advance=1, rate=f"{wins[record.agent] / done:6.1%}")
    return records


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate agents on a suite: success, return, steps, pass^k, plots",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--agent",
        action="append",
        metavar="NAME",
        help="random | naive | oracle | llm; repeat or comma-separate for several",
    )
    what = p.add_argument_group("instances")
    what.add_argument(
        "--suite", default="test", help=f"{' | '.join(SUITES)} (default test: 1,200 instances)"
    )
    what.add_argument(
        "--family", action="append", metavar="NAME", help="only these families (default: all)"
    )
    what.add_argument(
        "--difficulty", action="append", metavar="D", help="only these levels 0-3 (default: all)"
    )
    what.add_argument(
        "--per-cell",
        type=int,
        default=None,
        metavar="N",
        help="instances per family and difficulty (default: the suite's, 25)",
    )
    what.add_argument(
        "--instance",
        action="append",
        metavar="ID",
        help="play exactly these instances (e.g. purchase_order-d2-s17) instead of a suite",
    )
    what.add_argument("--trials", type=int, default=1, metavar="K", help="trials per instance")
    what.add_argument(
        "--max-steps", type=int, default=None, help="override every step budget (default: own)"
    )
    how = p.add_argument_group("where and how")
    how.add_argument(
        "--url",
        default=None,
        help="play against this CompanyOS server (default: in-process, over --store)",
    )
    how.add_argument(
        "--store",
        default=DEFAULT_STORE,
        help=f"event store of in-process play (default {DEFAULT_STORE}); memory:// keeps nothing",
    )
    how.add_argument("--workers", type=int, default=1, metavar="N", help="parallel workers")
    how.add_argument("--seed", type=int, default=0, help="base of the agents' own seeds")
    how.add_argument(
        "--label", default=None, help="store episodes under this agent label (one agent only)"
    )
    llm = p.add_argument_group("the llm agent (any OpenAI-compatible chat completions endpoint)")
    llm.add_argument("--llm-url", default=None, help="e.g. http://127.0.0.1:8001/v1")
    llm.add_argument("--model", default=None, help="the model name the endpoint serves")
    llm.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="environment variable holding the API key (default OPENAI_API_KEY; unset: none)",
    )
    llm.add_argument("--temperature", type=float, default=0.0)
    llm.add_argument("--max-tokens", type=int, default=None, help="per reply (default: none)")
    llm.add_argument(
        "--llm-timeout", type=float, default=60.0, help="seconds per request (default 60)"
    )
    llm.add_argument(
        "--llm-retries",
        type=int,
        default=2,
        help="retries on errors and timeouts before the reply counts as an invalid action",
    )
    llm.add_argument(
        "--history", type=int, default=None, help="turns of conversation kept (default: all)"
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "--out",
        default=DEFAULT_OUT,
        help=f"directory for results and plots (default {DEFAULT_OUT})",
    )
    out.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.set_defaults(run=run)
