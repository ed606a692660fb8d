"""``budgetlab compare --mlflow`` and ``budgetlab mlflow-log``: a real comparison logged to a local MLflow (SQLite
tracking store under the test's directory) and read back with MLflow's own client."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from client.cli import app
from client.comparison.tracking import EXTRA
from tests.helpers import RUNNER

if TYPE_CHECKING:  # imported in the tests that use it: every xdist worker collects this file
    from mlflow import MlflowClient

pytestmark = pytest.mark.usefixtures("shared_cluster")

CONFIG = """
title = "tracking test"
dataset = { name = "digits-3v5" }
budget = { per_example = 4 }
seeds = [0, 1]
max_examples = 40
eval_every = 10

[[algorithms]]
id = "aelr"
label = "AELR"
params = { B = 3.0 }

[[algorithms]]
id = "aer"
label = "AER"
per_example = 5
"""


@pytest.fixture
def tracking_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(tmp_path)  # MLflow keeps a SQLite store's artifacts in ./mlruns
    return uri


def runs_of(client: MlflowClient, experiment: str) -> tuple[object, list]:
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment!r}"
    runs = client.search_runs([found.experiment_id], max_results=100)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1, [r.info.run_name for r in parents]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    assert len(children) == len(runs) - 1
    return parents[0], children


def test_compare_logs_a_parent_run_and_one_nested_run_per_algorithm_and_seed(tracking_uri: str,
                                                                             tmp_path: Path) -> None:
    from mlflow import MlflowClient

    config, out = tmp_path / "c.toml", tmp_path / "out"
    config.write_text(CONFIG)
    result = RUNNER.invoke(app, ["compare", str(config), "--local", "--out", str(out), "--mlflow"])
    assert result.exit_code == 0, result.output
    assert "MLflow: run " in result.output
    results = json.loads((out / "results.json").read_text())
    client = MlflowClient(tracking_uri)
    parent, children = runs_of(client, "tracking test")

    origin = results["provenance"]
    tags = parent.data.tags
    assert tags["budgetlab.version"] == metadata.version("budgetlab") == origin["budgetlab"]
    assert tags.get("budgetlab.git_commit") == origin["git_commit"]
    assert (tags["python"], tags["numpy"], tags["scikit-learn"], tags["host"]) == (
        origin["python"], origin["numpy"], origin["scikit-learn"], origin["host"])
    assert parent.info.status == "FINISHED"
    (design,) = results["designs"]
    assert len(design["plots"]) == 2
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert artifacts == {"report.md", "results.json", "curves.csv", *design["plots"]}
    logged = client.download_artifacts(parent.info.run_id, "results.json", str(tmp_path))
    assert json.loads(Path(logged).read_text()) == results

    expected = {(a["id"], r["seed"]): (a, r["result"]) for a in design["algorithms"] for r in a["runs"]}
    assert len(expected) == 4
    assert sorted((c.data.params["algorithm"], int(c.data.params["seed"])) for c in children) == sorted(expected)
    for child in children:
        algorithm, run = expected[(child.data.params["algorithm"], int(child.data.params["seed"]))]
        params = child.data.params
        assert child.info.status == "FINISHED"
        assert params["dataset"] == "digits-3v5" and params["label"] == algorithm["label"]
        assert params["budget.per_example"] == str(algorithm["per_example"])
        for name, value in run["resolved_params"].items():
            # a number as JSON, a rule's name ("adaptive") as it is
            assert params[name] == (value if isinstance(value, str) else json.dumps(value)), name
        for name, curve_key in (("test_mse", "test_mse"), ("normalized_mse", "normalized_mse"),
                                ("zero_one", "zero_one"), ("attributes_paid", "attributes")):
            history = sorted((m.step, m.value) for m in client.get_metric_history(child.info.run_id, name))
            assert history == [(p["examples"], pytest.approx(p[curve_key])) for p in run["curve"]], name
        assert child.data.metrics["final_test_mse"] == pytest.approx(run["final"]["test_mse"])
    aelr = [c for c in children if c.data.params["algorithm"] == "aelr"]
    # The step size AELR resolved for itself (no eta given) is logged, beside the B it was given.
    assert all(c.data.params["eta"] == "adaptive" and float(c.data.params["B"]) == 3.0 for c in aelr)

    # The same directory logged again, afterwards, into another experiment.
    again = RUNNER.invoke(app, ["mlflow-log", str(out), "--experiment", "logged later"])
    assert again.exit_code == 0, again.output
    later, later_children = runs_of(client, "logged later")
    assert later.data.tags["budgetlab.version"] == tags["budgetlab.version"]
    assert sorted(c.data.params["eta"] for c in later_children if c.data.params["algorithm"] == "aelr") == sorted(
        c.data.params["eta"] for c in aelr)


def test_mlflow_missing_fails_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # what `import mlflow` meets where the extra is not installed
    config, out = tmp_path / "c.toml", tmp_path / "out"
    config.write_text(CONFIG)
    result = RUNNER.invoke(app, ["compare", str(config), "--local", "--out", str(out), "--mlflow"])
    assert result.exit_code == 1
    assert EXTRA in result.output and "not installed" in result.output
    assert not out.exists()
    result = RUNNER.invoke(app, ["mlflow-log", str(tmp_path)])
    assert result.exit_code == 1 and EXTRA in result.output


def test_a_tracking_store_that_refuses_fails_before_anything_runs(tracking_uri: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri)
    client.delete_experiment(client.create_experiment("tracking test"))
    config, out = tmp_path / "c.toml", tmp_path / "out"
    config.write_text(CONFIG)
    result = RUNNER.invoke(app, ["compare", str(config), "--local", "--out", str(out), "--mlflow"])
    assert result.exit_code == 1
    assert "MLflow experiment 'tracking test' is deleted" in result.output and "nothing was started" in result.output
    assert not out.exists()
