"""How far each algorithm gets with its default parameters, on every built-in dataset (issue 20, item 1).

For every algorithm x built-in dataset at README-like settings (5 attributes per example for the budgeted learners,
every attribute for the full-information references, k' = 5 for the online ones; the README's own examples
separately), one run per mode, in-process:

- ``practical``: the defaults (``defaults = "practical"``);
- ``theory``: the theorems' constants (``defaults = "theory"``);
- ``grid``: the best final normalised MSE over a grid around the theoretical values of each algorithm's
  step size / regularisation and radius, chosen on the test split. It is an optimistic bound on what tuning
  the same algorithm reaches (what "the data allow"), not a result to report as tuned.

Prints one line per (dataset, algorithm): the final normalised test MSE of each mode (and the 0-1 error on the
classification datasets), and the verdict on the issue's rule: the practical run leaves the zero predictor
(normalised MSE < 0.95) wherever the grid's best does. ``--json`` prints the figures as one object;
``--only`` restricts the algorithms or datasets (``--only aerr,mnist-3v5``; ``estimator`` for the docs' estimator
alone); ``--smoke`` runs two algorithms on two small datasets. The docs' two ``budgetlab run`` examples (seed 0) and
the estimator (over ``--seeds``) are printed last, with issue 20's targets.

    python benchmarks/defaults_sweep.py [--json] [--modes practical,theory,grid] [--only NAMES] [--seeds 0,1]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from dataclasses import dataclass, field

from budgetlab.contract.algorithms import Defaults
from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from learner.algorithms import algorithms
from learner.scoring import run_and_score, session_opener

ZERO = 0.95  # a final normalised MSE at or above this is "near the zero predictor" (issue 20)


@dataclass(frozen=True)
class Setting:
    """A dataset at README-like settings: its parameters, examples per run, and the local budget."""

    name: str
    params: dict[str, ParamValue] = field(default_factory=dict)
    max_examples: int | None = None
    per_example: int = 5

    @property
    def label(self) -> str:
        return self.name + ("" if not self.params else ":" + ",".join(f"{k}={v}" for k, v in self.params.items()))


SETTINGS = [
    Setting("powerlaw", max_examples=5000),
    Setting("sparse-gaussian", max_examples=5000),
    Setting("online-sparse"),
    Setting("mnist-3v5"),
    Setting("fashion-1v9", max_examples=2000),
    Setting("digits-3v5"),
    Setting("diabetes"),
]
SMOKE = [Setting("diabetes"), Setting("digits-3v5")]
# The README's run examples (and the estimator's), with the targets of issue 20.
README = [
    ("aerr", Setting("mnist-3v5", per_example=57), None, "normalized MSE <= 0.80"),
    ("aer", Setting("mnist-3v5", per_example=4), 4, "0-1 error <= 0.40 (with 4 attributes per test example)"),
]

# Multipliers of the theoretical value for each tuned parameter (the grid mode).
STEP = [1.0, 10.0, 100.0, 1000.0]
SHRINK = [1.0, 0.1, 0.01, 0.001]
RADIUS = [1.0, 10.0]
GRIDS: dict[str, dict[str, list[float]]] = {
    **{a: {"eta": STEP, "B": RADIUS} for a in ("aerr", "aelr", "gaerr", "gaelr", "ddaerr", "ddaelr", "aesvr")},
    **{a: {"eta": STEP, "eta1": [1.0], "B": RADIUS} for a in ("ddaerr-2phase", "ddaelr-2phase")},
    "aer": {"lam": SHRINK, "radius": RADIUS},
    "aer-baseline": {"radius": [0.1, 1.0, 10.0]},
    **{a: {"eta": [0.3, 1.0], "batch": [0.1, 1.0]} for a in ("exploration", "exploitation", "hybrid")},
    **{a: {"radius": [1.0, 10.0]} for a in ("ito1", "ito2", "ito3", "greedy", "uniform")},
    "ogd-ridge": {"eta": [1.0, 10.0, 100.0]},
    "eg-lasso": {"eta": [1.0, 10.0, 100.0], "radius": [1.0, 10.0]},
}


# The estimator's default algorithm, and AERR (issue 20's example).
ESTIMATOR_ALGORITHMS = ("screening", "aerr")


def estimator_r2(algorithm: str, defaults: Defaults, seed: int) -> float:
    """The docs' estimator: ``algorithm`` with 5 attributes a row on make_regression(1000, 50, n_informative=5,
    noise=1.0, random_state=0), scikit-learn's default train_test_split (random_state=0); its test R²."""
    from sklearn.datasets import make_regression
    from sklearn.model_selection import train_test_split

    from learner.estimator import BudgetedRegressor

    X, y = make_regression(n_samples=1000, n_features=50, n_informative=5, noise=1.0, random_state=0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    model = BudgetedRegressor(algorithm, per_example=5, seed=seed, defaults=defaults).fit(X_train, y_train)
    return float(model.score(X_test, y_test))


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_one(algorithm: str, setting: Setting, seed: int, defaults: Defaults = "practical",
            params: dict[str, ParamValue] | None = None, test_budget: int | None = None):  # type: ignore[no-untyped-def]
    from budgetlab.contract.runs import RunCreate

    cls = algorithms()[algorithm]
    per_example = None if cls.budget_kind == "full" else setting.per_example
    request = RunCreate(dataset=setting.name, dataset_params=setting.params, algorithm=algorithm,
                        params=params or {}, defaults=defaults, budget=Budget(per_example=per_example), seed=seed,
                        max_examples=setting.max_examples, test_budget=test_budget)
    open_oracle = session_opener(request, None)
    oracle = open_oracle(split="train", protocol=cls.protocol, budget=request.budget)
    try:
        return run_and_score(request, oracle, open_oracle)
    finally:
        oracle.close()


def grid_best(algorithm: str, setting: Setting, seed: int, theory) -> tuple[float, float, dict]:  # type: ignore[no-untyped-def]
    """The best final normalised MSE over the algorithm's grid around its theoretical values (chosen on test)."""
    grid = GRIDS.get(algorithm)
    if not grid:
        return theory.final.normalized_mse, theory.final.zero_one, {}
    resolved = theory.resolved_params
    axes = []
    for name, factors in grid.items():
        base = resolved.get(name)
        if not isinstance(base, int | float) or isinstance(base, bool):
            continue
        axes.append([(name, type(base)(max(1, round(base * f))) if isinstance(base, int) else base * f)
                     for f in factors])
    best = (theory.final.normalized_mse, theory.final.zero_one, {})
    for point in itertools.product(*axes):
        params = dict(point)
        result = run_one(algorithm, setting, seed, "theory", params)
        if result.final is not None and result.final.normalized_mse < best[0]:
            best = (result.final.normalized_mse, result.final.zero_one, params)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--modes", default="practical,theory,grid",
                        help="which of practical, theory and grid to run (grid needs theory; it is the slow one)")
    parser.add_argument("--only", default="", help="comma-separated algorithm ids and/or dataset names")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds (the figures are means over them)")
    parser.add_argument("--smoke", action="store_true", help="two algorithms on two small datasets")
    args = parser.parse_args()
    only = {s for s in args.only.split(",") if s}
    seeds = [int(s) for s in args.seeds.split(",")]
    wanted = set(args.modes.split(","))
    ids = [a for a in algorithms() if not only or a in only or not (only & set(algorithms()))]
    settings = [s for s in SETTINGS if not only or s.name in only or not (only & {x.name for x in SETTINGS})]
    if only and not only & (set(algorithms()) | {x.name for x in SETTINGS}):
        ids, settings = [], []  # only the docs' examples (``aer``, ``aerr``: also their rows) or the estimator
    if args.smoke:
        ids, settings, seeds = ["aerr", "ogd-ridge"], SMOKE, [0]
    rows = []
    started = time.perf_counter()
    for setting in settings:
        for algorithm in ids:
            progress(f"{setting.label} · {algorithm}")
            modes: dict[str, list[tuple[float, float]]] = {"practical": [], "theory": [], "grid": []}
            chosen: list[dict] = []
            for seed in seeds:
                modes_run = [m for m in ("practical", "theory") if m in wanted or (m == "theory" and "grid" in wanted)]
                for defaults in modes_run:
                    result = run_one(algorithm, setting, seed, defaults)  # type: ignore[arg-type]
                    if result.final is None:
                        progress(f"  {defaults}: {result.status} {result.message}")
                        continue
                    modes[defaults].append((result.final.normalized_mse, result.final.zero_one))
                    if defaults == "theory" and "grid" in wanted:
                        nmse, zero_one, params = grid_best(algorithm, setting, seed, result)
                        modes["grid"].append((nmse, zero_one))
                        chosen.append(params)
            row = {"dataset": setting.label, "algorithm": algorithm}
            for mode, values in modes.items():
                if values:
                    row[mode] = {"normalized_mse": statistics.fmean(v[0] for v in values),
                                 "zero_one": statistics.fmean(v[1] for v in values)}
            if chosen:
                row["grid_params"] = chosen
            practical, grid = row.get("practical"), row.get("grid")
            if practical and grid:
                row["learns"] = grid["normalized_mse"] >= ZERO or practical["normalized_mse"] < ZERO
            rows.append(row)
    readme = []
    if not args.smoke and (not only or only & {"aerr", "aer", "mnist-3v5"}):
        for algorithm, setting, test_budget, target in README:
            for defaults in [m for m in ("practical", "theory") if m in wanted]:
                progress(f"README {algorithm} {setting.label} k={setting.per_example} {defaults}")
                result = run_one(algorithm, setting, 0, defaults, test_budget=test_budget)  # type: ignore[arg-type]
                entry = {"algorithm": algorithm, "dataset": setting.label, "per_example": setting.per_example,
                         "defaults": defaults, "target": target, "normalized_mse": result.final.normalized_mse,
                         "zero_one": result.final.zero_one}
                if result.test_budget is not None:
                    entry["test_budget_zero_one"] = result.test_budget.zero_one
                entry["diagnosis"] = result.diagnosis
                readme.append(entry)
    estimator = []
    if not args.smoke and (not only or "estimator" in only):
        for algorithm in ESTIMATOR_ALGORITHMS:
            for defaults in [m for m in ("practical", "theory") if m in wanted]:
                progress(f"estimator {algorithm} per_example=5 {defaults}")
                scores = [estimator_r2(algorithm, defaults, seed) for seed in seeds]  # type: ignore[arg-type]
                estimator.append({"algorithm": algorithm, "defaults": defaults, "r2": scores, "target": "R² >= 0.5"})
    elapsed = time.perf_counter() - started
    if args.json:
        sys.stdout.write(json.dumps({"benchmark": "defaults_sweep", "seeds": seeds, "seconds": elapsed,
                                     "rows": rows, "readme": readme, "estimator": estimator}) + "\n")
        return
    print(f"final normalised test MSE (0-1 error), mean over seeds {seeds}; 'grid' = best of a grid chosen on test")
    print(f"{'dataset':<16} {'algorithm':<14} {'practical':>15} {'theory':>15} {'grid':>15}  learns")
    for row in rows:
        cells = []
        for mode in ("practical", "theory", "grid"):
            v = row.get(mode)
            cells.append(f"{v['normalized_mse']:7.3f} ({v['zero_one']:.2f})" if v else f"{'—':>15}")
        verdict = {True: "yes", False: "NO"}.get(row.get("learns"), "")  # type: ignore[arg-type]
        print(f"{row['dataset']:<16} {row['algorithm']:<14} {cells[0]:>15} {cells[1]:>15} {cells[2]:>15}  {verdict}")
    for entry in readme:
        extra = f", with {entry['per_example']} test attributes: 0-1 {entry['test_budget_zero_one']:.3f}" \
            if "test_budget_zero_one" in entry else ""
        print(f"README {entry['algorithm']} {entry['dataset']} k={entry['per_example']} {entry['defaults']}: "
              f"normalised MSE {entry['normalized_mse']:.3f}, 0-1 {entry['zero_one']:.3f}{extra}  "
              f"(target {entry['target']})")
        if entry["diagnosis"]:
            print(f"  {entry['diagnosis']}")
    for entry in estimator:
        print(f"estimator {entry['algorithm']} per_example=5 {entry['defaults']}: "
              f"R² {statistics.fmean(entry['r2']):.3f} (seeds "
              f"{', '.join(f'{r:.3f}' for r in entry['r2'])})  (target {entry['target']})")
    print(f"{elapsed:.0f} s")


if __name__ == "__main__":
    main()
