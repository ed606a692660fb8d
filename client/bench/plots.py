"""The benchmark's figures: a critical-difference diagram per budget, and each dataset's final metric against the
budget. Matplotlib with the Agg backend, as ``client.comparison.plots``.

The diagram is Demšar's (2006, Fig. 1): the average ranks on an axis, best (1) on the left; each algorithm hangs from
its rank, the better half labelled on the left, the rest on the right; a thick bar joins each group of algorithms the
Nemenyi test does not tell apart (within the critical difference, drawn above the axis).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from client.bench.stats import Interval, Ranking  # noqa: E402

ROW = 0.28  # inches between two labels of the diagram
MARKERS = "osD^vP*Xph<>"
OUTLIER = 2.0  # the axis stops at this many times the 70th percentile of the means, when some run far above it
DODGE = 1.012  # factor between the x positions of two neighbouring lines at one budget (the axis is logarithmic)


def cd_diagram(ranking: Ranking, path: Path, title: str) -> None:
    """Draw ``ranking`` as a critical-difference diagram into ``path`` (PNG)."""
    names = ranking.algorithms
    k = len(names)
    left = names[: math.ceil(k / 2)]
    right = names[math.ceil(k / 2):]
    rows = max(len(left), len(right))
    bars = len(ranking.cliques)
    depth = rows + 1.0 + bars * 0.5  # in rows, below the axis
    fig = plt.figure(figsize=(7.5, ROW * (depth + 2.6) + 0.3))
    ax = fig.add_axes((0.22, 0.0, 0.56, 1.0))
    ax.set_xlim(1, max(k, 2))
    ax.set_ylim(depth, -2.6)
    ax.axis("off")
    ax.hlines(0, 1, max(k, 2), color="black", linewidth=1)
    for r in range(1, max(k, 2) + 1):
        ax.vlines(r, -0.25, 0, color="black", linewidth=1)
        ax.text(r, -0.4, str(r), ha="center", va="bottom", fontsize=9)
    for i in range(1, max(k, 2)):
        ax.vlines(i + 0.5, -0.12, 0, color="black", linewidth=0.6)
    if ranking.cd is not None:
        # Drawn whole even where it reaches past the axis (few blocks): its length is the point.
        ax.hlines(-1.5, 1, 1 + ranking.cd, color="black", linewidth=1.5, clip_on=False)
        for x in (1, 1 + ranking.cd):
            ax.vlines(x, -1.65, -1.35, color="black", linewidth=1, clip_on=False)
        ax.text(1 + ranking.cd / 2, -1.7, f"CD = {ranking.cd:.2f}", ha="center", va="bottom", fontsize=9,
                clip_on=False)
    start = 0.8 + bars * 0.5
    for row, name in enumerate(left):
        y = start + row
        rank = ranking.ranks[name]
        ax.plot([rank, rank, 1], [0, y, y], color="black", linewidth=0.8, clip_on=False)
        ax.text(0.97, y, f"{name} ({rank:.2f})", ha="right", va="center", fontsize=9,
                transform=ax.transData, clip_on=False)
    for row, name in enumerate(reversed(right)):
        y = start + row
        rank = ranking.ranks[name]
        ax.plot([rank, rank, max(k, 2)], [0, y, y], color="black", linewidth=0.8, clip_on=False)
        ax.text(max(k, 2) + 0.03, y, f"({rank:.2f}) {name}", ha="left", va="center", fontsize=9, clip_on=False)
    for i, group in enumerate(ranking.cliques):
        lo, hi = ranking.ranks[group[0]], ranking.ranks[group[-1]]
        y = 0.35 + i * 0.5
        ax.hlines(y, lo - 0.03, hi + 0.03, color="black", linewidth=3.5)
    ax.set_title(title, fontsize=10, pad=4)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def axis_top(means: list[float]) -> float | None:
    """Where the y axis stops when a few lines run far above the others (a learner that diverged, 10,000 times the
    zero predictor's error, would flatten every other line to the axis); None: the whole range fits."""
    if not means:
        return None
    top = OUTLIER * float(np.quantile(means, 0.7))
    return top if top > 0 and max(means) > 2 * top else None


@dataclass
class Series:
    """One algorithm's final metric at each budget it ran at (a reference: one value, at k = d)."""

    label: str
    budgets: list[int]
    values: list[Interval]
    reference: bool = False


def budget_plot(series: list[Series], path: Path, *, title: str, metric: str, d: int) -> None:
    """The final metric (mean and 95 % t-interval over the seeds) against the local budget k, one line per algorithm;
    a full-information reference is a dashed level across the axis (it sees all d attributes)."""
    fig, ax = plt.subplots(figsize=(8.0, 5.2))
    colours = plt.get_cmap("tab20")
    drawn = sorted({k for s in series if not s.reference for k in s.budgets})
    budgeted = [s for s in series if not s.reference]
    top = axis_top([v.mean for s in series for v in s.values])
    for i, s in enumerate(series):
        colour = colours(i % 20)
        if s.reference:
            v = s.values[0]
            ax.axhline(v.mean, color=colour, linestyle="--", linewidth=1.2, label=f"{s.label} (all {d} attributes)")
            continue
        means = [v.mean for v in s.values]
        errors = [[v.mean - v.low for v in s.values], [v.high - v.mean for v in s.values]]
        # Each line a little aside of the budget, so that the intervals of one budget do not hide each other.
        j = budgeted.index(s)
        x = [k * DODGE ** (j - (len(budgeted) - 1) / 2) for k in s.budgets]
        label = s.label if top is None or max(means) <= top else f"{s.label} (off the axis, up to {max(means):.3g})"
        ax.errorbar(x, means, yerr=errors, color=colour, marker=MARKERS[j % len(MARKERS)], markersize=4,
                    linewidth=1.2, capsize=2.5, elinewidth=0.9, label=label)
    if top is not None:
        ax.set_ylim(min(0.0, *(v.mean for s in series for v in s.values)) - 0.05 * top, top)
    if len(drawn) > 1:
        ax.set_xscale("log")
    ax.set_xticks(drawn or [d])
    ax.set_xticklabels([str(k) for k in drawn or [d]])
    ax.minorticks_off()
    ax.set_xlabel("local budget k (attributes observed per example)")
    ax.set_ylabel(metric)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, fontsize=8, frameon=False)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
