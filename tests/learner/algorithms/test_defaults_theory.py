"""The theorems' constants stay one switch away: ``defaults = "theory"`` (a run's ``RunCreate.defaults``, a config's
``[[algorithms]]`` entry, ``budgetlab run --defaults theory``, ``BudgetedRegressor(defaults="theory")``) gives, for the
same seed, exactly the weights the code gave before the practical defaults existed.

``tests/data/theory_weights.json`` holds those weights, one run per algorithm (all of them), computed by the code of
the commit it names with its defaults of then (the theorems' constants). They are compared as the pinned weights are
(``test_pinned_weights``): bit for bit on the floating-point platform the file records, within 1e-12 of the largest
weight on any other.
"""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from budgetlab.contract.budgets import Budget
from client.cli import app
from learner.algorithms import algorithm_modules, algorithms
from learner.oracle import LocalOracle
from learner.reproducibility import compare_floats, compare_params, float_platform
from learner.runner import run_algorithm
from tests.helpers import DATA

# scikit-learn (and the estimator, which imports it) is imported inside the tests that use it: every xdist
# worker collects every file, and the import costs seconds of CPU.

PINNED = json.loads((DATA / "theory_weights.json").read_text())
CASES = PINNED["runs"]
HERE = float_platform()
COMPARISON = "bit-for-bit" if PINNED["platform"] == HERE else "within-1e-12"


def test_every_algorithm_is_pinned() -> None:
    assert {case["algorithm"] for case in CASES} == set(algorithm_modules())  # budgetlab's own, not plugins


def _oracle(case: dict) -> LocalOracle:
    return LocalOracle(case["dataset"], dataset_params=case["dataset_params"],
                       budget=Budget(per_example=case["per_example"]), seed=case["seed"],
                       protocol=algorithms()[case["algorithm"]].protocol)


@pytest.mark.parametrize("case", CASES, ids=[f"{COMPARISON}-{c['algorithm']}-{c['dataset']}" for c in CASES])
def test_theory_defaults_reproduce_the_pinned_weights(case: dict) -> None:
    result = run_algorithm(case["algorithm"], _oracle(case), seed=case["seed"], max_examples=case["max_examples"],
                           defaults="theory")
    assert result.status == "finished"
    assert result.defaults == "theory"
    weights = compare_floats(result.weights, case["weights"], PINNED["platform"], here=HERE)
    assert weights.holds, f"weights not {weights.describe()}"
    params = compare_params(result.resolved_params, case["resolved_params"], PINNED["platform"], here=HERE)
    assert params.holds, f"{result.resolved_params} against {case['resolved_params']}: not {params.describe()}"


def test_run_command_passes_the_switch() -> None:
    case = next(c for c in CASES if c["algorithm"] == "aer" and c["dataset"] == "mnist-3v5")
    result = CliRunner().invoke(app, ["run", "--algorithm", "aer", "--dataset", "mnist-3v5", "--per-example", "4",
                                      "--seed", "3", "--local", "--json", "--defaults", "theory"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)  # progress goes to stderr
    assert printed["defaults"] == "theory"
    np.testing.assert_allclose(printed["weights"], case["weights"], rtol=1e-9, atol=1e-12)
    refused = CliRunner().invoke(app, ["run", "--algorithm", "aer", "--dataset", "mnist-3v5", "--local",
                                       "--defaults", "theroy"])
    assert refused.exit_code == 1 and "defaults" in refused.output


def test_estimator_passes_the_switch() -> None:
    from learner.estimator import BudgetedRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 8))
    y = X @ rng.normal(size=8)
    theory = BudgetedRegressor("aerr", per_example=5, seed=1, defaults="theory").fit(X, y)
    assert theory.result_.defaults == "theory"
    # the theorem's step size, written out: Theorem 3.1's sqrt(k/(2dm)) / max||x||², k = 4, d = 8, m = 200
    expected = np.sqrt(4 / (2 * 8 * 200)) / np.max(np.sum(X**2, axis=1))
    assert theory.result_.resolved_params["eta"] == pytest.approx(expected)


@pytest.mark.usefixtures("shared_cluster")
def test_a_config_entry_asks_for_the_theorems_constants(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(textwrap.dedent("""
        title = "switch"
        dataset = { name = "powerlaw", params = { d = 30, n_train = 400, n_test = 100 } }
        budget = { per_example = 5 }
        seeds = [3]
        max_examples = 300

        [[algorithms]]
        id = "aerr"
        label = "AERR (theory)"
        defaults = "theory"
    """))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["compare", str(config), "--local", "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = json.loads((out / "results.json").read_text())
    entry = written["designs"][0]["algorithms"][0]
    assert entry["defaults"] == "theory"
    run = entry["runs"][0]["result"]
    case = next(c for c in CASES if c["algorithm"] == "aerr" and c["dataset"] == "powerlaw")
    assert run["defaults"] == "theory"
    np.testing.assert_allclose(run["weights"], case["weights"], rtol=1e-9, atol=1e-12)
    assert "theorems' constants" in (out / "report.md").read_text()


def test_the_learner_service_runs_the_theorems_constants(learner_url: str, http: httpx.Client) -> None:
    case = next(c for c in CASES if c["algorithm"] == "aelr")
    auth = {"Authorization": f"Bearer {http.post(f'{learner_url}/v1/callers').json()['token']}"}
    started = http.post(f"{learner_url}/v1/runs", headers=auth, json={
        "dataset": case["dataset"], "dataset_params": case["dataset_params"], "algorithm": "aelr",
        "budget": {"per_example": case["per_example"]}, "seed": case["seed"], "max_examples": case["max_examples"],
        "defaults": "theory"})
    assert started.status_code == 201, started.text
    deadline = time.monotonic() + 60
    while (info := http.get(f"{learner_url}/v1/runs/{started.json()['id']}", headers=auth).json())["status"] in (
            "pending", "queued", "running"):
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.05)
    assert info["request"]["defaults"] == "theory" and info["result"]["defaults"] == "theory"
    np.testing.assert_allclose(info["result"]["weights"], case["weights"], rtol=1e-9, atol=1e-12)
    refused = http.post(f"{learner_url}/v1/runs", headers=auth, json={
        "dataset": "powerlaw", "algorithm": "aelr", "defaults": "paper"})
    assert refused.status_code == 422 and refused.json()["error"]
