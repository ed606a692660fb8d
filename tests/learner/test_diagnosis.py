"""A run that stays near the zero predictor says so in one line, with the reason and what to try
(``learner.diagnosis``): in its result (so in results.json and the learner's API), on ``budgetlab run``'s and
``compare``'s terminal, in report.md and on the learner dashboard's comparisons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetlab.contract.results import ComparisonResults
from budgetlab.contract.runs import CurvePoint, RunResult
from client.cli import app
from learner.diagnosis import NEAR_ZERO, diagnose
from learner.service.reports import parse
from tests.helpers import RUNNER


def result(normalized_mse: float, *, defaults: str = "practical", status: str = "finished", d: int = 64,
           examples: int = 300, attributes: int = 1500) -> RunResult:
    point = CurvePoint(examples=examples, attributes=attributes, test_mse=normalized_mse,
                       normalized_mse=normalized_mse, zero_one=0.5)
    return RunResult(algorithm="aer", dataset="digits-3v5", defaults=defaults, seed=0, status=status,  # type: ignore[arg-type]
                     weights=[0.0] * d, curve=[point], final=point, examples=examples, attributes=attributes)


def test_a_run_that_learned_or_did_not_complete_has_no_line() -> None:
    assert diagnose(result(NEAR_ZERO - 0.01), {"lam": [1.0]}) is None
    assert diagnose(result(0.99, status="cancelled")) is None
    assert diagnose(result(0.99, status="failed")) is None


def test_the_reason_is_the_first_that_applies() -> None:
    hint = {"lam": [2.5, 25.0, 250.0]}
    theory = diagnose(result(0.99, defaults="theory"), hint)
    assert theory == ("aer ended at 0.99 of the zero predictor's test MSE: the theorems' constants (defaults = "
                      "theory) are worst-case choices that barely move w in 300 examples; try the practical defaults "
                      "or --tune aer:lam=2.5,25,2.5e+02")
    diverged = diagnose(result(1.3), hint)
    assert diverged is not None and "worse than predicting 0" in diverged
    assert diverged.endswith("--tune aer:lam=2.5,25,2.5e+02")
    few = diagnose(result(0.97, d=784, examples=900, attributes=3534), hint)
    assert few is not None and ("with about 3.93 of d = 784 attributes per example over 900 examples, each attribute "
                                "was observed 4.5 times on average; try a larger --per-example, more examples or "
                                "--tune aer:lam=") in few
    # too few observations explain a noisy run above the zero predictor too (a tiny run of AER did that)
    few_and_above = diagnose(result(1.09, d=64, examples=40, attributes=147), hint)
    assert few_and_above is not None and "each attribute was observed 2.3 times on average" in few_and_above
    plenty = diagnose(result(0.97, d=10, attributes=1500), None)
    assert plenty == ("aer ended at 0.97 of the zero predictor's test MSE: its parameters do not fit this data; try "
                      "tuning its parameters (--tune)")
    for line in (theory, diverged, few, plenty):
        assert "\n" not in line
    # the estimator's users write Python: the same advice in its arguments
    python = diagnose(result(0.97, d=784, examples=900, attributes=3534), hint, python=True)
    assert python is not None and python.endswith('try a larger per_example, more examples or '
                                                  'tune={"lam": [2.5, 25, 2.5e+02]}')
    assert "--" not in python
    assert diagnose(result(0.97, d=10, attributes=1500), None, python=True).endswith("(tune={...})")  # type: ignore[union-attr]


def test_run_prints_the_line_and_json_carries_it() -> None:
    args = ["run", "--algorithm", "aer", "--dataset", "digits-3v5", "--per-example", "4", "--local"]
    theory = RUNNER.invoke(app, [*args, "--defaults", "theory", "--json"])
    assert theory.exit_code == 0, theory.output
    printed = json.loads(theory.stdout)  # progress goes to stderr
    assert printed["final"]["normalized_mse"] >= NEAR_ZERO
    line = printed["diagnosis"]
    assert line.startswith("aer ended at ") and "the theorems' constants (defaults = theory)" in line
    assert "--tune aer:lam=" in line
    text = RUNNER.invoke(app, [*args, "--defaults", "theory"]).output
    assert [row for row in text.splitlines() if row.startswith("aer ended at")] == [line]
    learned = RUNNER.invoke(app, ["run", "--algorithm", "ridge", "--dataset", "digits-3v5", "--local", "--json"])
    assert json.loads(learned.stdout)["diagnosis"] is None


@pytest.mark.usefixtures("shared_cluster")
def test_compare_report_results_and_dashboard_carry_the_line(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("""
title = "near zero"
dataset = { name = "digits-3v5" }
budget = { per_example = 4 }
seeds = [0, 1]
max_examples = 40

[[algorithms]]
id = "aer"
label = "AER stuck"
params = { lam = 1e5 }

[[algorithms]]
id = "ridge"
label = "Ridge"
per_example = 64
""")
    out = tmp_path / "out"
    run = RUNNER.invoke(app, ["compare", str(config), "--local", "--out", str(out)])
    assert run.exit_code == 0, run.output
    results = json.loads((out / "results.json").read_text())
    aer, ridge = results["designs"][0]["algorithms"]
    lines = [r["result"]["diagnosis"] for r in aer["runs"]]
    assert all(line and "each attribute was observed 2.3 times on average" in line for line in lines)
    assert aer["diagnosis"] == f"{lines[0]} (2 of 2 seeds)" and ridge["diagnosis"] is None
    report = (out / "report.md").read_text()
    assert f"Near the zero predictor:\n\n- **AER stuck**: {aer['diagnosis']}\n" in report
    assert f"near zero · AER stuck: {aer['diagnosis']}" in " ".join(run.output.split())
    detail = parse("out", ComparisonResults.read(out / "results.json"), 0.0, out / "report.md")
    assert [a.diagnosis for a in detail.designs[0].algorithms] == [aer["diagnosis"], None]
