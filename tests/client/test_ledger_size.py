"""What ``compare`` says of the ledger its runs will write before they start (client/comparison/ledger_size.py): the
steps and values counted from the runs' requests, the bytes as a real SQLite ledger grows, the line and the warning."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console

from budgetlab.contract.calls import StepsRequest
from budgetlab.contract.runs import RunCreate
from budgetlab.contract.sessions import SessionCreate
from budgetlab.datasets import describe
from budgetlab.operations import OPERATIONS
from client.cli import app
from client.comparison import compare as compare_module
from client.comparison.compare import Plan, say_ledger_size
from client.comparison.config import CompareConfig, resolve_designs
from client.comparison.grid import jobs_for
from client.comparison.ledger_size import LedgerSize, ledger_lines, ledger_size
from client.comparison.preflight import Algorithms
from client.comparison.presets import load_preset
from client.services import ServiceError
from server.db import make_engine, upgrade
from server.sessions import SessionService
from tests.helpers import RUNNER


def requests_of(config: CompareConfig) -> list[RunCreate]:
    return [job.request for job in jobs_for(config, resolve_designs(config), "local")]


def test_each_run_counts_its_examples_times_its_local_budget_at_most_d_and_its_test_session() -> None:
    config = CompareConfig.model_validate({
        "title": "t", "seeds": [0, 1], "max_examples": 600, "test_budget": 3, "budget": {"per_example": 5},
        "dataset": {"name": "sparse-gaussian", "params": {"d": 50, "n_train": 1000, "n_test": 200}},
        "algorithms": [{"id": "aerr"}, {"id": "ridge", "per_example": 50}]})
    size = ledger_size(requests_of(config), describe)
    # 2 seeds x (aerr: 600 steps of 5 values; ridge: 600 of 50), each run then 200 test steps of 3 values
    assert size == LedgerSize(runs=4, steps=2 * (600 + 600) + 4 * 200, values=2 * (600 * 5 + 600 * 50) + 4 * 200 * 3)


def test_a_full_information_preset_is_counted_pixel_by_pixel() -> None:
    size = ledger_size(requests_of(load_preset("cesa-bianchi-fashion")), describe)
    # 45 pairs of 12,000 training images: ridge and lasso read 784 pixels of each, AER and Baseline 4
    assert (size.runs, size.steps) == (180, 180 * 12_000)
    assert size.values == 45 * 12_000 * (2 * 784 + 2 * 4)
    assert 13 * 2**30 < size.bytes < 15 * 2**30  # the 14 GB its run through the services left


@pytest.mark.parametrize("k, steps", [(4, 4000), (784, 300)])
def test_the_bytes_follow_a_real_sqlite_ledger_from_above(tmp_path: Path, k: int, steps: int) -> None:
    path = tmp_path / "ledger.db"
    upgrade(f"sqlite:///{path}")
    service = SessionService(make_engine(f"sqlite:///{path}"))
    try:
        created = service.create(SessionCreate(dataset="sparse-gaussian", order="stream", budget={"per_example": k},
                                               dataset_params={"d": 784, "n_train": steps, "n_test": 10}))
        before = size_on_disk(path)
        for _ in range(0, steps, 100):
            service.perform(OPERATIONS["steps"], created.id, created.token,
                            StepsRequest(rounds=[{"attributes": list(range(k))}] * 100))
    finally:
        service.close_connections()
    grown = size_on_disk(path) - before
    estimate = LedgerSize(runs=1, steps=steps, values=steps * k).bytes
    assert grown <= estimate <= 1.15 * grown, (grown, estimate)


def size_on_disk(path: Path) -> int:
    with sqlite3.connect(path) as connection:  # the log folded into the file, as a finished ledger is
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*"))


def test_a_small_ledger_is_not_worth_a_line_and_a_large_one_names_its_file_and_size(tmp_path: Path) -> None:
    assert ledger_lines(LedgerSize(runs=8, steps=10_000, values=40_000), tmp_path, tuning=False) == []
    lines = ledger_lines(LedgerSize(runs=90, steps=10**6, values=784 * 10**6), tmp_path, tuning=True)
    assert len(lines) == 1
    assert str(tmp_path / "ledger.db") in lines[0] and "GB" in lines[0] and "tuning" in lines[0]


def test_a_ledger_larger_than_the_free_disk_is_warned_of_with_what_to_do(tmp_path: Path) -> None:
    lines = ledger_lines(LedgerSize(runs=1, steps=10**15, values=10**15), tmp_path / "not" / "made", tuning=False)
    assert len(lines) == 2
    assert lines[1].startswith("warning:") and "free" in lines[1] and "--local keeps no ledger" in lines[1]


def test_compare_says_it_before_starting_the_services(tmp_path: Path) -> None:
    config = load_preset("kukliansky-synthetic")
    out = io.StringIO()
    say_ledger_size(Plan(config, resolve_designs(config), tmp_path, Algorithms(), "x"),
                    Console(file=out, width=200))
    said = out.getvalue()
    assert f"in {tmp_path / 'ledger.db'}" in said and "200 runs" in said, said


def test_compare_says_it_before_the_services_it_starts_and_then_starts_them(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[Path] = []

    def services_that_cannot_start(out: Path, **_: object) -> None:
        started.append(out)
        raise ServiceError("no port free (the test's)")

    monkeypatch.setattr(compare_module, "managed_services", services_that_cannot_start)
    done = RUNNER.invoke(app, ["compare", "--preset", "kukliansky-synthetic", "--out", str(tmp_path / "out")])
    said = " ".join(done.output.split())
    assert done.exit_code == 1 and started == [tmp_path / "out"], done.output
    assert said.index("the runs will record at most") < said.index("services unavailable: no port free"), said
