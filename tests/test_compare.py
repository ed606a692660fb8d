"""``budgetlab compare`` end to end: the real learner service against the real oracle, and in-process."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from client.cli import app
from client.compare import RUNS_FAILED

CONFIG = """
title = "compare test"
dataset = { name = "digits-3v5" }
budget = { per_example = 4 }
seeds = [0, 1]
max_examples = 40
eval_every = 10
log_x = true

[[algorithms]]
id = "aer"
label = "AER"

[[algorithms]]
id = "aelr"
label = "AELR"
per_example = 5

[[algorithms]]
id = "ridge"
label = "Ridge"
per_example = 64
"""

RUNNER = CliRunner()


def compare(tmp_path: Path, name: str, *args: str) -> dict:
    config = tmp_path / "compare.toml"
    config.write_text(CONFIG)
    out = tmp_path / name
    result = RUNNER.invoke(app, ["compare", str(config), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    assert "report:" in result.output
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def service_results(learner_url: str, shared_oracle_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("compare")
    return {"results": compare(tmp, "service", "--learner", learner_url, "--oracle", shared_oracle_url),
            "out": tmp / "service", "learner": learner_url}


def by_label(results: dict) -> dict[str, dict]:
    (design,) = results["designs"]
    return {a["label"]: a for a in design["algorithms"]}


def test_service_compare_writes_report_curves_and_plots(service_results: dict) -> None:
    out: Path = service_results["out"]
    algorithms = by_label(service_results["results"])
    for label in ("AER", "AELR", "Ridge"):
        runs = algorithms[label]["runs"]
        assert [r["seed"] for r in runs] == [0, 1]
        for run in runs:
            assert run["result"]["status"] == "finished"
            assert [p["examples"] for p in run["result"]["curve"]] == [10, 20, 30, 40]
            assert run["result"]["session"]
        assert algorithms[label]["summary"]["test_mse"]["n"] == 2
    # Ridge pays all 64 attributes of each of its 40 examples; AER at most its 4.
    assert algorithms["Ridge"]["summary"]["attributes"]["mean"] == 64 * 40
    assert algorithms["AER"]["summary"]["attributes"]["mean"] <= 4 * 40
    report = (out / "report.md").read_text()
    assert "| AER (`aer`) | 4 |" in report and "| Ridge (`ridge`) | 64 |" in report
    plots = service_results["results"]["designs"][0]["plots"]
    assert len(plots) == 2
    for name in plots:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in report


def test_every_session_is_audited_compliant(service_results: dict) -> None:
    algorithms = by_label(service_results["results"])
    audits = [r["audit"] for label in ("AER", "AELR", "Ridge") for r in algorithms[label]["runs"]]
    assert len(audits) == 6
    assert set(audits) == {"compliant"}
    assert "compliant (2 sessions)" in (service_results["out"] / "report.md").read_text()


def test_local_compare_gives_the_service_weights(service_results: dict, tmp_path: Path) -> None:
    local = by_label(compare(tmp_path, "local", "--local"))
    service = by_label(service_results["results"])
    for label in ("AER", "AELR", "Ridge"):
        for here, there in zip(local[label]["runs"], service[label]["runs"], strict=True):
            assert here["audit"] == "local (no ledger)"
            assert here["result"]["weights"] == pytest.approx(there["result"]["weights"], rel=1e-9, abs=1e-12)
            assert here["result"]["final"]["test_mse"] == pytest.approx(there["result"]["final"]["test_mse"],
                                                                        rel=1e-9)
    assert "local (no ledger)" in (tmp_path / "local" / "report.md").read_text()


def test_bad_invocations_fail_with_a_message(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["compare", "--preset", "no-such-preset", "--out", str(tmp_path)])
    assert result.exit_code == 1 and "unknown preset" in result.output
    result = RUNNER.invoke(app, ["compare", "--preset", "ito-synthetic", "--out", str(tmp_path), "--learner",
                                 "http://127.0.0.1:9"])
    assert result.exit_code == 1 and "both --learner and --oracle" in result.output


def test_a_run_past_the_run_timeout_is_cancelled_with_its_curve_so_far(learner_url: str, shared_oracle_url: str,
                                                                       tmp_path: Path) -> None:
    config = tmp_path / "slow.toml"
    config.write_text('title = "a run too long for its deadline"\nrun_timeout = 1.0\n'
                      'dataset = { name = "sparse-gaussian", params = { d = 20, n_train = 50000, n_test = 20, '
                      's_plus = 3, s_minus = 2 } }\nbudget = { per_example = 4 }\neval_every = 10\n'
                      '[[algorithms]]\nid = "aerr"\n')
    started = time.monotonic()
    result = RUNNER.invoke(app, ["compare", str(config), "--out", str(tmp_path / "out"), "--learner", learner_url,
                                 "--oracle", shared_oracle_url])
    assert result.exit_code == RUNS_FAILED, result.output  # the report is written; a run did not complete
    assert "0/1 runs completed" in result.output and "1 run(s) did not complete" in result.output
    assert time.monotonic() - started < 30
    (run,) = by_label(json.loads((tmp_path / "out" / "results.json").read_text()))["aerr"]["runs"]
    assert run["result"]["status"] == "cancelled"
    assert "did not end within 1 s" in run["result"]["message"] and "cancelled" in run["result"]["message"]
    assert 0 < run["result"]["examples"] < 50_000 and run["result"]["curve"]
    assert run["audit"] == "compliant"  # what it paid before the cancel is in the ledger, and adds up
