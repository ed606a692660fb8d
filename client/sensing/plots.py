"""``budgetlab sense``'s figures, in the style of the comparisons' (``client.comparison.plots``): per dataset, each
policy's score against the number of attributes read and against the cost paid (means per example), the mean over
the seeds with a band of its 95 % t-interval; the legend below the axes says what the band is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import PercentFormatter  # noqa: E402

from client.comparison.plots import band_label  # noqa: E402
from client.comparison.report import slug  # noqa: E402
from client.sensing.summary import Row  # noqa: E402


def plot_dataset(out: Path, dataset: str, found: list[Row]) -> Path:
    """``sense-DATASET.png`` in ``out``: two panels, against attributes read and against cost paid."""
    mine = [r for r in found if r.dataset == dataset]
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.4), dpi=110, layout="constrained", sharey=True)
    handles: list[tuple[Any, str]] = []
    for policy in dict.fromkeys(r.policy for r in mine):
        curve = [r for r in mine if r.policy == policy]
        for ax, x in zip(axes, ([r.reads for r in curve], [r.cost for r in curve]), strict=True):
            (line,) = ax.plot(x, [r.mean for r in curve], linewidth=1.6, marker="o", markersize=3)
            intervals = [r.interval for r in curve]
            if all(i is not None for i in intervals):
                ax.fill_between(x, [i[0] for i in intervals if i is not None],
                                [i[1] for i in intervals if i is not None], color=line.get_color(), alpha=0.2,
                                linewidth=0)
        band = Patch(color=line.get_color(), alpha=0.2, linewidth=0)
        handles.append(((band, line), band_label(policy, len(curve[0].seeds))))
    metric = mine[0].metric
    axes[0].set_ylabel("Test accuracy" if metric == "accuracy" else "Test squared error / zero predictor's")
    # An accuracy is within [0, 1] and a squared error above 0, whatever a t-interval over few seeds says.
    if metric == "accuracy":
        axes[0].yaxis.set_major_formatter(PercentFormatter(1.0))
        axes[0].set_ylim(0.0, 1.02)
    else:
        axes[0].set_ylim(bottom=0.0)
    axes[0].set_xlabel("Attributes read per example (mean)")
    axes[1].set_xlabel("Cost paid per example (mean)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"{dataset}: {metric} against what the policies read", fontsize=10)
    fig.legend([h for h, _ in handles], [t for _, t in handles], loc="outside lower center", fontsize=8,
               ncols=min(3, len(handles)), frameon=False)
    path = out / f"sense-{slug(dataset)}.png"
    fig.savefig(path)
    plt.close(fig)
    return path
