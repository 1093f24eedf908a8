"""`companyos eval`: play agents on a suite's instances and report success, return, steps and
pass^k with 95% intervals, with a live progress bar, a results table, a JSON results file and
PNG plots.

Every episode is written to OUT/episodes.jsonl the moment it ends (its record, the model's
tokens, latency and raw replies), so nothing played is lost: Ctrl-C writes the results of what
was done, and ``--resume`` plays only what is missing, refusing a run whose settings differ
(OUT/run.json holds them)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from importlib import metadata
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
  llm      a model behind any OpenAI-compatible chat completions endpoint: native tool calls,
           or calls written in the reply's text (Hermes blocks, JSON, call syntax)

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

  companyos eval --agent llm --llm-url http://127.0.0.1:8001/v1 --model smollm2-135m \\
      --per-cell 1 --difficulty 0 --max-steps 8 --max-tokens 128 --resume

writes OUT/episodes.jsonl (every episode as it ends: record, tokens, latency, the model's raw
replies), OUT/run.json (the settings), OUT/results.json (config, summaries with 95% intervals,
every episode), OUT/results.md (the tables), OUT/success_by_difficulty.png and
OUT/return_distribution.png. Ctrl-C stops after writing what was done (exit status 130);
--resume then plays only the episodes still missing.
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
        tools_in_prompt=args.tools_in_prompt,
        prompt=args.prompt,
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
        ("--llm-url", args.llm_url, None),
        ("--temperature", args.temperature if args.llm_url or args.model else 0.0, 0.0),
        ("--max-tokens", args.max_tokens, None),
    ):
        if value != default:
            words += [flag, str(value)]
    return shlex.join(words)


def versions() -> dict[str, str]:
    """The versions that could change results (the environment, the client, Python)."""
    out = {"python": platform.python_version(), "platform": platform.platform(terse=True)}
    for package in ("companyos", "openenv-core", "openai", "pydantic"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


IDENTITY = ("agents", "labels", "instance_ids", "trials", "max_steps", "seed", "url", "llm")
"""The settings that change what an episode does: a resumed run must have the same."""


def read_log(path: Path) -> list[Any]:
    """The records of an episode log; a last line cut short by a crash is dropped (and cut
    from the file, so that appending goes on from a whole line)."""
    from companyos.agents.stats import Record

    if not path.exists():
        return []
    records, good = [], 0
    with path.open("rb") as f:
        for raw in f:
            try:
                records.append(Record.from_log(json.loads(raw)))
            except (ValueError, TypeError):
                break
            good += len(raw)
    if good != path.stat().st_size:
        with path.open("r+b") as f:
            f.truncate(good)
    return records


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from companyos.agents.harness import Setup, make_jobs, run_jobs
    from companyos.agents.registry import check_agent
    from companyos.domain import instance_id

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
    config: dict[str, Any] = {
        "command": command_line(args),
        "agents": agents,
        "labels": labels,
        "suite": None if args.instance else args.suite,
        "instances": len(instances),
        "instance_ids": [instance_id(*i) for i in instances],
        "trials": args.trials,
        "workers": args.workers,
        "url": args.url,
        "store": None if args.url else args.store,
        "llm": None if llm is None else llm.as_config(),
        "max_steps": args.max_steps,
        "seed": args.seed,
        "versions": versions(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    out_dir = Path(args.out)
    log_path, run_path = out_dir / "episodes.jsonl", out_dir / "run.json"
    done: list[Any] = []
    if args.resume and run_path.exists():
        before = json.loads(run_path.read_text())
        changed = [k for k in IDENTITY if before.get(k) != config.get(k)]
        if changed:
            raise EvalError(
                f"--resume: {out_dir} holds a run with other settings ({', '.join(changed)}); "
                "repeat its command (see run.json) or choose another --out"
            )
        config["started_at"] = before.get("started_at", config["started_at"])
        done = read_log(log_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not done:
        log_path.write_text("")  # a new run: the log starts empty
    run_path.write_text(json.dumps(config, indent=2) + "\n")
    jobs = make_jobs(agents, instances, args.trials)
    finished = {r.key for r in done}
    todo = [j for j in jobs if (j.agent, j.family, j.difficulty, j.seed, j.trial) not in finished]
    console = Console(stderr=True)
    where = f"server {args.url}" if args.url else f"in-process, store {args.store}"
    resumed = f" ({len(done)} done before, {len(todo)} to play)" if done else ""
    console.print(
        f"{len(jobs)} episodes: {', '.join(agents)} x {len(instances)} instances x "
        f"{args.trials} trial(s); {where}; {args.workers} worker(s){resumed}"
    )
    started = time.perf_counter()
    interrupted = False
    new: list[Any] = []
    try:
        with log_path.open("a") as log:
            _play(todo, setup, args.workers, agents, console, run_jobs, log, new)
    except KeyboardInterrupt:
        interrupted = True
    except (ConnectionError, OSError) as exc:
        raise EvalError(
            f"lost the connection to {args.url or args.store} ({exc}); nothing was lost that "
            f"was stored: the episodes played so far are in the log and in {log_path} "
            "(--resume goes on from there)"
        ) from exc
    elapsed = time.perf_counter() - started
    records = done + new
    # Workers finish in any order; report in the order asked for, whatever the parallelism.
    order = {name: i for i, name in enumerate([*agents, *FAMILY_NAMES])}
    records.sort(key=lambda r: (order[r.agent], order[r.family], r.difficulty, r.seed, r.trial))
    rate = len(new) / elapsed if elapsed else 0.0
    out = Console() if sys.stdout.isatty() else Console(width=120)  # a file has no width
    if records:
        for table in console_tables(report(records)):
            out.print(table)
    config |= {
        "episodes": len(records),
        "planned": len(jobs),
        "interrupted": interrupted,
        "seconds": round(elapsed, 3),
        "episodes_per_second": round(rate, 2),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if not records:
        out.print(f"interrupted before any episode ended; nothing to report ({log_path})")
        return 130
    written = write_results(out_dir, config, records, plots=not args.no_plots and not interrupted)
    out.print(
        f"{len(new)} episodes in {elapsed:.1f} s ({rate:.1f} episodes/s, "
        f"{args.workers} worker(s)); " + ", ".join(str(p) for p in [log_path, *written.values()])
    )
    if interrupted:
        out.print(
            f"interrupted: {len(records)} of {len(jobs)} episodes done and written; "
            "the same command with --resume plays the rest"
        )
        return 130
    return 0


def _play(
    jobs: list[Any],
    setup: Any,
    workers: int,
    agents: list[str],
    console: Any,
    run_jobs: Any,
    log: Any,
    records: list[Any],
) -> None:
    """Run the jobs under a progress bar per agent with its live success rate; each record is
    appended to ``records`` and written to ``log`` (one JSON line, flushed) as it comes."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    wins = dict.fromkeys(agents, 0)
    if not jobs:
        return
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
            log.write(json.dumps(record.log_line(), default=str) + "\n")
            log.flush()
            records.append(record)
            wins[record.agent] += record.success
            done = progress.tasks[bars[record.agent]].completed + 1
            progress.update(bars[record.agent], advance=1, rate=f"{wins[record.agent] / done:6.1%}")


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
    llm.add_argument(
        "--tools-in-prompt",
        action="store_true",
        help="describe the tools in the system prompt and read calls from the text (for a "
        "model whose chat template shows it no tools)",
    )
    llm.add_argument(
        "--prompt",
        choices=("full", "compact"),
        default="full",
        help="full: the system prompt that explains the systems' faults; compact: a short one "
        "and an example call before the task, for a small model (default full)",
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "--out",
        default=DEFAULT_OUT,
        help=f"directory for results and plots (default {DEFAULT_OUT})",
    )
    out.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    out.add_argument(
        "--resume",
        action="store_true",
        help="play only the episodes OUT/episodes.jsonl does not hold yet (same settings)",
    )
    p.set_defaults(run=run)
