"""Tuning on held-out training examples, every session of it paid for and audited: ``[tune]`` and ``--tune``.

End to end through the real learner service and oracle: the folds are parts of the seeded stream that the oracle
serves and nothing else (``Budget.part``), the choice is the grid point with the lowest validation error, and the
report counts what tuning paid beside the result.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from budgetlab.contract.budgets import Budget, ExamplePart
from budgetlab.datasets import load_dataset, stream_order
from budgetlab.errors import OracleError
from budgetlab.oracle_client import OracleClient
from client.cli import app
from client.comparison.config import TuneSpec
from learner.tuning import folds_of
from tests.helpers import RUNNER

HORIZON = 120
CONFIG = f"""
title = "tuning test"
dataset = {{ name = "digits-3v5" }}
budget = {{ per_example = 4 }}
seeds = [0, 1]
max_examples = {HORIZON}
eval_every = 60

[[algorithms]]
id = "aerr"
label = "AERR"
per_example = 5

[[algorithms]]
id = "aerr"
label = "AERR untuned"
per_example = 5

[tune]
folds = 2
[tune.grid.AERR]
eta = [1e-9, 0.05]
"""


def write(tmp: Path, text: str = CONFIG) -> Path:
    path = tmp / "tune.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def tuned(learner_url: str, shared_oracle_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("tune")
    result = RUNNER.invoke(app, ["compare", str(write(tmp)), "--out", str(tmp / "out"), "--learner", learner_url,
                                 "--oracle", shared_oracle_url])
    assert result.exit_code == 0, result.output
    return {"results": json.loads((tmp / "out" / "results.json").read_text()),
            "report": (tmp / "out" / "report.md").read_text()}


def test_a_part_serves_exactly_its_positions_of_the_seeded_stream(oracle_url: str) -> None:
    dataset = load_dataset("digits-3v5", {}, 3)
    order = stream_order(dataset.n("train"), 3)
    with OracleClient(oracle_url) as client:
        seen = {}
        for part in (ExamplePart(start=20, stop=50), ExamplePart(start=20, stop=50, complement=True)):
            session = client.open_session("digits-3v5", budget=Budget(part=part), seed=3)
            rows = []
            for _ in range(session.info.n_examples):
                issued = session.next()
                values = session.observe(issued.example, [0, 7, 63]).values
                rows.append(values)
            seen[part.complement] = np.array(rows)
            assert session.audit().compliant
    expected = dataset.values("train", np.repeat(order, 3), np.tile([0, 7, 63], order.size)).reshape(-1, 3)
    np.testing.assert_array_equal(seen[False], expected[20:50])
    np.testing.assert_array_equal(seen[True], np.concatenate((expected[:20], expected[50:])))


def test_a_part_outside_the_split_or_in_a_pool_is_refused(oracle_url: str) -> None:
    with OracleClient(oracle_url) as client:
        with pytest.raises(OracleError) as outside:
            client.open_session("digits-3v5", budget=Budget(part=ExamplePart(start=10, stop=10_000)))
        assert outside.value.status == 422 and "not within the split's 292 examples" in outside.value.detail
        with pytest.raises(OracleError) as pool:
            client.open_session("digits-3v5", order="pool", budget=Budget(part=ExamplePart(start=0, stop=5)))
        assert pool.value.status == 422 and "order 'stream'" in pool.value.detail


def test_folds_cover_the_run_examples_once() -> None:
    assert folds_of(100, 3) == [(0, 33), (33, 66), (66, 100)]
    assert folds_of(100, 1, 0.25) == [(75, 100)]
    assert folds_of(100, TuneSpec(grid={"a": {"eta": [1]}}).folds) == [(80, 100)]  # the [tune] default


def test_every_tuning_session_is_in_the_ledger_and_compliant(tuned: dict) -> None:
    cells = tuned["results"]["tuning"]
    assert [(c["label"], c["seed"]) for c in cells] == [("AERR", 0), ("AERR", 1)]  # the untuned twin is not tuned
    for cell in cells:
        assert cell["folds"] == [[0, 60], [60, 120]]
        assert len(cell["fits"]) == 2 * 2 and len(cell["validations"]) == 2
        assert {f["audit"] for f in cell["fits"]} | {v["audit"] for v in cell["validations"]} == {"compliant"}
        assert all(f["session"] for f in cell["fits"]) and all(v["session"] for v in cell["validations"])
        assert cell["sessions"] == 6
        # A fold's fit saw the other 60 examples; its validation paid for the 60 held out, at most d = 64 each.
        assert all(v["examples"] == 60 and 0 < v["attributes"] <= 60 * 64 for v in cell["validations"])
        fits = sum(f["attributes"] for f in cell["fits"])
        assert 0 < fits <= 4 * 60 * 5
        assert cell["attributes"] == fits + sum(v["attributes"] for v in cell["validations"])


def test_the_choice_is_the_lowest_validation_error(tuned: dict) -> None:
    for cell in tuned["results"]["tuning"]:
        tiny, useful = cell["scores"]
        # eta = 1e-9 leaves w at zero: the validation error of the zero predictor (labels ±1, so about 1).
        assert tiny == pytest.approx(1.0, abs=0.05)
        assert useful < tiny
        assert cell["chosen"] == {"eta": 0.05}
    algorithms = {a["label"]: a for a in tuned["results"]["designs"][0]["algorithms"]}
    assert [r["result"]["params"] for r in algorithms["AERR"]["runs"]] == [{"eta": 0.05}] * 2
    assert [r["result"]["params"] for r in algorithms["AERR untuned"]["runs"]] == [{}] * 2


def test_the_report_counts_the_tuning_beside_the_result(tuned: dict) -> None:
    report = tuned["report"]
    tuning = report.split("### Tuning")[1]
    cells = tuned["results"]["tuning"]
    runs = {a["label"]: a for a in tuned["results"]["designs"][0]["algorithms"]}["AERR"]["runs"]
    paid = np.mean([r["result"]["attributes"] for r in runs])
    with_tuning = np.mean([r["result"]["attributes"] + c["attributes"] for r, c in zip(runs, cells, strict=True)])
    assert "2-fold cross-validation" in tuning and "every tuning session audited compliant" in tuning
    assert "| AERR | 0: eta=0.05; 1: eta=0.05 | 12 |" in tuning
    assert f"after {paid:,.0f} attributes without the tuning cost; counting it, the same result cost " \
           f"{with_tuning:,.0f} attributes" in tuning
    assert "| AERR | eta=1e-09 |" in tuning and "| 0 of 2 seeds |" in tuning


@pytest.mark.usefixtures("shared_cluster")
def test_local_tuning_chooses_as_the_services_do(tuned: dict, tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["compare", str(write(tmp_path)), "--out", str(tmp_path / "out"), "--local"])
    assert result.exit_code == 0, result.output
    local = json.loads((tmp_path / "out" / "results.json").read_text())["tuning"]
    for here, there in zip(local, tuned["results"]["tuning"], strict=True):
        assert here["scores"] == pytest.approx(there["scores"], rel=1e-9)
        assert here["attributes"] == there["attributes"]


@pytest.mark.parametrize(("grid", "message"), [
    ('[tune.grid.AERX]\neta = [0.1]', "[tune] names 'AERX', which is no algorithm of this comparison"),
    ('[tune.grid.AERR]\netta = [0.1]', "[tune] 'AERR' (aerr) has no parameter 'etta'; it takes B, eta"),
    ('[tune.grid.AERR]\neta = []', "[tune] 'AERR' parameter 'eta' lists no value to try"),
])
def test_a_bad_tune_section_fails_before_anything_runs(tmp_path: Path, grid: str, message: str) -> None:
    path = write(tmp_path, CONFIG.split("[tune]")[0] + "[tune]\n" + grid + "\n")
    result = RUNNER.invoke(app, ["compare", str(path), "--out", str(tmp_path / "out"), "--local"])
    assert result.exit_code == 1
    assert f"{path}: {message}" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


@pytest.mark.usefixtures("shared_cluster")
def test_the_tune_option_sets_a_grid_and_is_checked(tmp_path: Path) -> None:
    path = write(tmp_path, CONFIG.split("[tune]")[0])
    bad = RUNNER.invoke(app, ["compare", str(path), "--out", str(tmp_path / "bad"), "--local", "--tune",
                              "AERR:nope=1,2"])
    assert bad.exit_code == 1 and "has no parameter 'nope'" in bad.output
    result = RUNNER.invoke(app, ["compare", str(path), "--out", str(tmp_path / "out"), "--local", "--tune",
                                 "aerr:eta=1e-9,0.05", "--tune-folds", "3"])
    assert result.exit_code == 0, result.output
    cells = json.loads((tmp_path / "out" / "results.json").read_text())["tuning"]
    # Named by id, the grid tunes both entries of aerr, with three folds each.
    assert sorted({c["label"] for c in cells}) == ["AERR", "AERR untuned"]
    assert all(len(c["folds"]) == 3 and c["chosen"] == {"eta": 0.05} for c in cells)


@pytest.mark.usefixtures("shared_cluster")
def test_validation_from_the_largest_weights_pays_for_those_only(tmp_path: Path) -> None:
    path = write(tmp_path, CONFIG.replace("folds = 2", "folds = 2\nvalidation_attributes = 3"))
    result = RUNNER.invoke(app, ["compare", str(path), "--out", str(tmp_path / "out"), "--local"])
    assert result.exit_code == 0, result.output
    cells = json.loads((tmp_path / "out" / "results.json").read_text())["tuning"]
    for cell in cells:
        # Two candidates, 3 attributes each: at most 6 distinct attributes of each of the 60 held-out examples.
        assert all(0 < v["attributes"] <= 6 * 60 for v in cell["validations"])
    assert "from each candidate's 3 largest weights" in (tmp_path / "out" / "report.md").read_text()


def test_run_tunes_as_compare_does_and_counts_what_tuning_paid(tuned: dict) -> None:
    args = ["run", "--algorithm", "aerr", "--dataset", "digits-3v5", "--per-example", "5", "--max-examples",
            str(HORIZON), "--eval-every", "60", "--seed", "0", "--local", "--tune", "eta=1e-9,0.05",
            "--tune-folds", "2"]
    result = RUNNER.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)  # progress goes to stderr
    cell = tuned["results"]["tuning"][0]  # compare's AERR, seed 0, through the learner service and the oracle
    assert (cell["label"], cell["seed"]) == ("AERR", 0)
    tuning = printed["tuning"]
    assert tuning["scores"] == pytest.approx(cell["scores"], rel=1e-9)
    assert tuning["attributes"] == cell["attributes"] and tuning["sessions"] == cell["sessions"] == 6
    assert tuning["chosen"] == {"eta": 0.05} and printed["params"] == {"eta": 0.05}
    assert printed["resolved_params"]["eta"] == 0.05
    text = " ".join(RUNNER.invoke(app, args).output.split())
    assert (f"tuned over 2 grid point(s) x 2 fold(s): chose eta=0.05; the tuning's 6 sessions paid "
            f"{cell['attributes']} attributes (cost {cell['cost']:g}), {cell['attributes'] + printed['attributes']} "
            "with the run's") in text
    refused = RUNNER.invoke(app, [*args[:-4], "--tune", "aelr:eta=1,2"])
    assert refused.exit_code == 1 and "names 'aelr', but this run is 'aerr'" in refused.output


def test_the_estimator_tunes_and_counts_what_tuning_paid() -> None:
    from learner.estimator import BudgetedRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 10))
    y = X @ rng.normal(size=10)
    model = BudgetedRegressor("aerr", per_example=5, seed=0, tune={"eta": [1e-9, 0.01]}, tune_folds=2).fit(X, y)
    tuning = model.tuning_
    assert tuning.sessions == 2 * 2 + 2 and tuning.folds == [[0, 150], [150, 300]]
    tiny, useful = tuning.scores
    assert useful < tiny and tuning.chosen == {"eta": 0.01}
    assert model.result_.params == {"eta": 0.01} and model.result_.tuning == tuning
    assert model.n_attributes_paid_ == model.result_.attributes + tuning.attributes
    # each fit saw the other fold's 150 rows, at most 5 attributes of each
    assert model.result_.attributes <= 5 * 300 and tuning.attributes > 0
