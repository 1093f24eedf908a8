"""What `companyos eval` writes: the results table (terminal and markdown), the JSON results
file and the PNG plots. Everything here is computed from the episode records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from companyos.agents.stats import Record, Summary, report, summarize
from companyos.domain import ORIGINAL_DIFFICULTY, ORIGINAL_FAMILIES

PUBLISHED = {
    "random": {"mean_return": -2.04, "success": 0.02, "mean_steps": None},
    "scripted solver": {"mean_return": 21.3, "success": 1.0, "mean_steps": 6.6},
}
"""The original CompanyOS's published baselines (its five workflows, its one chaos level)."""

Report = dict[str, dict[str, Any]]


def pass_cells(s: Summary) -> list[str]:
    return [f"{p:.2f}" for p in s.pass_k]


def pct_interval(ci: tuple[float, float]) -> str:
    return f"{ci[0]:.0%}-{ci[1]:.0%}"


def pass_cells_ci(s: Summary) -> list[str]:
    """pass^k beside its bootstrap interval."""
    return [
        f"{p:.2f} ({lo:.2f}-{hi:.2f})" for p, (lo, hi) in zip(s.pass_k, s.pass_k_ci, strict=True)
    ]


def console_tables(rep: Report) -> list[Any]:
    """One rich table per agent: every (family, difficulty) cell, then every difficulty and
    the whole run."""
    from rich import box
    from rich.table import Table

    tables = []
    for agent, r in rep.items():
        k = len(r["all"].pass_k)
        table = Table(title=agent, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        # Numbers are never cut; a narrow terminal folds the family names instead.
        table.add_column("family", overflow="fold", min_width=12)
        for header in (
            "d",
            "n",
            "success",
            "95% CI",
            "return",
            "steps",
            *(f"pass^{j}" for j in range(1, k + 1)),
        ):
            table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
        rows = [(f, str(d), s, None) for (f, d), s in r["cells"].items()]
        rows += [("all", str(d), s, "bold") for d, s in r["difficulty"].items()]
        rows.append(("all", "all", r["all"], "bold"))
        for family, d, s, style in rows:
            table.add_row(
                family,
                d,
                str(s.episodes),
                f"{s.success:.1%}",
                pct_interval(s.success_ci),
                f"{s.mean_return:+.2f}",
                f"{s.mean_steps:.1f}",
                *pass_cells(s)[:k],
                style=style,
            )
        tables.append(table)
    return tables


def original_comparison(records: list[Record]) -> dict[str, Summary]:
    """Ours on the original's five workflows at its chaos level (difficulty 2), per agent."""
    mine = [
        r for r in records if r.family in ORIGINAL_FAMILIES and r.difficulty == ORIGINAL_DIFFICULTY
    ]
    agents = dict.fromkeys(r.agent for r in mine)
    return {a: summarize([r for r in mine if r.agent == a]) for a in agents}


def markdown(rep: Report, records: list[Record], command: str, note: str = "") -> str:
    agents = list(rep)
    difficulties = sorted({r.difficulty for r in records})
    families = list(dict.fromkeys(r.family for r in records))
    lines = [
        f"`{command}`",
        "",
        *([note, ""] if note else []),
        "Success rate per family and difficulty:",
        "",
        "| family | " + " | ".join(f"{a} d{d}" for a in agents for d in difficulties) + " |",
        "|---|" + "---:|" * (len(agents) * len(difficulties)),
    ]

    def cell(agent: str, key: Any) -> str:
        s = rep[agent]["cells"].get(key)
        return "-" if s is None else f"{s.success:.0%}"

    for f in families:
        lines.append(
            f"| {f} | " + " | ".join(cell(a, (f, d)) for a in agents for d in difficulties) + " |"
        )
    overall = [
        f"**{rep[a]['difficulty'][d].success:.0%}**" if d in rep[a]["difficulty"] else "-"
        for a in agents
        for d in difficulties
    ]
    lines += ["| **all** | " + " | ".join(overall) + " |", ""]
    k = min(len(rep[a]["all"].pass_k) for a in agents)
    lines += [
        f"Per difficulty (success with its Wilson 95% interval, mean return, mean steps, model "
        f"tokens; pass^1..pass^{k} with bootstrap 95% intervals over instances):",
        "",
        "| agent | d | episodes | success | 95% CI | return | steps | tokens | "
        + " | ".join(f"pass^{j}" for j in range(1, k + 1))
        + " |",
        "|---|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * k,
    ]
    for a in agents:
        rows = [(str(d), s) for d, s in rep[a]["difficulty"].items()] + [("all", rep[a]["all"])]
        for d, s in rows:
            lines.append(
                f"| {a} | {d} | {s.episodes} | {s.success:.1%} | {pct_interval(s.success_ci)} | "
                f"{s.mean_return:+.2f} | {s.mean_steps:.1f} | "
                f"{s.prompt_tokens + s.completion_tokens or '-'} | "
                + " | ".join(pass_cells_ci(s)[:k])
                + " |"
            )
    original = original_comparison(records)
    if original:
        lines += [
            "",
            "The original's five workflows at its chaos level (difficulty 2), beside the "
            "original's published figures:",
            "",
            "| agent | episodes | success | mean return | mean steps |",
            "|---|---:|---:|---:|---:|",
        ]
        for a, s in original.items():
            lines.append(
                f"| {a} (ours) | {s.episodes} | {s.success:.1%} | {s.mean_return:+.2f} | "
                f"{s.mean_steps:.1f} |"
            )
        for name, p in PUBLISHED.items():
            steps = "-" if p["mean_steps"] is None else f"~{p['mean_steps']}"
            lines.append(
                f"| {name} (original, published) | - | ~{p['success']:.0%} | "
                f"{p['mean_return']:+.2f} | {steps} |"
            )
    return "\n".join(lines) + "\n"


def results_json(config: dict[str, Any], rep: Report, records: list[Record]) -> dict[str, Any]:
    def cells(groups: dict[Any, Summary], *names: str) -> list[dict[str, Any]]:
        out = []
        for key, s in groups.items():
            keys = key if isinstance(key, tuple) else (key,)
            out.append({**dict(zip(names, keys, strict=True)), **s.as_dict()})
        return out

    return {
        "config": config,
        "summary": {
            agent: {
                "all": r["all"].as_dict(),
                "by_difficulty": cells(r["difficulty"], "difficulty"),
                "by_family": cells(r["family"], "family"),
                "by_family_and_difficulty": cells(r["cells"], "family", "difficulty"),
            }
            for agent, r in rep.items()
        },
        "original_comparison": {
            "ours": {a: s.as_dict() for a, s in original_comparison(records).items()},
            "published": PUBLISHED,
        },
        "episodes": [r.as_dict() for r in records],
    }


def write_results(
    out: Path, config: dict[str, Any], records: list[Record], plots: bool = True
) -> dict[str, Path]:
    """Write results.json, results.md and (unless ``plots`` is false) the PNGs into ``out``;
    returns what was written, by kind."""
    out.mkdir(parents=True, exist_ok=True)
    rep = report(records)
    written = {"json": out / "results.json", "markdown": out / "results.md"}
    written["json"].write_text(json.dumps(results_json(config, rep, records), indent=2) + "\n")
    note = ""
    if config.get("interrupted"):
        note = (
            f"**Interrupted**: {len(records)} of {config.get('planned')} episodes; the "
            "intervals are those of what was played."
        )
    written["markdown"].write_text(markdown(rep, records, config["command"], note))
    if plots:
        from .eval_plots import plot_returns, plot_success

        written["success_plot"] = plot_success(rep, out / "success_by_difficulty.png")
        written["returns_plot"] = plot_returns(records, out / "return_distribution.png")
    return written


__all__ = ["console_tables", "markdown", "report", "results_json", "write_results"]
