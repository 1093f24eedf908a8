"""`companyos tasks`: what the scenario engine generates: families, the difficulty dial, the
chaos catalogue with its mapping to difficulties, the frozen suites, and single instances."""

from __future__ import annotations

import argparse
import json
from typing import Any

from companyos.domain import (
    FAMILIES,
    GENERATOR,
    HELD_OUT,
    LEVELS,
    SUITES,
    UnknownScenario,
    build_episode,
    build_instance,
    fingerprint,
    fold,
    instance_id,
    parse_instance_id,
)
from companyos.domain.chaos import CATALOGUE

BUDGET_SEEDS = 4
"""Instances per family and difficulty whose step budgets `budgets` looks at (the test suite's
first ones: a budget depends on the seed's chaos draws, and building one takes a few ms)."""


def budgets(family: str) -> tuple[int, int]:
    """The smallest and largest step budget of the family's instances, every difficulty, over
    the first `BUDGET_SEEDS` seeds of the test suite: what the README's family table shows."""
    seeds = SUITES["test"].seeds
    found = [
        build_instance(family, seeds.start + i, d).max_steps
        for d in LEVELS
        for i in range(BUDGET_SEEDS)
    ]
    return min(found), max(found)


def family_rows() -> list[tuple[str, str, str]]:
    """(name with its mark, summary, budget range) of every family, in order."""
    out = []
    for f in FAMILIES.values():
        mark = " (original)" if f.original else (" (held out)" if f.name == HELD_OUT else "")
        lo, hi = budgets(f.name)
        out.append((f"{f.name}{mark}", f.summary, f"{lo}-{hi}" if lo != hi else str(lo)))
    return out


def markdown_families() -> str:
    """The README's family table, made from the code (a test checks the README has it)."""
    lines = [
        f"| family | the task | step budget (d0-d3, test seeds, {BUDGET_SEEDS} each) |",
        "|---|---|---|",
    ]
    for name, summary, budget in family_rows():
        family, _, mark = name.partition(" ")
        lines.append(f"| `{family}`{' ' + mark if mark else ''} | {summary} | {budget} |")
    return "\n".join(lines)


def catalogue(with_budgets: bool = False) -> dict[str, Any]:
    """Everything `companyos tasks` prints, as data (its --json output); step budgets only
    when asked (they take seconds: instances are built to know them)."""
    return {
        "generator": GENERATOR,
        "families": [
            {
                "name": f.name,
                "title": f.title,
                "summary": f.summary,
                "original": f.original,
                "held_out": f.name == HELD_OUT,
                **({"budget": list(budgets(f.name))} if with_budgets else {}),
            }
            for f in FAMILIES.values()
        ],
        "difficulties": [
            {
                "level": p.level,
                "fault_rate": p.fault_rate,
                "setup_chaos": p.setup_chaos,
                "extra_chaos": p.extra_chaos,
                "approval_polls": list(p.polls),
                "rejection_rate": p.rejection_rate,
                "sla_minutes": p.sla_minutes,
            }
            for p in LEVELS.values()
        ],
        "chaos": [
            {
                "kind": k.name,
                "original": k.original,
                "what": k.what,
                "levels": dict(zip(map(str, LEVELS), k.levels, strict=True)),
            }
            for k in CATALOGUE
        ],
        "suites": [
            {
                "name": s.name,
                "description": s.description,
                "families": list(s.families),
                "seeds": [s.seeds.start, s.seeds.stop],
                "per_cell": s.per_cell,
                "instances": len(s.instances()),
            }
            for s in SUITES.values()
        ],
    }


def describe_instance(text: str) -> dict[str, Any]:
    parsed = parse_instance_id(text)
    if parsed is None:
        raise UnknownScenario(
            f"not an instance id: {text!r}; instance ids look like purchase_order-d2-s17 "
            "(family, difficulty, seed)"
        )
    family, difficulty, seed = parsed
    if difficulty not in LEVELS:
        raise UnknownScenario(f"difficulty must be one of {list(LEVELS)}, not {difficulty}")
    inst = build_instance(family, seed, difficulty)
    world = fold(build_episode(family, seed, difficulty))
    return {
        "instance_id": inst.instance_id,
        "fingerprint": fingerprint(family, difficulty, seed),
        "family": family,
        "difficulty": difficulty,
        "seed": seed,
        "task": inst.text,
        "max_steps": inst.max_steps,
        "oracle_worst_case_steps": inst.worst_case,
        "goal": inst.goal.model_dump(mode="json"),
        "chaos": [
            {"kind": e.kind, "target": e.target, "params": e.params}
            for e in inst.setup
            if e.type == "ChaosInjected"
        ],
        "tickets": sorted(world.tickets),
        "metrics": sorted(world.metrics),
    }


def run(args: argparse.Namespace) -> int:
    if args.instance:
        print(json.dumps(describe_instance(args.instance), indent=2))
        return 0
    if args.suite:
        suite = SUITES.get(args.suite)
        if suite is None:
            raise UnknownScenario(f"unknown suite {args.suite!r}: use one of {', '.join(SUITES)}")
        for family, difficulty, seed in suite.instances():
            print(instance_id(family, difficulty, seed))
        return 0
    if args.markdown:
        print(markdown_families())
        return 0
    data = catalogue(args.budgets)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    _print_tables(data)
    return 0


def _print_tables(data: dict[str, Any]) -> None:
    from rich.console import Console

    from .tables import print_table

    console = Console()
    rows = []
    for f in data["families"]:
        mark = "original" if f["original"] else ("held out" if f["held_out"] else "")
        row = [f["name"], f["summary"], mark]
        if "budget" in f:
            lo, hi = f["budget"]
            row.insert(2, f"{lo}-{hi}" if lo != hi else str(lo))
        rows.append(row)
    budgeted = "budget" in data["families"][0]
    print_table(
        console,
        ["family", "what the agent must do", *(["budget"] if budgeted else []), ""],
        rows,
        title="Workflow families"
        + (f" (budget: step limits, d0-d3, {BUDGET_SEEDS} test seeds each)" if budgeted else ""),
        text={1},
    )
    levels = [
        [
            str(d["level"]),
            f"{d['fault_rate']:.0%}",
            f"p={d['setup_chaos']:g}",
            "yes" if d["extra_chaos"] else "no",
            "{}-{}".format(*d["approval_polls"]),
            f"{d['rejection_rate']:.0%}",
            f"{d['sla_minutes']} min" if d["sla_minutes"] else "-",
        ]
        for d in data["difficulties"]
    ]
    print_table(
        console,
        ["level", "faults", "set-up chaos", "everywhere", "polls", "rejections", "SLA"],
        levels,
        title="Difficulty (2 = the original CompanyOS)",
    )
    chaos = [
        [k["kind"] + (" *" if k["original"] else ""), k["what"], *k["levels"].values()]
        for k in data["chaos"]
    ]
    print_table(
        console,
        ["kind", "what happens", "d0", "d1", "d2", "d3"],
        chaos,
        title="Chaos catalogue (* the original CompanyOS's seven kinds)",
        text={1},
    )
    suites = [
        [s["name"], str(s["instances"]), "{}-{}".format(*s["seeds"]), s["description"]]
        for s in data["suites"]
    ]
    print_table(
        console, ["suite", "instances", "seeds", "description"], suites,
        title="Frozen suites", text={3},
    )  # fmt: skip
    console.print(
        f"generator {data['generator']}; `companyos tasks --budgets` adds step budgets, "
        "`--suite test` lists a suite's instance ids, `--instance purchase_order-d2-s17` shows "
        "one, and the original CompanyOS's five tasks run under its own ids "
        "(task_vendor_onboarding, ...)."
    )


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "tasks",
        help="list workflow families, difficulties, the chaos catalogue and the suites",
        description="What the scenario engine generates. Every instance is (family, difficulty, "
        "seed), named by an instance id such as purchase_order-d2-s17 that names the same "
        "world in every version of the generator.",
    )
    p.add_argument("--json", action="store_true", help="print the catalogue as JSON")
    p.add_argument(
        "--budgets",
        action="store_true",
        help="add each family's range of step budgets (builds instances: a few seconds)",
    )
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print the families table as the README has it (made from the code)",
    )
    p.add_argument(
        "--suite", default=None, help=f"print the instance ids of a suite ({', '.join(SUITES)})"
    )
    p.add_argument(
        "--instance",
        default=None,
        metavar="ID",
        help="describe one instance: task text, goal, chaos, step budget, fingerprint",
    )
    p.set_defaults(run=run)
