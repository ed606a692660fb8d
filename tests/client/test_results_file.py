"""A comparison's results.json goes through one versioned model (``budgetlab.contract.results``): written by the
report, read back by the learner's dashboard and by the MLflow logging. A file of the format before the version
field still reads; a file of a newer format is refused, naming its version, everywhere it is read."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from budgetlab.contract.results import RESULTS_VERSION, SCORES, ComparisonResults, ResultsError, Stat
from budgetlab.errors import LearnerError
from client.cli import app
from learner.service.reports import REPORTS_ENV, Reports
from tests.dashboard_helpers import write_report


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real comparison (in-process oracles): its reports directory, holding ``demo``."""
    root = tmp_path_factory.mktemp("reports")
    write_report(root, tmp_path_factory)
    return root


def test_results_json_round_trips_through_the_model(written: Path) -> None:
    text = (written / "demo" / "results.json").read_text()
    on_disk = json.loads(text)
    assert on_disk["version"] == RESULTS_VERSION
    results = ComparisonResults.parse(text)
    # Nothing the report wrote is lost on the way through the model (the config's untyped fields included).
    assert json.loads(results.text()) == on_disk
    assert on_disk["config"]["title"] == "dashboard demo" and results.config.seeds == [0, 1, 2, 3, 4]
    aer, ridge = results.designs[0].algorithms
    assert (aer.label, ridge.label) == ("AER", "Ridge")
    finals = [run.result.final.test_mse for run in ridge.runs if run.result.final is not None]
    summary = ridge.summary.test_mse
    assert len(finals) == 5 and summary is not None and summary.mean == pytest.approx(sum(finals) / 5)
    assert summary.low is not None and summary.high is not None and summary.low < summary.mean < summary.high
    assert results.provenance.scikit_learn == on_disk["provenance"]["scikit-learn"]


def test_a_diverged_score_survives_the_round_trip(written: Path) -> None:
    results = ComparisonResults.read(written / "demo" / "results.json")
    results.designs[0].algorithms[0].summary.test_mse = Stat(mean=math.inf, std=math.nan, n=1)
    again = ComparisonResults.parse(results.text())
    stat = again.designs[0].algorithms[0].summary.test_mse
    assert stat is not None and stat.mean == math.inf and math.isnan(stat.std)


def test_a_file_of_the_format_before_the_version_field_still_reads(written: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    old = json.loads((written / "demo" / "results.json").read_text())
    del old["version"]
    # budgetlab then decided a claim by the means of one seed, where it is indicative now
    for claim in old["claims"]:
        claim["verdict"] = "holds"
        for field in ("test", "seeds", "p_value", "attributes", "checks"):
            del claim[field]
    for design in old["designs"]:
        del design["task"], design["metrics"]
        for algorithm in design["algorithms"]:
            algorithm.pop("diagnosis", None)
            for stat in algorithm["summary"].values():
                if stat:
                    del stat["low"], stat["high"]
    (written / "old").mkdir(exist_ok=True)
    (written / "old" / "results.json").write_text(json.dumps(old))
    results = ComparisonResults.read(written / "old" / "results.json")
    assert results.version == 1 and results.designs[0].metrics == list(SCORES)
    assert results.designs[0].task is None
    monkeypatch.setenv(REPORTS_ENV, str(written))
    detail = Reports().detail("old")
    assert (detail.runs, detail.completed, detail.claims_held) == (10, 10, len(old["claims"]))
    assert detail.designs[0].metrics == list(SCORES)


def test_a_newer_format_is_refused_naming_its_version(written: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    newer = json.loads((written / "demo" / "results.json").read_text())
    newer["version"] = RESULTS_VERSION + 1
    (written / "newer").mkdir(exist_ok=True)
    (written / "newer" / "results.json").write_text(json.dumps(newer))
    said = f"results format version {RESULTS_VERSION + 1}"
    with pytest.raises(ResultsError, match=f"{said}.*reads versions 1 to {RESULTS_VERSION}"):
        ComparisonResults.read(written / "newer" / "results.json")

    monkeypatch.setenv(REPORTS_ENV, str(written))
    reports = Reports()
    assert "newer" not in {r.name for r in reports.listing().reports}
    with pytest.raises(LearnerError) as refused:
        reports.detail("newer")
    assert refused.value.status == 404 and said in refused.value.detail

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.chdir(tmp_path)
    logged = CliRunner().invoke(app, ["mlflow-log", str(written / "newer")])
    assert logged.exit_code == 1 and said in " ".join(logged.output.split())


@pytest.mark.parametrize("text, says", [("{not json", "is not JSON"), ("[1, 2]", "a JSON object"),
                                         ('{"version": "2"}', "no valid format version"),
                                         ('{"version": 2, "designs": [{"name": "x"}]}', "designs.0.dataset")])
def test_what_is_not_a_results_file_says_why(text: str, says: str) -> None:
    with pytest.raises(ResultsError, match=says):
        ComparisonResults.parse(text)
