"""The PNG plots of the analytics report (matplotlib, the Agg backend: no display needed).

Each function takes the already-aggregated figures of `report.report_data` (so the pictures
and the tables of the report cannot disagree) and returns the PNG's bytes. Agents keep one
colour across every plot (`agent_colors`).
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

DPI = 110
WIDTH = 8.0  # inches: 880 px at DPI, readable embedded in a page at its natural size


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # before pyplot is imported: never a display, never a GUI toolkit
    import matplotlib.pyplot as plt

    return plt


def agent_colors(agents: Sequence[str]) -> dict[str, str]:
    """One colour per agent, in the given order, every one distinct: matplotlib's ten-colour
    cycle for up to ten agents, its twenty-colour table (the ten, then their light shades) up
    to twenty, evenly spaced hues beyond. The report's tables show the same swatches."""
    return dict(zip(agents, palette(len(agents)), strict=True))


def palette(n: int) -> list[str]:
    """``n`` distinct colours as ``#rrggbb`` (see `agent_colors`)."""
    from matplotlib import colormaps
    from matplotlib.colors import hsv_to_rgb, to_hex

    if n <= 10:
        return [to_hex(c) for c in colormaps["tab10"].colors[:n]]
    if n <= 20:
        tab20 = colormaps["tab20"].colors
        order = [*range(0, 20, 2), *range(1, 20, 2)]  # the strong shades first
        return [to_hex(tab20[i]) for i in order[:n]]
    return [to_hex(hsv_to_rgb((i / n, 0.65, 0.85 - 0.25 * (i % 2)))) for i in range(n)]


def returns_histogram(
    edges: Sequence[float],
    counts: Mapping[str, Sequence[int]],
    means: Mapping[str, float | None],
    colors: Mapping[str, str],
) -> bytes:
    """The distribution of episode returns: one histogram per agent, stacked vertically over
    the same bins and axes (small multiples: overlaid fills of several agents turn to mud),
    each with the agent's exact mean marked."""
    plt = _pyplot()
    agents = list(counts)
    height = min(12.0, 1.0 + 1.35 * len(agents))
    fig, axes = plt.subplots(
        len(agents), 1, figsize=(WIDTH, height), dpi=DPI, sharex=True, sharey=True, squeeze=False
    )
    for ax, agent in zip(axes[:, 0], agents, strict=True):
        row = counts[agent]
        mean = means.get(agent)
        ax.stairs(row, edges, fill=True, color=colors[agent], alpha=0.75)
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        if mean is not None:
            ax.axvline(mean, color="black", lw=1.2, ls="--")
        ax.text(
            0.01,
            0.92,
            f"{agent}  (n={sum(row)}, mean {_num(mean)}; dashed)",
            transform=ax.transAxes,
            va="top",
            fontsize="small",
            bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none", "pad": 1.5},
        )
        ax.grid(axis="y", alpha=0.3)
        ax.yaxis.get_major_locator().set_params(integer=True, nbins=3)
    # Headroom above the tallest bar for each panel's label (the y axis is shared).
    axes[0, 0].set_ylim(0, max(max(r, default=0) for r in counts.values()) * 1.4 + 0.5)
    axes[-1, 0].set_xlabel("episode return (ended episodes)")
    fig.supylabel("episodes", fontsize="medium")
    fig.suptitle("Return distribution by agent")
    fig.tight_layout()
    return _png(plt, fig)


def success_by_chaos(
    rows: Sequence[Mapping[str, Any]], agents: Sequence[str], colors: Mapping[str, str]
) -> bytes:
    """Success rate of the ended episodes in which each kind of chaos was present: horizontal
    bars (the kind names are long), one per agent, each labelled successes/episodes."""
    plt = _pyplot()
    kinds = list(dict.fromkeys(r["chaos_kind"] for r in rows))
    present = [a for a in agents if any(r["agent"] == a for r in rows)]
    by = {(r["chaos_kind"], r["agent"]): r for r in rows}
    band = 0.8 / max(1, len(present))
    height = min(12.0, max(3.2, 0.13 * len(kinds) * len(present) + 0.15 * len(kinds) + 1.6))
    fig, ax = plt.subplots(figsize=(WIDTH, height), dpi=DPI)
    for j, agent in enumerate(present):
        ys, xs, notes = [], [], []
        for i, kind in enumerate(kinds):
            r = by.get((kind, agent))
            if r is None:
                continue
            ys.append(i - 0.4 + band * (j + 0.5))
            xs.append(100 * r["success_rate"])
            notes.append(f"{r['successes']}/{r['episodes']}")
        ax.barh(ys, xs, height=band * 0.9, color=colors[agent], label=agent)
        # A 0 % bar has no width: a short stub in the agent's colour tells "none succeeded"
        # from "no such episode".
        zeros = [y for y, x in zip(ys, xs, strict=True) if x == 0]
        if zeros:
            ax.barh(zeros, [0.8] * len(zeros), height=band * 0.9, color=colors[agent])
        for y, x, note in zip(ys, xs, notes, strict=True):
            ax.text(max(x, 0.8) + 1, y, note, va="center", fontsize=7, color="#333333")
    ax.set_yticks(range(len(kinds)))
    ax.set_yticklabels(kinds)
    ax.invert_yaxis()  # the first kind on top, as in the table
    ax.set_xlim(0, 112)  # room for the n labels past 100 %
    ax.set_xticks(range(0, 101, 20))
    ax.set_xlabel("success rate (%) of ended episodes with this chaos present")
    ax.set_ylabel("chaos kind")
    ax.grid(axis="x", alpha=0.3)
    _legend_outside(ax)
    return _finish(plt, fig, ax, "Success by chaos kind")


def failure_taxonomy(
    labels: Sequence[str],
    by_agent: Sequence[Mapping[str, Any]],
    agents: Sequence[str],
    colors: Mapping[str, str],
) -> bytes:
    """Failures per taxonomy label (the first unrecovered mistake), stacked by agent, the most
    frequent label on top, each bar labelled with its total."""
    plt = _pyplot()
    counts = {(r["label"], r["agent"]): r["failures"] for r in by_agent}
    height = min(12.0, max(3.0, 0.38 * len(labels) + 1.5))
    fig, ax = plt.subplots(figsize=(WIDTH, height), dpi=DPI)
    left = [0] * len(labels)
    for agent in agents:
        widths = [counts.get((label, agent), 0) for label in labels]
        if not any(widths):
            continue
        ax.barh(range(len(labels)), widths, left=left, color=colors[agent], label=agent)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    for i, total in enumerate(left):
        ax.text(total + max(left) * 0.01, i, str(total), va="center", fontsize=8)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlim(0, max(left) * 1.1 + 0.5)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("failed episodes")
    ax.set_ylabel("first unrecovered mistake")
    ax.grid(axis="x", alpha=0.3)
    _legend_outside(ax)
    return _finish(plt, fig, ax, "Failure taxonomy")


def point_of_no_return(ponr: Mapping[str, Any], colors: Mapping[str, str]) -> bytes:
    """Two histograms of the failed episodes whose point of no return is known, stacked by
    agent: where in the episode it fell (as a fraction of the episode's steps), and how many
    steps were played after it (effort spent on an episode already lost)."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(WIDTH + 1.6, 4.2), dpi=DPI)
    panels = (
        (
            left,
            ponr["fraction"],
            "point of no return / episode steps",
            "Where the episode was lost",
        ),
        (right, ponr["steps_after"], "steps played after it", "Steps played after the loss"),
    )
    for ax, hist, xlabel, title in panels:
        edges = hist["edges"]
        widths = [b - a for a, b in itertools.pairwise(edges)]
        bottom = [0] * len(widths)
        for agent, row in hist["by_agent"].items():
            ax.bar(
                edges[:-1],
                row,
                width=widths,
                bottom=bottom,
                align="edge",
                color=colors[agent],
                edgecolor="white",
                linewidth=0.6,
                label=agent,
            )
            bottom = [a + b for a, b in zip(bottom, row, strict=True)]
        ax.set_xlabel(xlabel)
        ax.set_ylabel("failed episodes")
        ax.set_title(title, fontsize="medium")
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.grid(axis="y", alpha=0.3)
    left.set_xlim(0, 1)
    handles, names = left.get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=max(1, len(names)), fontsize="small")
    fig.suptitle(f"Point of no return ({ponr['plotted']} failed episodes)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))  # the bottom strip is the legend's
    return _png(plt, fig)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _legend_outside(ax: Any) -> None:
    # Right of the axes: inside, it hides the bars of whichever category sits under it.
    ax.legend(
        fontsize="small",
        title="agent",
        title_fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
    )


def _finish(plt: Any, fig: Any, ax: Any, title: str) -> bytes:
    ax.set_title(title)
    fig.tight_layout()
    return _png(plt, fig)


def _png(plt: Any, fig: Any) -> bytes:
    buf = io.BytesIO()
    # No timestamp or software tag in the file: the same data gives the same bytes.
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
