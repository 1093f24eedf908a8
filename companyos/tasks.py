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


def catalogue() -> dict[str, Any]:
    """Everything `companyos tasks` prints, as data (its --json output)."""
    return {
        "generator": GENERATOR,
        "families": [
            {
                "name": f.name,
                "title": f.title,
                "summary": f.summary,
                "original": f.original,
                "held_out": f.name == HELD_OUT,
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
    data = catalogue()
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    _print_tables(data)
    return 0


def _print_tables(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    fams = Table("family", "what the agent must do", "", title="Workflow families")
    for f in data["families"]:
        mark = "original" if f["original"] else ("held out" if f["held_out"] else "")
        fams.add_row(f["name"], f["summary"], mark)
    console.print(fams)
    levels = Table(
        "level",
        "faults",
        "set-up chaos",
        "everywhere",
        "polls",
        "rejections",
        "SLA",
        title="Difficulty (2 = the original CompanyOS)",
    )
    for d in data["difficulties"]:
        levels.add_row(
            str(d["level"]),
            f"{d['fault_rate']:.0%}",
            f"p={d['setup_chaos']:g}",
            "yes" if d["extra_chaos"] else "no",
            "{}-{}".format(*d["approval_polls"]),
            f"{d['rejection_rate']:.0%}",
            f"{d['sla_minutes']} min" if d["sla_minutes"] else "-",
        )
    console.print(levels)
    chaos = Table(title="Chaos catalogue")
    chaos.add_column("kind", no_wrap=True)
    for header in ("what happens", "d0", "d1", "d2", "d3"):
        chaos.add_column(header)
    for k in data["chaos"]:
        name = k["kind"] + (" *" if k["original"] else "")
        chaos.add_row(name, k["what"], *k["levels"].values())
    console.print(chaos)
    console.print("* the original CompanyOS's seven kinds")
    suites = Table("suite", "instances", "seeds", "description", title="Frozen suites")
    for s in data["suites"]:
        suites.add_row(
            s["name"], str(s["instances"]), "{}-{}".format(*s["seeds"]), s["description"]
        )
    console.print(suites)
    console.print(
        f"generator {data['generator']}; `companyos tasks --suite test` lists a suite's instance "
        "ids, `companyos tasks --instance purchase_order-d2-s17` shows one."
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
        "--suite", default=None, help=f"print the instance ids of a suite ({', '.join(SUITES)})"
    )
    p.add_argument(
        "--instance",
        default=None,
        metavar="ID",
        help="describe one instance: task text, goal, chaos, step budget, fingerprint",
    )
    p.set_defaults(run=run)
