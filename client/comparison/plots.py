"""Figures in the style of the papers: one line per algorithm, its mean over the seeds with a band of its 95 %
t-interval.

Test error against attributes paid (Hazan & Koren Figs. 1-2, Kukliansky & Shamir Figs. 1-4, Cesa-Bianchi et al.
Fig. 4 bottom), against examples seen (Cesa-Bianchi et al. Fig. 4 top, Murata & Suzuki Fig. 1), and for online
runs the regret against rounds (Ito et al. Figs. 1-2). Matplotlib with the Agg backend: no display needed.

On a classification dataset each of these figures has a second panel below, the 0-1 error (sign of the
prediction) on the same x axis: the papers regress on the ±1 labels but quote how often the sign is wrong, and a
squared error near the zero predictor's can go with a 0-1 error near ridge's.

Every band says what it is (the 95 % t-interval of the mean over seeds, as in the report's tables); the zero
predictor's error is a reference line, left off the axis (and said so in the legend) where it would squeeze the
curves into a sliver of it, as a 50 % 0-1 error does to curves between 0.5 and 5 %; a full-information reference
(ridge, lasso: all d attributes of every example) is a horizontal line at its final error on the attributes axis,
where its curve would run hundreds of times further than the budgeted ones; the x axis turns logarithmic by itself
when the curves' spans differ a lot; the legend sits below the axes, never on the data.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import EngFormatter, LogLocator, NullFormatter, PercentFormatter  # noqa: E402
from scipy import stats  # noqa: E402

from budgetlab.contract.datasets import Task  # noqa: E402
from client.comparison.config import Design  # noqa: E402
from client.comparison.summary import AlgorithmSummary  # noqa: E402
from learner.algorithms import ParamError, get_algorithm  # noqa: E402

METRIC_LABELS = {"test_mse": "Test squared error", "normalized_mse": "Test error / zero-predictor error",
                 "zero_one": "Test 0-1 error (sign of the prediction)"}
# The x axis is logarithmic when the longest curve reaches this many times as far as the shortest.
AUTO_LOG_RATIO = 30.0
TITLE_WIDTH = 78  # characters of a title line at its font size across the figure
# Ito et al.'s names: k' attributes observed per round (the budget), regret against the best k-sparse w, and an
# algorithm's own parameters: the sparsity it assumes (its "k", Table 3's k1 when the true k is unknown) and k1,
# how many of its largest weights it observes surely. The legend names the assumption apart from the true k.
ITO_NAMES = {"k": "assumes k = ", "k1": "k1 = "}


@dataclass
class Curve:
    """One algorithm's curve: the mean over its seeds at each point, and the half-width of its 95 % t-interval when
    n > 1."""

    label: str
    x: np.ndarray
    mean: np.ndarray
    half: np.ndarray | None
    n: int


def _aligned(rows: list[list[float]]) -> np.ndarray:
    """Curves of several seeds cut to their common length (a run that stopped early shortens the band)."""
    length = min(len(r) for r in rows)
    return np.array([r[:length] for r in rows], dtype=np.float64)


def curve(label: str, xs: list[list[float]], ys: list[list[float]]) -> Curve:
    x, y = _aligned(xs), _aligned(ys)
    length = min(x.shape[1], y.shape[1])
    x, y = x[:, :length].mean(axis=0), y[:, :length]
    n = len(y)
    half = stats.t.ppf(0.975, n - 1) * y.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else None
    return Curve(label, x, y.mean(axis=0), half, n)


def band_label(label: str, n: int) -> str:
    return f"{label}: mean and 95 % interval over {n} seeds" if n > 1 else f"{label} (1 seed)"


def _draw(ax: plt.Axes, c: Curve) -> tuple[object, str]:
    """The curve and its band; the legend entry shows both, named for what the band is."""
    (line,) = ax.plot(c.x, c.mean, linewidth=1.6, marker="o", markersize=2.5)
    if c.half is None:
        return line, band_label(c.label, c.n)
    ax.fill_between(c.x, c.mean - c.half, c.mean + c.half, color=line.get_color(), alpha=0.2, linewidth=0)
    return (Patch(color=line.get_color(), alpha=0.2, linewidth=0), line), band_label(c.label, c.n)


def _zero_line(ax: plt.Axes, zero: float, curves: list[Curve], levels: list[float], metric: str
               ) -> tuple[object, str]:
    """The zero predictor's reference line, or, where drawing it would leave the curves less than a third of the
    axis (a 50 % 0-1 error above curves between 0.5 and 5 %), the curves' own range and the level in words."""
    values = np.concatenate([*(c.mean + (c.half if c.half is not None else 0) for c in curves),
                             *(c.mean - (c.half if c.half is not None else 0) for c in curves), levels])
    finite = values[np.isfinite(values)]
    if finite.size:
        low, high = float(finite.min()), float(finite.max())
        span = max(high - low, abs(high) * 0.05, 1e-12)
        if max(high, zero) - min(low, zero) > 3 * span:
            ax.set_ylim(low - 0.08 * span, high + 0.08 * span)
            shown = f"{zero:.1%}" if metric == "zero_one" else f"{zero:.4g}"
            where = "above" if zero > high else "below"
            return (plt.Line2D([], [], color="0.45", linestyle=":", linewidth=1.3),
                    f"zero predictor (w = 0): {shown}, off the axis {where}")
    return ax.axhline(zero, color="0.45", linestyle=":", linewidth=1.3), "zero predictor (w = 0)"


def is_full_information(summary: AlgorithmSummary) -> bool:
    try:
        return get_algorithm(summary.id).budget_kind == "full"
    except ParamError:
        return False


def zero_predictor_error(summaries: list[AlgorithmSummary], metric: str) -> float | None:
    """The error of w = 0 on the test set: 1 in normalized units, else the mean over seeds of test MSE / normalized
    MSE (the oracle divides one by the other)."""
    if metric == "normalized_mse":
        return 1.0
    by_seed = {r.seed: p.test_mse / p.normalized_mse for s in summaries for r in s.completed for p in r.result.curve
               if p.normalized_mse > 0}
    return float(np.mean(list(by_seed.values()))) if by_seed else None


def _ito_names(design: Design, summary: AlgorithmSummary) -> str:
    """``assumes k = 2, k1 = 2`` of an online algorithm, from the parameters its runs resolved (or were given)."""
    if design.regret_k is None or not summary.completed:
        return ""
    resolved = {**summary.params, **{k: v for k, v in summary.completed[0].result.resolved_params.items()
                                     if v is not None}}
    return ", ".join(f"{text}{_number(resolved[name])}" for name, text in ITO_NAMES.items() if name in resolved)


def _number(value: object) -> object:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _label(design: Design, summary: AlgorithmSummary) -> str:
    names = _ito_names(design, summary)
    return f"{summary.label} ({names})" if names else summary.label


def _title(design: Design) -> str:
    params = ", ".join(f"{k}={v}" for k, v in design.dataset.params.items())
    data = f"{design.dataset.name}" + (f" ({params})" if params else "")
    k = design.budget.per_example
    if design.regret_k is not None:  # Ito et al.: k' attributes observed per round, a k-sparse comparator
        parts = [design.name, data, (f"k′ = {k} attributes observed per round" if k else "all attributes observed")
                 + f"; regret vs the best k-sparse w, k = {design.regret_k}"]
    else:
        parts = [design.name, data + ", " + (f"k = {k} attributes per example" if k else "full information")]
    return "\n".join(line for part in parts for line in textwrap.wrap(part, TITLE_WIDTH, break_on_hyphens=False))


def _figure(design: Design, xlabel: str, ylabels: list[str]) -> tuple[plt.Figure, list[plt.Axes]]:
    """One panel per y label, stacked on a shared x axis; the title above the first."""
    fig, axes = plt.subplots(len(ylabels), 1, figsize=(6.4, 5.0 + 2.6 * (len(ylabels) - 1)), dpi=110,
                             layout="constrained", sharex=True, squeeze=False,
                             height_ratios=[1.0, *[0.62] * (len(ylabels) - 1)])
    panels = list(axes[:, 0])
    for ax, ylabel in zip(panels, ylabels, strict=True):
        ax.set_ylabel(ylabel)
        ax.grid(True, which="major", alpha=0.3)
    panels[-1].set_xlabel(xlabel)
    panels[0].set_title(_title(design), fontsize=10)
    return fig, panels


def wants_log(curves: list[Curve], forced: bool | None) -> bool:
    """``forced`` if the config says; else whether the spans of the curves differ by ``AUTO_LOG_RATIO`` or more."""
    if forced is not None:
        return forced
    ends = [float(c.x[-1]) for c in curves if len(c.x) and c.x[-1] > 0]
    return len(ends) > 1 and max(ends) / min(ends) >= AUTO_LOG_RATIO


def log_x(ax: plt.Axes) -> None:
    """Logarithmic x with labels that do not collide: 1-2-5 ticks over a few decades, decades only past that,
    written 200, 5k, 1M; no labels on minor ticks."""
    ax.set_xscale("log")
    low, high = ax.get_xlim()
    decades = math.log10(high / low) if low > 0 else 10.0
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)))
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _legend(fig: plt.Figure, handles: list[tuple[object, str]]) -> None:
    if handles:
        wide = max(len(t) for _, t in handles) > 42
        # a (band, line) tuple is a handle too (matplotlib's HandlerTuple), which its stubs do not say
        artists: list[Any] = [h for h, _ in handles]
        fig.legend(artists, [t for _, t in handles], loc="outside lower center", fontsize=8,
                   ncols=1 if wide or len(handles) < 4 else 2, frameon=False)


def plot_design(out: Path, stem: str, design: Design, summaries: list[AlgorithmSummary], *, metric: str,
                log_x_axis: bool | None = None, task: Task | None = None,
                zero_one_of_zero: float | None = None) -> list[Path]:
    """Write this design's PNGs into ``out`` (``STEM-attributes.png``, ``-examples``, ``-regret``); returns their
    paths (none when no run produced a curve)."""
    paths = []
    for name, fig in design_figures(design, summaries, metric=metric, log_x_axis=log_x_axis, task=task,
                                    zero_one_of_zero=zero_one_of_zero):
        paths.append(out / f"{stem}-{name}.png")
        # Constrained layout keeps the title and the legend below the axes inside the figure: no tight bounding
        # box, which draws every figure twice (0.25 of its 0.9 CPU s; hundreds of figures in the test suite).
        fig.savefig(paths[-1])
        plt.close(fig)
    return paths


def design_figures(design: Design, summaries: list[AlgorithmSummary], *, metric: str,
                   log_x_axis: bool | None = None, task: Task | None = None,
                   zero_one_of_zero: float | None = None) -> list[tuple[str, plt.Figure]]:
    """The design's figures by name: error against attributes paid and against examples, and the regret of
    online runs. On a classification ``task`` the error figures have a 0-1 error panel below the squared error,
    with the zero predictor's 0-1 error (``zero_one_of_zero``, where known) as its reference line.

    ``log_x_axis``: True or False forces the attributes axis (the examples axis is then linear); None decides
    both axes by the spans of their curves.
    """
    runs = {s.label: [r.result.curve for r in s.completed if r.result.curve] for s in summaries}
    drawn = [s for s in summaries if runs[s.label]]
    if not drawn:
        return []
    references = [s for s in drawn if is_full_information(s)]
    budgeted = [s for s in drawn if s not in references]
    metrics = [metric, *(["zero_one"] if task == "classification" else [])]
    zeros = {metric: zero_predictor_error(drawn, metric), "zero_one": zero_one_of_zero}
    figures = []
    for axis, xlabel in (("attributes", "Number of attributes paid"), ("examples", "Number of examples")):
        fig, panels = _figure(design, xlabel, [METRIC_LABELS[m] for m in metrics])
        # On the attributes axis a full-information reference is a level to compare with, not a curve that
        # would squeeze the budgeted ones into the corner; alone, it is a curve.
        as_lines = references if axis == "attributes" and budgeted else []
        legend: list[tuple[object, str]] = []
        off_axis: list[tuple[object, str]] = []  # a lower panel's zero predictor left off its axis, in words
        logarithmic = False
        for ax, shown in zip(panels, metrics, strict=True):
            curves = [curve(_label(design, s), [[float(getattr(p, axis)) for p in c] for c in runs[s.label]],
                            [[float(getattr(p, shown)) for p in c] for c in runs[s.label]])
                      for s in drawn if s not in as_lines]
            handles = [_draw(ax, c) for c in curves]
            for i, s in enumerate(as_lines, start=len(curves)):  # the colours after the curves'
                final = [float(getattr(c[-1], shown)) for c in runs[s.label]]
                paid = float(np.mean([c[-1].attributes for c in runs[s.label]]))
                line = ax.axhline(float(np.mean(final)), linestyle="--", linewidth=1.4, color=f"C{i % 10}")
                handles.append((line, f"{_label(design, s)}: final, after {paid:,.0f} attributes"
                                      + (f" (mean of {len(final)} seeds)" if len(final) > 1 else "")))
            zero = zeros[shown]
            if zero is not None:
                levels = [float(np.mean([getattr(c[-1], shown) for c in runs[s.label]])) for s in as_lines]
                handles.append(_zero_line(ax, zero, curves, levels, shown))
                if ax is not panels[0] and "off the axis" in handles[-1][1]:
                    off_axis.append((handles[-1][0], handles[-1][1].replace(
                        "zero predictor (w = 0)", f"zero predictor's {METRIC_LABELS[shown].split(' (')[0].lower()}")))
            if shown == "zero_one":
                ax.yaxis.set_major_formatter(PercentFormatter(1.0))
            if ax is panels[0]:
                legend = handles  # the same lines in the same colours in every panel: one legend
                logarithmic = wants_log(curves, (log_x_axis if axis == "attributes" else False)
                                        if log_x_axis is not None else None)
        if logarithmic:
            for ax in panels:
                log_x(ax)
        _legend(fig, legend + off_axis)
        figures.append((axis, fig))
    regret = regret_figure(design, summaries)
    return figures if regret is None else [*figures, ("regret", regret)]


def regret_figure(design: Design, summaries: list[AlgorithmSummary]) -> plt.Figure | None:
    """The regret R_T of the online runs against the rounds; None without any."""
    regrets = {s.label: [(r.result.curve, r.regret_curve) for r in s.completed if r.regret_curve] for s in summaries}
    online = [s for s in summaries if regrets[s.label]]
    if not online:
        return None
    fig, (ax,) = _figure(design, "Number of rounds T", ["Regret R_T (against the best k-sparse w, ||w|| ≤ 1)"])
    handles = []
    for s in online:
        xs = [[float(p.examples) for p in c if p.cumulative_loss is not None] for c, _ in regrets[s.label]]
        handles.append(_draw(ax, curve(_label(design, s), xs, [list(r) for _, r in regrets[s.label]])))
    _legend(fig, handles)
    return fig
