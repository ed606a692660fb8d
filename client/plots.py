"""Figures in the style of the papers: one line per algorithm with a ± one standard deviation band over the seeds.

Test error against attributes paid (Hazan & Koren Figs. 1-2, Kukliansky & Shamir Figs. 1-4, Cesa-Bianchi et al.
Fig. 4 bottom), against examples seen (Cesa-Bianchi et al. Fig. 4 top, Murata & Suzuki Fig. 1), and for online
runs the regret against rounds (Ito et al. Figs. 1-2). Matplotlib with the Agg backend: no display needed.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from client.config import Design  # noqa: E402
from client.summary import AlgorithmSummary  # noqa: E402

METRIC_LABELS = {"test_mse": "Test squared error", "normalized_mse": "Test error / zero-predictor error"}


def _aligned(rows: list[list[float]]) -> np.ndarray:
    """Curves of several seeds cut to their common length (a run that stopped early shortens the band)."""
    length = min(len(r) for r in rows)
    return np.array([r[:length] for r in rows], dtype=np.float64)


def _band(ax: plt.Axes, x: np.ndarray, ys: np.ndarray, label: str) -> None:
    mean, std = ys.mean(axis=0), ys.std(axis=0)
    (line,) = ax.plot(x, mean, label=label, linewidth=1.6, marker="o", markersize=2.5)
    if len(ys) > 1:
        ax.fill_between(x, mean - std, mean + std, color=line.get_color(), alpha=0.2, linewidth=0)


def _title(design: Design) -> str:
    params = ", ".join(f"{k}={v}" for k, v in design.dataset.params.items())
    budget = f"k = {design.budget.per_example}" if design.budget.per_example else "full information"
    return f"{design.name}\n{design.dataset.name}" + (f" ({params})" if params else "") + f", {budget}"


def _figure(design: Design, xlabel: str, ylabel: str) -> tuple[plt.Figure, plt.Axes]:
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=110)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(_title(design), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    return fig, ax


def _save(fig: plt.Figure, ax: plt.Axes, path: Path) -> Path:
    if ax.lines:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_design(out: Path, stem: str, design: Design, summaries: list[AlgorithmSummary], *, metric: str,
                log_x: bool) -> list[Path]:
    """Write this design's PNGs into ``out``; returns their paths (none when no run produced a curve)."""
    curves = {s.label: [r.result.curve for r in s.completed if r.result.curve] for s in summaries}
    curves = {label: runs for label, runs in curves.items() if runs}
    if not curves:
        return []
    paths = []
    for axis, xlabel, scale in (("attributes", "Number of attributes", log_x), ("examples", "Number of examples",
                                                                                False)):
        fig, ax = _figure(design, xlabel, METRIC_LABELS[metric])
        for label, runs in curves.items():
            xs = _aligned([[float(getattr(p, axis)) for p in c] for c in runs]).mean(axis=0)
            ys = _aligned([[getattr(p, metric) for p in c] for c in runs])
            _band(ax, xs, ys[:, : len(xs)], label)
        if scale:
            ax.set_xscale("log")
        paths.append(_save(fig, ax, out / f"{stem}-{axis}.png"))
    regrets = {s.label: [(r.result.curve, r.regret_curve) for r in s.completed if r.regret_curve]
               for s in summaries}
    regrets = {label: runs for label, runs in regrets.items() if runs}
    if regrets:
        fig, ax = _figure(design, "Number of rounds", "Regret")
        for label, runs in regrets.items():
            xs = _aligned([[float(p.examples) for p in c if p.cumulative_loss is not None] for c, _ in runs])
            ys = _aligned([list(r) for _, r in runs])
            _band(ax, xs.mean(axis=0)[: ys.shape[1]], ys[:, : xs.shape[1]], label)
        paths.append(_save(fig, ax, out / f"{stem}-regret.png"))
    return paths
