"""Issue 20's targets for the practical defaults, at the settings the docs lead to, and the tuning's cost in the
oracle's ledger.

Every run here has a fixed seed, so its figures are deterministic; each bound states the measured figure and the
margin it leaves. The estimator's target (R² >= 0.5) is met by its default algorithm, ``screening``; AERR does not
reach it on that problem: its one-draw estimate of <w, x> has a variance of about ||w||² Σ x_j², which halfway to
w* is an order of magnitude above the labels', and the best constant step of a grid reaches R² 0.27
(benchmarks/defaults_sweep.py's figures are in docs/internals/figures.md); what the AERR test pins is that the
practical defaults learn where the theorem's do not.
"""

from __future__ import annotations

import json

import httpx
import numpy as np

from client.cli import app
from learner.diagnosis import NEAR_ZERO
from tests.helpers import ADMIN, RUNNER

# scikit-learn (and the estimator, which imports it) is imported inside the tests that use it: every xdist
# worker collects every file, and the import costs seconds of CPU.


def run_json(*args: str) -> dict:
    result = RUNNER.invoke(app, ["run", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # progress goes to stderr


def test_the_docs_aerr_example_learns_with_the_defaults() -> None:
    # docs/guide/cli.md's first run. Measured (seed 0): 0.777 with the defaults, 0.93 with the theorem's η.
    args = ("--algorithm", "aerr", "--dataset", "mnist-3v5", "--per-example", "57", "--local")
    practical = run_json(*args)
    assert practical["defaults"] == "practical" and practical["resolved_params"]["eta"] == "adaptive"
    assert practical["final"]["normalized_mse"] <= 0.80
    assert practical["diagnosis"] is None
    theory = run_json(*args, "--defaults", "theory")
    assert theory["final"]["normalized_mse"] >= 0.90


def test_the_docs_aer_example_classifies_better_than_chance_and_says_why_not_more() -> None:
    # docs/guide/cli.md's second run. Measured (seed 0): 0-1 error 0.43 (0.46 with 4 attributes per test image) and
    # normalised MSE 0.966 with the defaults; 0.50 and 1.00 with Theorem 12's λ. Above the issue's 0.40, so the run
    # must say why: 4 pixels of 784 per image over 900 images observe each pixel about 4.5 times.
    args = ("--algorithm", "aer", "--dataset", "mnist-3v5", "--per-example", "4", "--test-budget", "4", "--local")
    practical = run_json(*args)
    theory = run_json(*args, "--defaults", "theory")
    assert practical["resolved_params"]["lam"] == "adaptive"
    assert practical["final"]["zero_one"] <= theory["final"]["zero_one"] - 0.05
    assert practical["final"]["zero_one"] <= 0.40 or (
        practical["final"]["normalized_mse"] >= NEAR_ZERO
        and "each attribute was observed 4.5 times on average; try a larger --per-example, more examples or --tune "
            "aer:lam=" in practical["diagnosis"])
    assert "the theorems' constants (defaults = theory)" in theory["diagnosis"]


def regression_problem() -> tuple[np.ndarray, ...]:
    from sklearn.datasets import make_regression
    from sklearn.model_selection import train_test_split

    X, y = make_regression(n_samples=1000, n_features=50, n_informative=5, noise=1.0, random_state=0)
    return tuple(train_test_split(X, y, random_state=0))


def test_the_estimator_with_its_defaults_reaches_the_target() -> None:
    # docs/guide/sdk.md's estimator with its default algorithm (screening). Measured R² over seeds 0-9: 0.86-0.96
    # (0.96, 0.88, 0.96, 0.86, 0.88, ...); the target is 0.5 on every seed.
    from learner.estimator import BudgetedRegressor

    X_train, X_test, y_train, y_test = regression_problem()
    scores = []
    for seed in range(5):
        model = BudgetedRegressor(per_example=5, seed=seed).fit(X_train, y_train)
        assert model.result_.algorithm == "screening"
        assert model.n_attributes_paid_ <= 5 * len(y_train)
        scores.append(model.score(X_test, y_test))
    assert min(scores) >= 0.8, scores


def test_aerr_in_the_estimator_learns_with_the_defaults_where_the_theorem_does_not() -> None:
    # docs/guide/sdk.md's estimator. Measured R² over seeds 0-2: 0.18, 0.22, 0.22 with the defaults, about 0.05 with
    # the theorem's η; the 0.5 is not reached (see the module docstring).
    from learner.estimator import BudgetedRegressor

    X_train, X_test, y_train, y_test = regression_problem()
    practical = [BudgetedRegressor("aerr", per_example=5, seed=s).fit(X_train, y_train).score(X_test, y_test)
                 for s in range(3)]
    theory = BudgetedRegressor("aerr", per_example=5, seed=0, defaults="theory").fit(X_train, y_train)
    assert np.mean(practical) >= 0.15 and min(practical) > 0.1
    assert theory.score(X_test, y_test) <= np.mean(practical) - 0.1


def test_run_tuning_pays_in_the_oracle_ledger_what_it_reports(oracle_url: str, http: httpx.Client) -> None:
    printed = run_json("--algorithm", "aerr", "--dataset", "digits-3v5", "--per-example", "5", "--max-examples", "120",
                       "--eval-every", "60", "--seed", "0", "--oracle", oracle_url, "--tune", "eta=1e-9,0.05",
                       "--tune-folds", "2")
    tuning = printed["tuning"]
    sessions = http.get(f"{oracle_url}/v1/dashboard/sessions?limit=100", headers=ADMIN).json()["sessions"]
    # The tuning's sessions are the ones restricted to a part of the stream (its fits and validations).
    tuned = [s for s in sessions if s["budget"].get("part")]
    assert len(tuned) == tuning["sessions"] == 2 * 2 + 2
    assert sum(s["spent"]["attributes"] for s in tuned) == tuning["attributes"] > 0
    assert sum(s["spent"]["cost"] for s in tuned) == tuning["cost"]
    run = [s for s in sessions if s["id"] == printed["session"]]
    assert len(run) == 1 and run[0]["spent"]["attributes"] == printed["attributes"]
