"""Runs on worker processes of Dask distributed (``learner.cluster``): a grid on a LocalCluster of two processes
learns the weights a sequential run in this process learns, and Ctrl-C stops it as it stops threads: the runs going
end cancelled with their curves so far, the others are not started, and the workers (which ignore the terminal's
SIGINT) stay up for the next grid."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunCreate
from budgetlab.learner_client import LearnerClient
from budgetlab.oracle_client import OracleClient
from client.cli import app
from client.comparison.compare import check_reach
from client.comparison.config import CompareConfig, resolve_designs
from client.comparison.grid import NOT_STARTED, Interrupted, progress_bars, run_comparison, run_local
from client.comparison.grid import jobs_for as grid_jobs
from client.console import UsageError
from learner.cluster import QUIET_LOCAL_CLUSTER, RunPool
from learner.http_oracle import HttpOracle
from learner.oracle import LocalOracle
from learner.scoring import run_and_score, session_opener
from tests.servers import learner_server, oracle_server

# distributed is imported inside the tests that use it: every xdist worker collects every file,
# and the import costs seconds of CPU.

CONFIG = """
title = "scheduler"
dataset = { name = "sparse-gaussian", params = { d = 20, n_train = 300, n_test = 40, s_plus = 3, s_minus = 2 } }
budget = { per_example = 4 }
seeds = [0, 1]
max_examples = 100
eval_every = 50
[[algorithms]]
id = "aerr"
[[algorithms]]
id = "ddaerr"
"""
GAUSS = {"d": 20, "n_train": 300, "n_test": 40, "s_plus": 3, "s_minus": 2}
LONG = {**GAUSS, "n_train": 50_000, "n_test": 20}


@pytest.fixture(scope="module")
def pool() -> Iterator[RunPool]:
    with RunPool(workers=2) as pool:
        yield pool


def config(dataset: dict, seeds: list[int], max_examples: int | None = 200) -> CompareConfig:
    return CompareConfig.model_validate({
        "title": "workers", "dataset": {"name": "sparse-gaussian", "params": dataset}, "budget": {"per_example": 4},
        "seeds": seeds, "max_examples": max_examples, "eval_every": 50,
        "algorithms": [{"id": "aerr"}, {"id": "ddaerr"}]})


def sequential(request: RunCreate) -> list[float]:
    """The run in this process, one after the other: the reference a worker's run must match."""
    oracle = LocalOracle(request.dataset, dataset_params=request.dataset_params, seed=request.seed,
                         budget=request.budget)
    return run_and_score(request, oracle, session_opener(request, None)).weights


def test_a_grid_on_two_worker_processes_learns_the_sequential_weights(pool: RunPool) -> None:
    from distributed import get_task_stream

    cfg = config(GAUSS, [0, 1])
    with get_task_stream(client=pool.client) as stream:
        _, outcomes = run_comparison(cfg, local=True, learner_url=None, oracle_url=None, parallel=None,
                                     console=Console(quiet=True), show_progress=False, pool=pool)
    assert len(outcomes) == 4 and {o.result.status for o in outcomes} == {"finished"}
    for outcome in outcomes:
        assert outcome.result.curve[-1].examples == 200
    requests = [job.request for job in grid_jobs(cfg, resolve_designs(cfg), "local")]
    for outcome, request in zip(outcomes, requests, strict=True):
        assert outcome.result.weights == pytest.approx(sequential(request), rel=1e-12, abs=1e-15)
    # The runs went to the two worker processes, not to threads of this one.
    assert len({task["worker"] for task in stream.data}) == 2
    assert os.getpid() not in pool.client.run(os.getpid).values()


def test_compare_sends_its_runs_to_a_running_scheduler(pool: RunPool, tmp_path: Path) -> None:
    """``--scheduler``: the runs go to that cluster's workers (here the module's LocalCluster, started apart)."""
    config_file = tmp_path / "c.toml"
    config_file.write_text(CONFIG)
    address = pool.cluster.scheduler_address if pool.cluster else ""
    before = pool.client.run(lambda dask_worker: len(dask_worker.data) + dask_worker.state.executed_count)
    result = CliRunner().invoke(app, ["compare", str(config_file), "--local", "--scheduler", address,
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert f"connecting to the Dask scheduler {address}" in result.output
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["mode"] == f"local (LocalOracle on the Dask scheduler {address} (2 worker thread(s)), no ledger)"
    after = pool.client.run(lambda dask_worker: len(dask_worker.data) + dask_worker.state.executed_count)
    assert sum(after.values()) - sum(before.values()) >= 4  # its four runs executed on the cluster's workers
    unreachable = CliRunner().invoke(app, ["compare", str(config_file), "--local", "--scheduler",
                                           "tcp://127.0.0.1:9", "--out", str(tmp_path / "none")])
    assert unreachable.exit_code == 1 and "cannot reach the Dask scheduler tcp://127.0.0.1:9" in unreachable.output
    assert not (tmp_path / "none" / "results.json").exists()


def test_compare_tunes_on_the_workers_it_runs_on(pool: RunPool, tmp_path: Path) -> None:
    """``[tune]``'s fits go to the comparison's workers (here ``--scheduler``'s), not to a cluster of their own."""
    config_file = tmp_path / "c.toml"
    config_file.write_text(CONFIG.replace("seeds = [0, 1]", "seeds = [0]")
                           + '[tune]\nfolds = 2\n[tune.grid.aerr]\neta = [1e-9, 0.05]\n')
    address = pool.cluster.scheduler_address if pool.cluster else ""

    def executed() -> int:
        return sum(pool.client.run(lambda dask_worker: dask_worker.state.executed_count).values())

    before = executed()
    result = CliRunner().invoke(app, ["compare", str(config_file), "--local", "--scheduler", address,
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "tuning: 4 runs" in result.output and "local worker process" not in result.output
    # 4 tuning fits (2 steps x 2 folds) and the 2 runs of the comparison, all on the scheduler's workers.
    assert executed() - before >= 6


def test_the_workers_ignore_the_terminals_ctrl_c(pool: RunPool) -> None:
    assert set(pool.client.run(lambda: signal.getsignal(signal.SIGINT) == signal.SIG_IGN).values()) == {True}


def test_ctrl_c_cancels_the_runs_going_and_starts_no_other(pool: RunPool) -> None:
    cfg = config(LONG, [0, 1], max_examples=None)
    designs = resolve_designs(cfg)
    jobs = grid_jobs(cfg, designs, "local")
    with progress_bars(Console(quiet=True), False, len(jobs)) as bars:

        def interrupt_once_both_run() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                going = [t for t in bars.bars.tasks if t.description != "all runs" and t.completed > 0]
                if len(going) == 2:
                    break
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGINT)  # a signal, as Ctrl-C: it wakes the main thread's wait

        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            threading.Thread(target=interrupt_once_both_run, daemon=True).start()
            with pytest.raises(Interrupted) as stopped:
                run_local(jobs, designs, pool=pool, parallel=2, bars=bars)
        finally:
            signal.signal(signal.SIGINT, previous)
    results = [o.result for o in stopped.value.outcomes]
    assert [r.status for r in results] == ["cancelled"] * 4
    # Two started (which two is the placement's choice: one dataset each), two never did.
    started = [r for r in results if r.message != NOT_STARTED]
    unstarted = [r for r in results if r.message == NOT_STARTED]
    assert len(started) == len(unstarted) == 2
    assert all(0 < r.examples < 50_000 and r.curve for r in started)
    assert all(r.message == NOT_STARTED and r.examples == 0 for r in unstarted)
    # The workers are still there: the next run goes through.
    again = pool.run(jobs[0].request.model_copy(update={"max_examples": 20, "eval_every": 10}))
    assert again.result is not None and again.result.status == "finished"


def test_a_run_that_raises_on_its_worker_is_one_failed_cell(pool: RunPool) -> None:
    ended = pool.run(RunCreate(dataset="sparse-gaussian", dataset_params=GAUSS, algorithm="aerr",
                               budget=Budget(per_example=4), params={"no_such_parameter": 1.0}, max_examples=10))
    assert ended.result is None and ended.started and ended.refused
    assert "no_such_parameter" in ended.message


def ledger_of(oracle_url: str, session_id: str, token: str) -> list[tuple]:
    """What a session paid for and was told, row by row (no ids, times or hashes)."""
    with OracleClient(oracle_url) as client:
        rows = client.session(session_id, token).ledger(limit=10_000).rows
    return [(r.kind, r.example, r.attribute, r.value, r.cost) for r in rows]


def test_the_learner_runs_on_its_schedulers_workers_with_the_sequential_weights_and_ledger(pool: RunPool,
                                                                                            tmp_path: Path) -> None:
    """The learner service set to a scheduler (``BUDGETLAB_SCHEDULER``): its run executes on that cluster's workers,
    over HTTP in the session the learner opened, and pays for what a sequential run in this process pays for."""
    from distributed import get_task_stream

    address = pool.cluster.scheduler_address if pool.cluster else ""
    request = RunCreate(dataset="sparse-gaussian", dataset_params=GAUSS, algorithm="ddaerr", seed=3,
                        budget=Budget(per_example=4), max_examples=120, eval_every=40, test_budget=3)
    with (oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}") as oracle,
          learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle, scheduler=address) as learner,
          get_task_stream(client=pool.client) as stream, LearnerClient(learner) as client):
        run = client.start(request)
        done = client.wait(run.id, timeout=180)
        assert done.status == "finished" and done.result is not None, done.message
        assert done.curve and [p.examples for p in done.curve] == [40, 80, 120]
        here = HttpOracle(oracle, request.dataset, dataset_params=GAUSS, seed=3, budget=request.budget)
        try:
            sequential = run_and_score(request, here, session_opener(request, oracle))
        finally:
            here.close()
        assert done.result.weights == pytest.approx(sequential.weights, rel=1e-12, abs=1e-15)
        assert done.result.test_budget and sequential.test_budget
        assert done.result.test_budget.mse == pytest.approx(sequential.test_budget.mse, rel=1e-12)
        with sqlite3.connect(tmp_path / "runs.db") as db:
            (token,) = db.execute("select session_token from learner_runs where id = ?", (run.id,)).fetchone()
        with OracleClient(oracle) as direct:
            mine = direct.session(here.session_id, here.session.token)
            mine.close()
            expected = ledger_of(oracle, here.session_id, here.session.token)
        assert ledger_of(oracle, done.session, token) == expected
        assert len(expected) > 120
    assert any(task["key"].startswith("run-") for task in stream.data)  # it went to the scheduler's workers


def test_compare_checks_that_the_workers_reach_the_oracle(pool: RunPool, tmp_path: Path) -> None:
    address = pool.cluster.scheduler_address if pool.cluster else ""
    with pytest.raises(UsageError) as refused:
        check_reach(address, "http://127.0.0.1:9", Console(quiet=True))
    said = refused.value.message
    assert "2 worker(s) of the Dask scheduler" in said and "cannot reach the oracle at http://127.0.0.1:9" in said
    with oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}") as oracle:
        check_reach(address, oracle, Console(quiet=True))  # every worker reaches it: no error


def test_each_worker_process_uses_one_blas_thread(pool: RunPool) -> None:
    """Two runs on two cores never spin more BLAS threads than cores (distributed gives each process one)."""
    def blas_threads() -> set[int]:
        from threadpoolctl import threadpool_info

        return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}

    assert set().union(*pool.client.run(blas_threads).values()) == {1}


def test_the_local_clusters_workers_run_without_dasks_profiler_and_fast_monitors(pool: RunPool) -> None:
    """An idle LocalCluster of ours stays nearly idle: its workers were started with QUIET_LOCAL_CLUSTER (Dask's
    defaults sample every worker thread every 10 ms), and the settings did not leak into this process."""
    import dask

    def settings() -> tuple[object, ...]:
        import dask

        return tuple(dask.config.get(key) for key in QUIET_LOCAL_CLUSTER)

    assert set(pool.client.run(settings).values()) == {tuple(QUIET_LOCAL_CLUSTER.values())}
    assert dask.config.get("distributed.worker.profile.enabled") is True


@pytest.mark.process
def test_a_learner_on_a_cluster_keeps_as_many_runs_going_as_its_workers_have_threads_as_they_come(
        tmp_path: Path) -> None:
    """A cluster's workers come and go (``docker compose up --scale worker=3``, a batch system's jobs): the learner
    sends it one run per worker thread it has, and more once more workers join."""
    request = RunCreate(dataset="sparse-gaussian", dataset_params=LONG, algorithm="aerr", budget=Budget(per_example=4),
                        eval_every=1000)
    with (RunPool(workers=1) as cluster, oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}") as oracle,
          learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle,
                         scheduler=cluster.cluster.scheduler_address if cluster.cluster else "") as learner,
          LearnerClient(learner) as client):
        first, second = (client.start(request.model_copy(update={"seed": seed})) for seed in (0, 1))

        def statuses() -> list[str]:
            return [client.get(run.id).status for run in (first, second)]

        deadline = time.monotonic() + 120
        while statuses()[0] != "running":
            assert time.monotonic() < deadline, statuses()
            time.sleep(0.1)
        assert statuses() == ["running", "queued"]  # one worker thread: one run sent to the cluster
        assert cluster.cluster is not None
        cluster.cluster.scale(2)
        while statuses() != ["running", "running"]:  # the second worker takes the second run beside the first
            assert time.monotonic() < deadline and "finished" not in statuses(), statuses()
            time.sleep(0.1)
        for run in (first, second):
            client.cancel(run.id)
        assert sum(cluster.executed().values()) == 2 and len(cluster.executed()) == 2


def test_a_scheduler_out_of_reach_is_said_once_in_words_and_its_return_too(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # Dask's client between two connections fails with what it half holds; the learner's log says what it could
    # not do, once, and when the scheduler answers again (the pool stands for Dask's client here, not our service).
    import learner.service.runs as runs

    class Reconnecting:
        answers: list[int | Exception] = [AttributeError("'NoneType' object has no attribute 'ncores'")] * 3 + [4]

        def slots(self) -> int:
            answer = self.answers.pop(0) if self.answers else 4
            if isinstance(answer, Exception):
                raise answer
            manager.stopping = True
            return answer

    monkeypatch.setattr(runs, "FOLLOW_SECONDS", 0.001)
    manager = runs.RunManager.__new__(runs.RunManager)
    manager.stopping, manager.scheduler = False, "tcp://lab:8786"
    added: list[int] = []
    monkeypatch.setattr(manager, "_add_threads", added.append)
    with caplog.at_level("WARNING", logger=runs.log.name):
        manager._follow(Reconnecting())  # type: ignore[arg-type]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2, said
    assert said[0].startswith("cannot count the workers of the Dask scheduler tcp://lab:8786 (restarting or out of "
                              "reach?); retrying every 0.001 s: AttributeError:")
    assert said[1] == "the Dask scheduler tcp://lab:8786 answers again: 4 worker threads"
    assert added == [4]


@pytest.mark.process
def test_a_worker_process_imports_no_database_layer() -> None:
    # What a Dask worker imports to execute runs (``learner.cluster``, with its first run) is paid by every worker
    # process that runs one: the run store's SQLAlchemy tables were 0.3-0.6 CPU-s of it, for nothing a run uses.
    script = ("import json, sys; import learner.cluster; "
              "print(json.dumps(sorted(m for m in ('sqlalchemy', 'learner.service', 'psycopg') if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_a_worker_process_starts_without_the_run_machinery(pool: RunPool) -> None:
    # The cluster's preload is all a worker runs as it starts: with ``learner.cluster`` as the preload, each worker
    # process of every learner paid about 0.45 CPU-s for the algorithms, the SDK clients and the contract's models
    # before any run (a learner whose runs went to one worker, or that ran none, for nothing).
    assert pool.cluster is not None
    assert {tuple(spec["options"]["preload"]) for spec in pool.cluster.worker_spec.values()} == {
        ("learner.worker_start",)}
    script = ("import json, sys; before = set(sys.modules); import learner.worker_start; "
              "print(json.dumps(sorted(m for m in set(sys.modules) - before if m.partition('.')[0] not in "
              "('signal', 'threading', '_weakrefset'))))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == ["learner", "learner.worker_start"]
