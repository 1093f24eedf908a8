"""docs/events.md, generated from the code: every event type's payload (the ``events.data``
column of the warehouse) and every milestone name (``steps.gained`` / ``steps.lost``).

    python -m companyos.analytics.docs            # rewrite docs/events.md
    python -m companyos.analytics.docs --check    # exit 1 if it is out of date

Field descriptions are the attribute docstrings of the models in `companyos.events.types`
(a string right under a field); the milestone names are those of real instances of every
family, as `projections.milestones.milestones_for` builds them.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import itertools
import sys
import textwrap
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from companyos.events.types import EVENT_TYPES, Event

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "docs" / "events.md"
SEEDS = range(3)
"""Seeds per family and difficulty whose milestone names are listed."""


NOTES: dict[tuple[str, str], str] = {
    ("EpisodeStarted", "seed"): "The instance's seed.",
    ("EpisodeStarted", "scenario"): "The instance's scenario (its family, for generated ones).",
    ("EpisodeStarted", "difficulty"): "Chaos level 0-3.",
    ("EpisodeStarted", "max_steps"): "The step budget.",
    ("EpisodeStarted", "agent"): "The name the client gave its agent (warehouse: episodes.agent).",
    ("EpisodeStarted", "forked_from"): "The episode and step this one was forked from.",
    ("EpisodeEnded", "step"): "Tool calls made when it ended.",
    ("StepScored", "step"): "The step scored.",
    ("StepScored", "reward"): "The step's reward.",
    ("StepScored", "total"): "The return after the step.",
    ("StepScored", "gained"): "Milestones gained by the step (names below).",
    ("StepScored", "lost"): "Milestones lost by the step.",
    ("StepScored", "terms"): "The reward's terms by name (progress, step cost, penalties).",
    ("ToolCalled", "step"): "The call's number in the episode: 1, 2, ...",
    ("ToolCalled", "app"): "ticketdesk, datahub or approvalflow.",
    ("ToolCalled", "params"): "The parameters as sent.",
    ("ToolCalled", "refused"): "Why the parameters were not stored (too large), if so.",
    ("InvalidAction", "code"): "Why the call was invalid (unknown_tool, invalid_params, ...).",
    ("ActionRejected", "code"): "The rule that refused the call.",
    ("FaultInjected", "kind"): "unavailable (transient), rate_limited or outage.",
    ("ChaosInjected", "kind"): "The chaos kind (warehouse: chaos.kind).",
    ("ChaosInjected", "target"): "What it hits: a metric, ticket, person, approval id, tool.",
    ("ChaosInjected", "params"): "Its parameters (days stale, latency, reason, ...).",
    ("ApprovalSubmitted", "approver"): "The person id the request is sent to.",
    ("ApprovalSubmitted", "data"): "The request's fields as submitted.",
    ("ApprovalPolled", "polls"): "Status checks of this request so far.",
    ("ApprovalPolled", "status"): "pending, approved, rejected or expired.",
    ("ApprovalDecided", "cause"): "review (on its merits), chance (a rejection drawn by chaos),"
    " wrong_approver, ticket_unverified, missing_prior_approval, data_mismatch.",
    ("ApprovalDecided", "reason"): "The approver's words.",
    ("ApprovalEscalated", "reason"): "The agent's reason for escalating.",
    ("MetricQueried", "stale"): "The value read was stale.",
    ("TicketUpdated", "field"): "The field changed.",
}
"""Meanings of fields that carry no docstring in `companyos.events.types`."""


def _field_docs(cls: type[BaseModel]) -> dict[str, str]:
    """Attribute docstrings: a string expression right after an annotated field."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    out: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            out[node.target.id] = " ".join(after.value.value.split())
    for (owner, name), note in NOTES.items():
        if owner == cls.__name__:
            out.setdefault(name, note)
    return out


def _type_name(annotation: Any) -> str:
    if annotation is type(None):
        return "null"
    if annotation is Any:
        return "any"
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in args)
    if origin is not None and getattr(origin, "__name__", "") == "Literal":
        return " \\| ".join(f"`{a!r}`" for a in args)
    if str(origin) == "typing.Literal":
        return " \\| ".join(f"`{a!r}`" for a in args)
    if origin in (list, tuple):
        inner = [a for a in args if a is not Ellipsis]
        return f"list of {_type_name(inner[0])}" if inner else "list"
    if origin is dict:
        return f"object of {_type_name(args[1])}" if args else "object"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _nested(annotation: Any) -> list[type[BaseModel]]:
    """Models a field's type refers to (documented after the events)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in get_args(annotation) for m in _nested(a)]


def _default(field: Any) -> str:
    if field.default_factory is not None:
        return f"`{field.default_factory()!r}`"
    if field.default is PydanticUndefined:
        return "required"
    return f"`{field.default!r}`"


def _fields_table(cls: type[BaseModel], skip: tuple[str, ...] = ()) -> list[str]:
    docs = _field_docs(cls)
    rows = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for name, f in cls.model_fields.items():
        if name in skip:
            continue
        rows.append(
            f"| `{name}` | {_type_name(f.annotation)} | {_default(f)} | {docs.get(name, '')} |"
        )
    if len(rows) == 2:
        return ["No payload fields."]
    return rows


def _doc(cls: type) -> str:
    own = cls.__dict__.get("__doc__")
    return " ".join(inspect.cleandoc(own).split()) if own else ""


def _events_section() -> tuple[list[str], list[type[BaseModel]]]:
    out: list[str] = []
    nested: list[type[BaseModel]] = []
    for name in sorted(EVENT_TYPES):
        cls = EVENT_TYPES[name]
        out += ["", f"### {name}", ""]
        out.append(f"Schema version {cls.schema_version}." + (f" {_doc(cls)}" if _doc(cls) else ""))
        out.append("")
        out += _fields_table(cls, skip=("type",))
        for f in cls.model_fields.values():
            for m in _nested(f.annotation):
                if m not in nested and not issubclass(m, Event):
                    nested.append(m)
    return out, nested


def _models_section(models: list[type[BaseModel]]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(models):
        cls = models[i]
        out += ["", f"### {cls.__name__}", ""]
        if _doc(cls):
            out += [_doc(cls), ""]
        out += _fields_table(cls)
        for f in cls.model_fields.values():
            for m in _nested(f.annotation):
                if m not in models:
                    models.append(m)
        i += 1
    return out


def _milestones_section() -> list[str]:
    from companyos.domain import DIFFICULTIES, FAMILY_NAMES
    from companyos.domain.instances import setup_world
    from companyos.projections.milestones import milestones_for

    out = [
        "",
        "A milestone name is its kind's pattern filled with the task's objects: `ticket_<field>`"
        " and `ticket_<status>` for the task's ticket (`:<ticket id>` appended for any further"
        " ticket), `access:<dataset>`, `data_fresh:<metric>`, `data_read:<metric>`,"
        " `submitted:<approval type>`, `approved:<approval type>`, `decided:<decision>`, and"
        " `clean` (no collateral damage). The names below are those of real instances (seeds"
        f" {SEEDS.start}-{SEEDS.stop - 1}, every difficulty), with their reward kind.",
        "",
        "| family | milestone | kind | needs first |",
        "|---|---|---|---|",
    ]
    for family in FAMILY_NAMES:
        seen: dict[str, tuple[str, tuple[str, ...]]] = {}
        for difficulty in DIFFICULTIES:
            for seed in SEEDS:
                world = setup_world(family, seed, difficulty)
                assert world.task is not None
                for m in milestones_for(world.task.goal):
                    seen.setdefault(m.id, (m.kind, m.prereqs))
        for mid, (kind, prereqs) in seen.items():
            needs = ", ".join(f"`{p}`" for p in prereqs)
            out.append(f"| {family} | `{mid}` | {kind} | {needs} |")
    return out


def render() -> str:
    events, nested = _events_section()
    lines = [
        "# Event payloads and milestone names",
        "",
        "<!-- Generated by `python -m companyos.analytics.docs`; do not edit by hand. -->",
        "",
        "Every event is stored with its type and a JSON payload: the warehouse's `events.data`"
        " column (query a field with `data->>'field'`). The tables below list each type's"
        " payload fields as the current schema version writes them (older versions are lifted"
        " on read by `companyos.events.upcasting`). Milestones are what `steps.gained` and"
        " `steps.lost` name. Table and column descriptions are in the warehouse itself:"
        " `SELECT table_name, column_name, comment FROM duckdb_columns()`.",
        "",
        f"## Event types ({len(EVENT_TYPES)})",
        *events,
        "",
        "## Nested payload objects",
        *_models_section(nested),
        "",
        "## Milestone names",
        *_milestones_section(),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    parser.add_argument("--out", type=Path, default=DEFAULT_PATH, help="the page to write")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        if current != text:
            print(f"{args.out} is out of date: run python -m companyos.analytics.docs")
            return 1
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
