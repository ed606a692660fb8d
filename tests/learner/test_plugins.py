"""Algorithm plugins (#24 item 1): the example plugin of ``examples/``, installed as an entry point (``tests.plugins``),
runs beside ``aerr`` and ``ddaerr`` from the CLI, the estimator and the learner service without touching budgetlab;
the learner finds a plugin installed while it runs and never imports code a request names; ``budgetlab algorithms
check`` passes the example and names the point each broken plugin of ``tests.learner.broken_plugins`` fails."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from budgetlab.service_client import tls_context
from client.cli import app
from learner.algorithms import algorithms, rescan
from tests.helpers import BUDGETLAB, RUNNER, caller
from tests.plugins import ALGORITHM, EXAMPLE, PACKAGE, TARGET, VERSION, write_metadata
from tests.servers import cli_service, learner_server

CONFIG = """
    title = "split-sgd beside the papers' learners"
    dataset = {{ name = "powerlaw", params = {{ d = 30, n_train = 500, n_test = 100 }} }}
    budget = {{ per_example = 4 }}
    seeds = [0]
    max_examples = 400

    [[algorithms]]
    id = "aerr"
    [[algorithms]]
    id = "ddaerr"
    [[algorithms]]
    id = "{plugin}"
"""


def install(monkeypatch: pytest.MonkeyPatch, site: Path) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.syspath_prepend(str(write_metadata(site)))


@pytest.fixture
def uninstalled_afterwards(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """A test may install the example (``install``); afterwards it is gone again, from the path and the registry."""
    yield monkeypatch
    monkeypatch.undo()
    rescan()


def compared(out: Path) -> dict[str, list[dict]]:
    """results.json's runs by algorithm id (the config's one design)."""
    written = json.loads((out / "results.json").read_text())
    return {a["id"]: [r["result"] for r in a["runs"]] for a in written["designs"][0]["algorithms"]}


def assert_ran_beside_the_papers(out: Path) -> None:
    runs = compared(out)
    assert list(runs) == ["aerr", "ddaerr", ALGORITHM]
    for algorithm, results in runs.items():
        assert [r["status"] for r in results] == ["finished"], algorithm
        assert results[0]["examples"] == 400 and results[0]["attributes"] <= 4 * 400
        assert 0 < results[0]["final"]["normalized_mse"] < 1.5, (algorithm, results[0]["final"])
    provenance = json.loads((out / "results.json").read_text())["provenance"]
    assert provenance["algorithms"] == {ALGORITHM: {"package": PACKAGE, "version": VERSION, "target": TARGET}}
    assert f"{ALGORITHM} from {PACKAGE} {VERSION}" in (out / "report.md").read_text()


def test_the_cli_lists_an_installed_plugin_with_its_package_and_version(
        uninstalled_afterwards: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def listed() -> dict[str, dict]:
        result = RUNNER.invoke(app, ["algorithms", "--json"])
        assert result.exit_code == 0, result.output
        return {a["id"]: a for a in json.loads(result.stdout)}

    assert ALGORITHM not in listed() and listed()["aerr"]["package"] == "budgetlab"
    install(uninstalled_afterwards, tmp_path / "site")
    entry = listed()[ALGORITHM]
    assert (entry["package"], entry["version"], entry["name"]) == (PACKAGE, VERSION, "Split-half SGD (example plugin)")


@pytest.mark.process
def test_a_compare_from_the_command_line_runs_the_plugin_beside_aerr_and_ddaerr(tmp_path: Path) -> None:
    """``budgetlab compare --local`` as its own process, the plugin installed in its environment: its Dask workers
    import the plugin too."""
    config = tmp_path / "mine.toml"
    config.write_text(textwrap.dedent(CONFIG.format(plugin=ALGORITHM)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE), str(write_metadata(tmp_path / "site"))])}
    done = subprocess.run([BUDGETLAB, "compare", str(config), "--local",
                           "--workers", "1", "--out", str(tmp_path / "out")],
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_ran_beside_the_papers(tmp_path / "out")


def test_a_module_class_target_runs_from_the_cli_and_the_estimator(uninstalled_afterwards: pytest.MonkeyPatch) -> None:
    from learner.estimator import BudgetedRegressor

    uninstalled_afterwards.syspath_prepend(str(EXAMPLE))  # importable, no entry point: named by its code
    result = RUNNER.invoke(app, ["run", "--algorithm", TARGET, "--dataset", "powerlaw:d=30,n_train=300,n_test=50",
                                      "--per-example", "4", "--local", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["algorithm"] == TARGET and printed["status"] == "finished" and printed["attributes"] <= 4 * 300
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 10))
    fitted = BudgetedRegressor(TARGET, per_example=4, seed=1).fit(X, X @ rng.normal(size=10))
    assert fitted.result_.status == "finished" and fitted.result_.attributes <= 4 * 300


def _finished(learner: str, auth: dict[str, str], run_id: str) -> dict:
    deadline = time.monotonic() + 120
    # One client for the looks: httpx.get makes a new one a call, ~45-60 ms of CPU (its TLS settings).
    with httpx.Client(timeout=60, verify=tls_context()) as http:
        while (info := http.get(f"{learner}/v1/runs/{run_id}", headers=auth).json())["status"] in (
                "pending", "queued", "running"):
            assert time.monotonic() < deadline, "the run did not end"
            time.sleep(0.05)
    return info


def test_the_learner_runs_a_plugin_installed_while_it_runs_and_never_code_a_request_names(
        oracle_url: str, tmp_path: Path, uninstalled_afterwards: pytest.MonkeyPatch, http: httpx.Client) -> None:
    # An empty site directory on the path of the learner and of the worker processes it starts (they are spawned
    # with its path), into which the plugin is then installed, as pip would install into site-packages.
    site = tmp_path / "site"
    site.mkdir()
    uninstalled_afterwards.syspath_prepend(str(site))
    with learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle_url, workers=1) as learner:
        auth = caller(learner)
        listed = http.get(f"{learner}/v1/algorithms", timeout=60).json()["algorithms"]
        assert ALGORITHM not in {a["id"] for a in listed}
        run = {"dataset": "powerlaw", "dataset_params": {"d": 30, "n_train": 300, "n_test": 50},
               "budget": {"per_example": 4}, "seed": 1, "max_examples": 200}
        refused = http.post(f"{learner}/v1/runs", headers=auth, json={**run, "algorithm": ALGORITHM})
        # What its author needs to hear: where the learner looks for algorithms, the setting for a target included.
        assert refused.status_code == 422 and "plugins installed where it runs" in refused.json()["detail"]
        assert "BUDGETLAB_LEARNER_ALGORITHMS" in refused.json()["detail"], refused.text

        # pip install, while the learner and its workers run
        shutil.copytree(EXAMPLE / PACKAGE.replace("-", "_"), site / PACKAGE.replace("-", "_"))
        write_metadata(site)
        started = http.post(f"{learner}/v1/runs", headers=auth, json={**run, "algorithm": ALGORITHM})
        assert started.status_code == 201, started.text  # found without a restart
        info = _finished(learner, auth, started.json()["id"])
        assert info["status"] == "finished" and info["result"]["attributes"] <= 4 * 200
        entry = {a["id"]: a for a in http.get(f"{learner}/v1/algorithms", timeout=60).json()["algorithms"]}[ALGORITHM]
        assert (entry["package"], entry["version"]) == (PACKAGE, VERSION)

        # Code named in a request is never imported: a module that would leave a mark when imported is refused
        # unimported, and nothing started.
        canary = tmp_path / "importable" / "canary_plugin.py"
        canary.parent.mkdir()
        canary.write_text(f"open({str(tmp_path / 'imported')!r}, 'w').close()\n")
        uninstalled_afterwards.syspath_prepend(str(canary.parent))
        before = http.get(f"{learner}/v1/runs", headers=auth).json()["runs"]
        refused = http.post(f"{learner}/v1/runs", headers=auth, json={**run, "algorithm": "canary_plugin:Thing"})
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"] == "algorithm_not_allowed"
        assert "BUDGETLAB_LEARNER_ALGORITHMS" in refused.json()["detail"]
        assert not (tmp_path / "imported").exists() and "canary_plugin" not in sys.modules
        assert http.get(f"{learner}/v1/runs", headers=auth).json()["runs"] == before

        # A comparison through the learner, beside aerr and ddaerr.
        config = tmp_path / "mine.toml"
        config.write_text(textwrap.dedent(CONFIG.format(plugin=ALGORITHM)))
        result = RUNNER.invoke(app, ["compare", str(config), "--learner", learner, "--oracle", oracle_url,
                                          "--out", str(tmp_path / "out")])
        assert result.exit_code == 0, result.output
        assert_ran_beside_the_papers(tmp_path / "out")


def test_a_target_allow_listed_in_the_learners_settings_is_listed_and_runs(
        oracle_url: str, tmp_path: Path, uninstalled_afterwards: pytest.MonkeyPatch, http: httpx.Client) -> None:
    uninstalled_afterwards.syspath_prepend(str(EXAMPLE))
    # Its own worker, spawned with this path as a learner's are with its own: the test process's shared cluster may
    # have started before the path had the example (conftest's shared_cluster), and its workers would not import it.
    with learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle_url, algorithm_targets=(TARGET,),
                        workers=1) as learner:
        auth = caller(learner)
        entry = {a["id"]: a for a in http.get(f"{learner}/v1/algorithms", timeout=60).json()["algorithms"]}[TARGET]
        assert entry["name"] == "Split-half SGD (example plugin)"
        started = http.post(f"{learner}/v1/runs", headers=auth, json={
            "dataset": "powerlaw", "dataset_params": {"d": 30, "n_train": 300, "n_test": 50}, "algorithm": TARGET,
            "budget": {"per_example": 4}, "seed": 1, "max_examples": 100})
        assert started.status_code == 201, started.text
        ended = _finished(learner, auth, started.json()["id"])
        assert ended["status"] == "finished", ended


def test_a_comparison_through_a_learner_names_a_plugin_installed_on_the_learner_only(
        oracle_url: str, tmp_path: Path) -> None:
    """The config is checked against the algorithms the learner runs (its /v1/algorithms), not against this
    machine's: a plugin installed where the learner is, and nowhere else, runs beside the papers' algorithms and the
    report names its package; what the learner does not run is refused before anything starts."""
    assert ALGORITHM not in algorithms()  # not installed in this process
    env = {"PYTHONPATH": os.pathsep.join([str(EXAMPLE), str(write_metadata(tmp_path / "site"))]),
           "ORACLE_URL": oracle_url, "BUDGETLAB_WORKERS": "1"}
    config = tmp_path / "mine.toml"
    config.write_text(textwrap.dedent(CONFIG.format(plugin=ALGORITHM)))
    with cli_service(["serve", "learner", "--port", "0"], env={**os.environ, **env}, cwd=tmp_path) as learner:
        result = RUNNER.invoke(app, ["compare", str(config), "--learner", learner, "--oracle", oracle_url,
                                     "--out", str(tmp_path / "out")])
        assert result.exit_code == 0, result.output
        runs = compared(tmp_path / "out")
        assert [r["status"] for r in runs[ALGORITHM]] == ["finished"]
        provenance = json.loads((tmp_path / "out" / "results.json").read_text())["provenance"]
        assert provenance["algorithms"][ALGORITHM]["package"] == PACKAGE
        assert provenance["algorithms"][ALGORITHM]["version"] == VERSION

        unknown = tmp_path / "unknown.toml"
        unknown.write_text(textwrap.dedent(CONFIG.format(plugin="split-sgd-typo")))
        refused = RUNNER.invoke(app, ["compare", str(unknown), "--learner", learner, "--oracle", oracle_url,
                                      "--out", str(tmp_path / "refused")])
        assert refused.exit_code != 0
        assert f"the learner at {learner} runs no algorithm 'split-sgd-typo'" in refused.output
        assert "nothing was started" in refused.output and not (tmp_path / "refused").exists()


def test_check_passes_the_example_plugin(uninstalled_afterwards: pytest.MonkeyPatch, tmp_path: Path) -> None:
    install(uninstalled_afterwards, tmp_path / "site")
    result = RUNNER.invoke(app, ["algorithms", "check", ALGORITHM])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("pass ") == 4 and "FAIL" not in result.stdout
    assert f"{ALGORITHM} keeps the contract" in result.stdout


@pytest.mark.parametrize(("broken", "point", "reason"), [
    ("ReadsUnpaid", "sees only paid-for values", "read attribute 0 of example 0, which it did not pay for"),
    ("IgnoresSeed", "same weights for the same seed", "randomness not from the seed it is given"),
    ("OverBudget", "respects the budget it is given", "asked for 5 attributes of one example; its budget is k = 4"),
])
def test_check_names_the_point_a_broken_plugin_fails(broken: str, point: str, reason: str) -> None:
    result = RUNNER.invoke(app, ["algorithms", "check", f"tests.learner.broken_plugins:{broken}"])
    assert result.exit_code == 1, result.output
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1 and failed[0].startswith(f"FAIL {point}: ") and reason in failed[0], result.stdout
    assert result.stdout.count("pass ") == 3
    assert f"breaks the contract: {point}" in result.output


def test_check_says_why_a_target_cannot_be_loaded() -> None:
    result = RUNNER.invoke(app, ["algorithms", "check", "no_such_package.mod:Thing"])
    assert result.exit_code == 1 and "cannot import 'no_such_package.mod'" in result.output
