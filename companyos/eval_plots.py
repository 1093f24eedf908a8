"""The PNG plots of `companyos eval` (matplotlib, the Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from companyos.agents.stats import Record, group_records


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_success(rep: dict[str, dict[str, Any]], path: Path) -> Path:
    """Success rate by difficulty, one line per agent (with pass^k dashed when trials > 1)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    for agent, r in rep.items():
        levels = list(r["difficulty"])
        rates = [100 * r["difficulty"][d].success for d in levels]
        (line,) = ax.plot(levels, rates, marker="o", label=f"{agent}: success")
        k = len(r["all"].pass_k)
        if k > 1:
            strict = [100 * r["difficulty"][d].pass_k[-1] for d in levels]
            ax.plot(levels, strict, ls="--", color=line.get_color(), label=f"{agent}: pass^{k}")
    ax.set_xlabel("difficulty (2 = the original CompanyOS)")
    ax.set_ylabel("success (%)")
    ax.set_ylim(-3, 103)
    ax.set_xticks(sorted({d for r in rep.values() for d in r["difficulty"]}))
    ax.grid(alpha=0.3)
    return _save(plt, fig, ax, "Success by difficulty", path)


def plot_returns(records: list[Record], path: Path) -> Path:
    """The distribution of episode returns: a box per agent at every difficulty."""
    plt = _pyplot()
    agents = list(dict.fromkeys(r.agent for r in records))
    levels = sorted({r.difficulty for r in records})
    by = group_records(records, lambda r: (r.agent, r.difficulty))
    fig, ax = plt.subplots(figsize=(7.2, 4.0), dpi=110)
    width = 0.8 / len(agents)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, agent in enumerate(agents):
        present = [d for d in levels if (agent, d) in by]
        data = [[r.total_return for r in by[(agent, d)]] for d in present]
        positions = [d - 0.4 + width * (i + 0.5) for d in present]
        box = ax.boxplot(
            data,
            positions=positions,
            widths=width * 0.9,
            patch_artist=True,
            medianprops={"color": "black"},
        )
        color = colors[i % len(colors)]
        for patch in box["boxes"]:
            patch.set(facecolor=color, alpha=0.5)
        for flier in box["fliers"]:
            flier.set(markersize=2, markeredgecolor=color)
        ax.plot([], [], color=color, lw=6, alpha=0.5, label=agent)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(levels)
    ax.set_xticklabels([f"d{d}" for d in levels])
    ax.set_xlabel("difficulty")
    ax.set_ylabel("episode return")
    ax.grid(axis="y", alpha=0.3)
    return _save(plt, fig, ax, "Return distribution", path)


def _save(plt: Any, fig: Any, ax: Any, title: str, path: Path) -> Path:
    ax.legend(fontsize="small")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
