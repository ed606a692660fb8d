"""``budgetlab compare`` end to end: the real learner service against the real oracle, and in-process."""

from __future__ import annotations

import csv
import io
import json
import platform
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunCreate, RunResult
from budgetlab.learner_client import LearnerClient
from client.cli import app
from client.comparison import grid
from client.comparison.compare import INTERRUPTED, RUNS_FAILED
from client.comparison.grid import NOT_STARTED, progress_bars
from learner.oracle import LocalOracle
from learner.runner import run_algorithm
from tests.helpers import ROOT, RUNNER
from tests.servers import learner_server

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


def compare(tmp_path: Path, name: str, *args: str) -> dict:
    config = tmp_path / "compare.toml"
    config.write_text(CONFIG)
    out = tmp_path / name
    result = RUNNER.invoke(app, ["compare", str(config), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    assert "report:" in result.output
    # Not a terminal: no bar is drawn, a line says how far the grid is.
    assert re.search(r"^runs: (\d+) of \1 done, \d+:\d\d elapsed$", result.output, re.MULTILINE), result.output
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


@pytest.mark.usefixtures("shared_cluster")
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
    result = RUNNER.invoke(app, ["compare", str(config), "--out", str(tmp_path / "out"), "--learner", learner_url,
                                 "--oracle", shared_oracle_url])
    assert result.exit_code == RUNS_FAILED, result.output  # the report is written; a run did not complete
    assert "0/1 runs completed" in result.output and "1 run(s) did not complete" in result.output
    (run,) = by_label(json.loads((tmp_path / "out" / "results.json").read_text()))["aerr"]["runs"]
    assert run["result"]["status"] == "cancelled"
    assert "did not end within 1 s" in run["result"]["message"] and "cancelled" in run["result"]["message"]
    assert 0 < run["result"]["examples"] < 50_000 and run["result"]["curve"]
    assert run["audit"] == "compliant"  # what it paid before the cancel is in the ledger, and adds up


def test_results_record_the_software_the_host_and_the_parameters_in_effect(service_results: dict) -> None:
    import sklearn  # here, not at the top: every xdist worker collecting this file would pay its import

    results = service_results["results"]
    origin = results["provenance"]
    assert origin["budgetlab"] == metadata.version("budgetlab")
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    assert origin["git_commit"] == head and isinstance(origin["git_modified"], bool)
    assert origin["numpy"] == np.__version__ and origin["scikit-learn"] == sklearn.__version__
    assert origin["python"] == platform.python_version() and origin["host"] == socket.gethostname()
    report = (service_results["out"] / "report.md").read_text()
    assert f"budgetlab {origin['budgetlab']} (git {head[:12]}" in report and f"host {origin['host']}" in report
    # AER ran with its theoretical lambda and radius: they are recorded, and running with them gives its weights.
    aer = by_label(results)["AER"]["runs"][0]["result"]
    assert aer["params"] == {} and set(aer["resolved_params"]) == {"lam", "radius"}
    # λ's practical default is a rule, recorded by its name (accepted back below); the radius is a number
    assert aer["resolved_params"]["lam"] == "adaptive"
    assert isinstance(aer["resolved_params"]["radius"], float) and aer["resolved_params"]["radius"] > 0
    again = run_algorithm("aer", LocalOracle("digits-3v5", budget=Budget(per_example=4), seed=0), seed=0,
                          params=aer["resolved_params"], max_examples=40, eval_every=10)
    assert again.weights == pytest.approx(aer["weights"], rel=1e-9, abs=1e-12)
    assert by_label(results)["AELR"]["runs"][0]["result"]["resolved_params"].keys() == {"B", "eta"}


def test_curves_csv_has_a_row_per_algorithm_seed_and_point(service_results: dict) -> None:
    with (service_results["out"] / "curves.csv").open() as f:
        rows = list(csv.DictReader(f))
    expected = [(a["label"], r["seed"], p) for a in service_results["results"]["designs"][0]["algorithms"]
                for r in a["runs"] for p in r["result"]["curve"]]
    assert len(rows) == len(expected) == 3 * 2 * 4
    for row, (label, seed, point) in zip(rows, expected, strict=True):
        assert (row["algorithm"], int(row["seed"]), int(row["examples"])) == (label, seed, point["examples"])
        assert float(row["test_mse"]) == point["test_mse"] and int(row["attributes"]) == point["attributes"]
        assert row["dataset"] == "digits-3v5" and row["status"] == "finished" and row["regret"] == ""


DATASET = {"d": 12, "n_train": 60, "n_test": 20, "s_plus": 2, "s_minus": 1}


@pytest.mark.usefixtures("shared_cluster")
def test_dataset_parameters_are_typed_the_same_from_every_entry_point(shared_oracle_url: str, learner_url: str,
                                                                       tmp_path: Path) -> None:
    spec = "sparse-gaussian:" + ",".join(f"{k}={v}" for k, v in DATASET.items())  # strings on the command line
    as_text = {k: str(v) for k, v in DATASET.items()}  # as a form or a shell would send them
    args = ["run", "--algorithm", "aer", "--dataset", spec, "--per-example", "3", "--max-examples", "20", "--json"]
    local = json.loads(RUNNER.invoke(app, [*args, "--local"]).stdout)["dataset_params"]
    remote = json.loads(RUNNER.invoke(app, [*args, "--oracle", shared_oracle_url]).stdout)["dataset_params"]
    config = tmp_path / "typed.toml"
    config.write_text('title = "typed"\nmax_examples = 20\nbudget = { per_example = 3 }\n'
                      f'dataset = {{ name = "sparse-gaussian", params = {json.dumps(DATASET).replace(":", " =")} }}\n'
                      '[[algorithms]]\nid = "aer"\n')
    assert RUNNER.invoke(app, ["compare", str(config), "--out", str(tmp_path / "out"), "--local"]).exit_code == 0
    (design,) = json.loads((tmp_path / "out" / "results.json").read_text())["designs"]
    compared = design["algorithms"][0]["runs"][0]["result"]["dataset_params"]
    sdk = run_algorithm("aer", LocalOracle("sparse-gaussian", dataset_params=as_text, budget=Budget(per_example=3)),
                        max_examples=20).dataset_params
    with LearnerClient(learner_url) as learner:
        run = learner.start(RunCreate(dataset="sparse-gaussian", dataset_params=as_text, algorithm="aer",
                                      budget=Budget(per_example=3), max_examples=20))
        done = learner.wait(run.id, timeout=60)
    assert done.result is not None, done.message
    service = done.result.dataset_params
    assert local == remote == compared == sdk == service == {**DATASET, "noise": 1.0}
    assert all(type(typed[k]) is int for typed in (compared, sdk, service) for k in DATASET)


@pytest.fixture
def watched_learner(shared_oracle_url: str, tmp_path: Path) -> Iterator[str]:
    """A learner of its own whose admin token lets the test see every run."""
    with learner_server(f"sqlite:///{tmp_path / 'runs.db'}", shared_oracle_url, admin_token="learner-admin") as url:
        yield url


LONG = ('title = "runs too long to wait for"\nseeds = [0, 1]\neval_every = 50\nbudget = { per_example = 4 }\n'
        'dataset = { name = "sparse-gaussian", params = { d = 20, n_train = 50000, n_test = 20, s_plus = 3, '
        's_minus = 2 } }\n[[algorithms]]\nid = "aerr"\n[[algorithms]]\nid = "aelr"\n')


def test_ctrl_c_cancels_the_runs_on_the_learner_and_writes_a_partial_report(watched_learner: str,
                                                                             shared_oracle_url: str,
                                                                             tmp_path: Path) -> None:
    config, out = tmp_path / "long.toml", tmp_path / "out"
    config.write_text(LONG)
    budgetlab = Path(sys.executable).with_name("budgetlab")
    # As from a terminal: Ctrl-C's default action, whatever this process had (a process started with SIGINT ignored,
    # a background job of a script say, keeps it ignored, and Python then never raises KeyboardInterrupt).
    process = subprocess.Popen([str(budgetlab), "compare", str(config), "--out", str(out), "--parallel", "2",
                                "--learner", watched_learner, "--oracle", shared_oracle_url],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    with LearnerClient(watched_learner, token="learner-admin") as admin:
        deadline = time.monotonic() + 120  # the learner's worker processes may still be starting
        while not (len(running := [r for r in admin.list() if r.status == "running" and r.progress_examples > 0])
                   == 2) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(running) == 2, "the two first runs did not start"
        process.send_signal(signal.SIGINT)
        try:
            stdout, stderr = process.communicate(timeout=120)  # cancelling, then the partial report and its plots
        except subprocess.TimeoutExpired:  # say where it stood (a CI run once saw this hang), then fail
            process.kill()
            stdout, stderr = process.communicate()
            runs = [(r.id, r.status, r.progress_examples, r.message) for r in admin.list()]
            pytest.fail(f"compare did not end within 120 s of Ctrl-C; the learner's runs: {runs}\n"
                        f"stdout:\n{stdout}\nstderr:\n{stderr}")
        assert process.returncode == INTERRUPTED, stdout + stderr
        # Both runs that were going are cancelled on the learner; the two others never started there.
        assert sorted(r.status for r in admin.list()) == ["cancelled", "cancelled"]
    assert "partial report" in stderr and "2 run(s) cancelled with their curves so far" in stderr
    results = json.loads((out / "results.json").read_text())
    assert results["interrupted"].startswith("interrupted during the runs")
    runs = {(a["label"], r["seed"]): r for a in results["designs"][0]["algorithms"] for r in a["runs"]}
    for label in ("aerr", "aelr"):
        started, unstarted = runs[(label, 0)], runs[(label, 1)]
        assert started["result"]["status"] == "cancelled" and 0 < started["result"]["examples"] < 50_000
        assert started["result"]["curve"] and started["audit"] == "compliant"
        assert unstarted["result"]["status"] == "cancelled" and unstarted["result"]["message"] == NOT_STARTED
    assert "**Partial report: interrupted during the runs" in (out / "report.md").read_text()


def test_a_grid_keeps_a_bar_for_the_runs_going_only_and_says_how_failed_ones_ended() -> None:
    """rich draws every bar on each update: a bar per run kept for 1,880 runs made drawing the grid's work."""
    out = io.StringIO()
    with progress_bars(Console(file=out, width=200), enabled=True, runs=300) as bars:
        for i in range(300):
            task = bars.start(f"run {i}", 10)
            bars.show(task, 10, 10, "attrs 40")
            status = "failed" if i == 7 else "finished"
            bars.end(task, f"run {i}", RunResult(algorithm="aer", dataset="d", seed=i, status=status,
                                                 message="oracle said no" if i == 7 else ""))
        assert [t.description for t in bars.bars.tasks] == ["all runs"]
        assert bars.bars.tasks[0].completed == 300
    assert "run 7: failed oracle said no" in out.getvalue()
    assert "run 8:" not in out.getvalue()


@pytest.mark.parametrize("terminal", [False, True])
def test_a_grid_on_an_output_that_is_not_a_terminal_says_how_far_it_is(terminal: bool,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A log file or a batch job gets no bar from rich until the end: a line every PLAIN_EVERY_SECONDS instead."""
    monkeypatch.setattr(grid, "PLAIN_EVERY_SECONDS", 0.0)
    out = io.StringIO()
    with progress_bars(Console(file=out, width=200, force_terminal=terminal), enabled=True, runs=3) as bars:
        for i in range(3):
            task = bars.start(f"run {i}", 10)
            bars.end(task, f"run {i}", RunResult(algorithm="aer", dataset="d", seed=i,
                                                 status="failed" if i == 1 else "finished"))
    lines = [line for line in out.getvalue().splitlines() if line.startswith("runs: ")]
    assert [line.rsplit(",", 1)[0] for line in lines] == ([] if terminal else [
        "runs: 1 of 3 done", "runs: 2 of 3 done, 1 did not complete", "runs: 3 of 3 done, 1 did not complete"])
