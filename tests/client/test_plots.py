"""The report's figures and tables say what they show: labelled bands with the table's sd, a zero-predictor line,
full-information references as levels, log-x when the spans differ a lot, the legend off the data, Ito et al.'s
k, k' and k1 apart, and only the scores that fit the task, per design and per seed."""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import CurvePoint, RunResult
from client.comparison.config import AlgorithmEntry, CompareConfig, DatasetSpec, Design
from client.comparison.grid import RunOutcome, attach_regret
from client.comparison.plots import design_figures
from client.comparison.report import NORMALIZED_MSE, TEST_MSE, ZERO_ONE, metric_columns, write_report
from client.comparison.summary import stat, summarize

ZERO_MSE = {0: 2.0, 1: 2.5, 2: 3.0}  # the zero predictor's test MSE on each seed's test set


# A figure left open past pyplot's 20 fails the test instead of warning.
pytestmark = pytest.mark.filterwarnings("error:More than 20 figures have been opened:RuntimeWarning")


@pytest.fixture(autouse=True)
def _figures_closed() -> Iterator[None]:
    # design_figures hands its figures to the caller, as write_report closes them once saved; these tests look at
    # them and let go, so without this pyplot kept every one alive in the xdist worker (more than 20: its warning).
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def points(per_example: int, errors: list[float], seed: int, every: int = 10) -> list[CurvePoint]:
    return [CurvePoint(examples=every * (i + 1), attributes=every * (i + 1) * per_example, cost=0.0, test_mse=e,
                       normalized_mse=e / ZERO_MSE[seed], zero_one=0.1) for i, e in enumerate(errors)]


def outcome(entry: AlgorithmEntry, seed: int, curve: list[CurvePoint], **more: object) -> RunOutcome:
    result = RunResult(algorithm=entry.id, dataset="digits-3v5", seed=seed, status="finished", curve=curve,
                       final=curve[-1], examples=curve[-1].examples, attributes=curve[-1].attributes, wall_time=0.5,
                       **more)
    return RunOutcome(0, entry, seed, result, audit="compliant")


AER, RIDGE = AlgorithmEntry(id="aer", label="AER"), AlgorithmEntry(id="ridge", label="Ridge", per_example=64)
AER_ERRORS = {0: [1.0, 0.8, 0.7], 1: [1.2, 0.9, 0.6], 2: [0.9, 0.85, 0.75]}


def design(entries: list[AlgorithmEntry], **more: object) -> Design:
    return Design(name="test design", description="", dataset=DatasetSpec(name="digits-3v5"),
                  budget=Budget(per_example=4), algorithms=entries, **more)  # type: ignore[arg-type]


@pytest.fixture
def figures() -> dict[str, Figure]:
    d = design([AER, RIDGE])
    outcomes = [outcome(AER, s, points(4, AER_ERRORS[s], s)) for s in ZERO_MSE]
    outcomes += [outcome(RIDGE, s, points(64, [0.5, 0.3, 0.2 + 0.01 * s], s)) for s in ZERO_MSE]
    return dict(design_figures(d, summarize(0, d, outcomes), metric="test_mse"))


def legend(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.legends[0].get_texts()]


def test_bands_are_labelled_and_are_the_tables_interval(figures: dict[str, Figure]) -> None:
    fig = figures["examples"]
    assert "AER: mean and 95 % interval over 3 seeds" in legend(fig)
    ax = fig.axes[0]
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    for i in range(3):
        values = [AER_ERRORS[s][i] for s in ZERO_MSE]
        upper = stat(values).high  # the report's tables' 95 % t-interval
        assert upper is not None and np.isclose(band, upper).any()
        assert not np.isclose(band, statistics.fmean(values) + statistics.stdev(values)).any()


def test_zero_predictor_line_and_full_information_as_a_level(figures: dict[str, Figure]) -> None:
    ax = figures["attributes"].axes[0]
    levels = {tuple(line.get_ydata()): line.get_linestyle() for line in ax.lines if len(set(line.get_ydata())) == 1}
    zero = statistics.fmean(ZERO_MSE.values())
    assert any(np.isclose(y[0], zero) and style == ":" for y, style in levels.items())
    ridge_final = statistics.fmean(0.2 + 0.01 * s for s in ZERO_MSE)
    assert any(np.isclose(y[0], ridge_final) and style == "--" for y, style in levels.items())
    texts = legend(figures["attributes"])
    assert "Ridge: final, after 1,920 attributes (mean of 3 seeds)" in texts and "zero predictor (w = 0)" in texts
    # No curve of ridge on the attributes axis: the axis spans the budgeted curve (at most 120 attributes).
    assert ax.get_xlim()[1] < 200
    # Against examples ridge is a curve like the others.
    assert "Ridge: mean and 95 % interval over 3 seeds" in legend(figures["examples"])


def test_the_legend_is_below_the_axes_never_on_the_data(figures: dict[str, Figure]) -> None:
    for fig in figures.values():
        fig.canvas.draw()
        box, axes = fig.legends[0].get_window_extent(), fig.axes[0].get_window_extent()
        assert box.y1 <= axes.y0


def test_log_x_when_the_spans_differ_a_lot() -> None:
    wide = AlgorithmEntry(id="aer", label="AER 64", per_example=64)
    d = design([AER, wide])

    def scale(factor: int, forced: bool | None = None) -> tuple[str, str]:
        outcomes = [outcome(AER, 0, points(4, [1.0, 0.9], 0)), outcome(wide, 0, points(4 * factor, [0.8, 0.5], 0))]
        figs = dict(design_figures(d, summarize(0, d, outcomes), metric="test_mse", log_x_axis=forced))
        return figs["attributes"].axes[0].get_xscale(), figs["examples"].axes[0].get_xscale()

    assert scale(50) == ("log", "linear")  # 80 vs 4,000 attributes, the same examples
    assert scale(2) == ("linear", "linear")
    assert scale(2, forced=True) == ("log", "linear") and scale(50, forced=False) == ("linear", "linear")


def test_ito_plots_name_k_k_prime_and_k1_apart() -> None:
    a1, a2 = AlgorithmEntry(id="ito1", label="A1", params={"k": 2}), AlgorithmEntry(id="ito2", label="A2",
                                                                                     params={"k1": 2})
    d = design([a1, a2], regret_k=4)
    outcomes = [outcome(e, 0, [p.model_copy(update={"cumulative_loss": 1.0 + i}) for i, p in
                               enumerate(points(4, [0.5, 0.4], 0))], resolved_params={**e.params, "radius": 0.9})
                for e in (a1, a2)]
    for o in outcomes:
        o.regret_curve = [0.3, 0.5]
    figs = dict(design_figures(d, summarize(0, d, outcomes), metric="test_mse"))
    title = figs["regret"].axes[0].get_title()
    assert "k′ = 4 attributes observed per round" in title and "regret vs the best k-sparse w, k = 4" in title
    assert legend(figs["regret"]) == ["A1 (assumes k = 2) (1 seed)", "A2 (k1 = 2) (1 seed)"]


@pytest.mark.process
def test_tables_show_the_scores_that_fit_the_task(tmp_path: Path) -> None:
    d = design([AER])
    plus_minus_one = [outcome(AER, 0, [p.model_copy(update={"normalized_mse": p.test_mse}) for p in
                                       points(4, [0.9], 0)])]
    assert metric_columns("classification", summarize(0, d, plus_minus_one)) == [TEST_MSE, ZERO_ONE]
    assert metric_columns("regression", summarize(0, d, [outcome(AER, 0, points(4, [0.9], 0))])) == [
        TEST_MSE, NORMALIZED_MSE]
    config = CompareConfig.model_validate({"title": "regression", "dataset": {"name": "diabetes"},
                                           "seeds": [0, 1, 2], "algorithms": [{"id": "aer", "label": "AER"}]})
    regression = Design(name="regression", description="", dataset=DatasetSpec(name="diabetes"),
                        budget=Budget(per_example=4), algorithms=[AER])
    outcomes = [outcome(AER, s, points(4, AER_ERRORS[s], s)) for s in ZERO_MSE]
    write_report(tmp_path, config, [regression], outcomes, mode="test")
    report = (tmp_path / "report.md").read_text()
    header = next(line for line in report.splitlines() if line.startswith("| algorithm | per example"))
    assert "normalized MSE" in header and "0-1" not in header
    assert "| algorithm | seed | status | test MSE | normalized MSE | attributes paid |" in report
    assert "| AER | 2 | finished | 0.75 | 0.25 | 120 | 30 | 0.5 | compliant |" in report
    (written,) = json.loads((tmp_path / "results.json").read_text())["designs"]
    assert written["metrics"] == ["test_mse", "normalized_mse"]  # what the learner's dashboard shows of it
    with (tmp_path / "curves.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 3 * 3


def test_classification_figures_add_the_0_1_error_below_the_squared_error() -> None:
    d = design([AER, RIDGE])
    zero_one = {AER.label: [0.3, 0.2, 0.15], RIDGE.label: [0.05, 0.04, 0.03]}
    outcomes = [outcome(e, 0, [p.model_copy(update={"zero_one": z}) for p, z in
                               zip(points(e.per_example or 4, [0.9, 0.8, 0.7], 0), zero_one[e.label], strict=True)])
                for e in (AER, RIDGE)]
    summaries = summarize(0, d, outcomes)
    figs = dict(design_figures(d, summaries, metric="normalized_mse", task="classification", zero_one_of_zero=0.48))
    for name in ("attributes", "examples"):
        top, bottom = figs[name].axes
        assert top.get_ylabel() == "Test error / zero-predictor error"
        assert bottom.get_ylabel() == "Test 0-1 error (sign of the prediction)"
        assert bottom.get_xlabel() and not top.get_xlabel()  # one x axis, shared
        assert bottom.get_shared_x_axes().joined(top, bottom)
        assert top.get_title().startswith("test design") and not bottom.get_title()
        levels = [line.get_ydata()[0] for line in bottom.lines if len(set(line.get_ydata())) == 1]
        assert any(np.isclose(y, 0.48) for y in levels)  # the zero predictor's 0-1 error
        assert len(figs[name].legends) == 1
    # On the attributes axis ridge is a level in both panels: its final squared and 0-1 errors.
    top, bottom = figs["attributes"].axes
    assert any(np.isclose(line.get_ydata()[0], 0.03) and line.get_linestyle() == "--" for line in bottom.lines)
    assert any(np.isclose(line.get_ydata()[0], 0.7 / ZERO_MSE[0]) for line in top.lines)
    aer = next(line for line in bottom.lines if len(line.get_xdata()) == 3)
    assert list(aer.get_ydata()) == [0.3, 0.2, 0.15]
    # A regression, or a dataset this machine cannot describe, keeps one panel.
    for task in ("regression", None):
        single = dict(design_figures(d, summaries, metric="normalized_mse", task=task))
        assert len(single["attributes"].axes) == 1


def test_a_zero_predictor_far_above_the_curves_is_named_not_drawn_over_them() -> None:
    """The demo's 0-1 panel (#34): curves between 0.5 and 5 % under a zero predictor at 50 % were flattened into one
    line at the bottom of a 0-50 % axis. The axis now spans the curves, and the legend names the level it leaves
    off; where the level is close, it is drawn as before."""
    d = design([AER, RIDGE])
    zero_one = {AER.label: [0.05, 0.02, 0.012], RIDGE.label: [0.008, 0.006, 0.005]}
    outcomes = [outcome(e, seed, [p.model_copy(update={"zero_one": z + 0.001 * seed}) for p, z in
                                  zip(points(e.per_example or 4, [0.9, 0.8, 0.7], seed), zero_one[e.label],
                                      strict=True)])
                for e in (AER, RIDGE) for seed in ZERO_MSE]
    figs = dict(design_figures(d, summarize(0, d, outcomes), metric="normalized_mse", task="classification",
                               zero_one_of_zero=0.5))
    top, bottom = figs["examples"].axes
    low, high = bottom.get_ylim()
    assert 0 < high < 0.1 and low < 0.005  # every curve's values, none of the axis spent on 5-50 %
    assert not any(np.isclose(line.get_ydata()[0], 0.5) for line in bottom.lines if len(set(line.get_ydata())) == 1)
    assert "zero predictor's test 0-1 error: 50.0%, off the axis above" in legend(figs["examples"])
    # The upper panel's zero predictor (1.0 in normalized units) is near its curves: drawn.
    assert any(np.isclose(line.get_ydata()[0], 1.0) for line in top.lines if len(set(line.get_ydata())) == 1)
    assert top.get_ylim()[1] >= 1.0


@pytest.mark.process
def test_an_online_run_without_its_regret_says_why(tmp_path: Path) -> None:
    """The regret's comparator is fitted on this machine: a dataset only the oracle has leaves R_T out, and the report
    says so instead of a silent dash."""
    greedy = AlgorithmEntry(id="greedy", label="Greedy")
    remote = Design(name="remote data", description="", dataset=DatasetSpec(name="only-on-the-oracle"),
                    budget=Budget(per_example=2), algorithms=[greedy], regret_k=2)
    curve = [p.model_copy(update={"cumulative_loss": 3.0}) for p in points(2, [0.9], 0)]
    outcomes = [outcome(greedy, 0, curve, cumulative_loss=3.0)]
    attach_regret(outcomes, [remote])
    assert outcomes[0].regret is None and "unknown dataset 'only-on-the-oracle'" in outcomes[0].regret_missing
    config = CompareConfig.model_validate({"title": "remote", "dataset": {"name": "diabetes"}, "regret_k": 2,
                                           "algorithms": [{"id": "greedy", "label": "Greedy"}]})
    write_report(tmp_path, config, [remote], outcomes, mode="test")
    assert "**R_T not computed: the best k-sparse predictor in hindsight needs the data on this machine (unknown " \
           "dataset 'only-on-the-oracle'" in (tmp_path / "report.md").read_text()
    (run,) = json.loads((tmp_path / "results.json").read_text())["designs"][0]["algorithms"][0]["runs"]
    assert run["regret"] is None and run["regret_missing"] == outcomes[0].regret_missing


@pytest.mark.process
def test_a_comparison_imports_matplotlib_only_to_draw_its_plots() -> None:
    # matplotlib costs 0.75 CPU-s to import; `budgetlab compare` and `sandbox` draw only when they write their report
    # (client.comparison.report.write_report), so one whose checks fail, or that is stopped before, never pays it.
    script = ("import json, sys; import client.comparison.compare, client.sandbox; "
              "print(json.dumps(sorted(m for m in sys.modules if m.partition('.')[0] == 'matplotlib')))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == []
