"""Runs survive the learner: ``budgetlab serve learner`` is killed (SIGKILL) mid-run and started again on the same
database, on SQLite and on PostgreSQL. The new learner lists every run: the ended ones as they ended (curve,
result, audit), the one that was executing and the one that was queued as 'interrupted', with the curve so far,
and it closes their oracle sessions, a test session a run was scoring in included."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from client.services import running
from tests.helpers import BUDGETLAB, TINY
from tests.servers import oracle_server

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)

ADMIN = "restart-admin-token"
RUN = {"dataset": "sparse-gaussian", "dataset_params": TINY, "algorithm": "aerr", "budget": {"per_example": 4},
       "eval_every": 20}


@contextmanager
def learner_process(env: dict[str, str], log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``budgetlab serve learner --port 0`` as users start it; yields its URL and the process."""
    args = ["serve", "learner", "--port", "0"]
    with log.open("w") as sink:
        process = subprocess.Popen([BUDGETLAB, *args], env={**os.environ, **env}, stdout=sink,
                                   stderr=subprocess.STDOUT, cwd=log.parent)
        with running(process, args, log, time.monotonic() + 60) as url:
            yield url, process


def poll(fetch, done, timeout: float = 120.0):  # a run's first examples wait for the learner's worker processes
    deadline = time.monotonic() + timeout
    while not done(value := fetch()):
        assert time.monotonic() < deadline, f"gave up waiting; last: {value}"
        time.sleep(0.05)
    return value


def session_status(ledger: Path, session_id: str) -> str:
    with sqlite3.connect(ledger) as db:
        return db.execute("select status from sessions where id = ?", (session_id,)).fetchone()[0]


def restart_mid_run(database_url: str, tmp_path: Path, http: httpx.Client) -> None:
    ledger = tmp_path / "ledger.db"
    with oracle_server(f"sqlite:///{ledger}") as oracle:
        env = {"LEARNER_DATABASE_URL": database_url, "ORACLE_URL": oracle, "BUDGETLAB_LEARNER_MAX_RUNNING": "1",
               "BUDGETLAB_WORKERS": "1", "BUDGETLAB_LEARNER_ADMIN_TOKEN": ADMIN}
        with learner_process(env, tmp_path / "learner-1.log") as (url, process):
            token = http.post(f"{url}/v1/callers").json()["token"]
            auth = {"Authorization": f"Bearer {token}"}

            def get(run_id: str) -> dict:
                return http.get(f"{url}/v1/runs/{run_id}", headers=auth, timeout=60).json()

            done = http.post(f"{url}/v1/runs", json=RUN, headers=auth, timeout=60).json()["id"]
            poll(lambda: get(done), lambda info: info["status"] == "finished")
            long = {**RUN, "dataset_params": {**TINY, "n_train": 50_000}, "seed": 1}
            executing = http.post(f"{url}/v1/runs", json=long, headers=auth, timeout=60).json()["id"]
            queued = http.post(f"{url}/v1/runs", json={**long, "seed": 2}, headers=auth, timeout=60).json()["id"]
            poll(lambda: get(executing), lambda info: len(info["curve"]) >= 2)
            assert get(queued)["status"] == "queued"
            before = {i: get(i) for i in (done, executing, queued)}
            process.kill()  # SIGKILL: no shutdown code runs
            process.wait(timeout=10)

        with learner_process(env, tmp_path / "learner-2.log") as (url, _):
            listed = http.get(f"{url}/v1/runs", headers=auth, timeout=60).json()["runs"]
            assert [r["id"] for r in listed] == [queued, executing, done]
            status = {r["id"]: r["status"] for r in listed}
            assert status == {done: "finished", executing: "interrupted", queued: "interrupted"}
            admin = http.get(f"{url}/v1/runs", headers={"Authorization": f"Bearer {ADMIN}"}).json()["runs"]
            assert {r["id"] for r in admin} == set(status)

            finished = http.get(f"{url}/v1/runs/{done}", headers=auth, timeout=60).json()
            assert finished["curve"] == before[done]["curve"] and finished["result"] == before[done]["result"]
            assert http.get(f"{url}/v1/runs/{done}/audit", headers=auth, timeout=60).json()["compliant"]

            interrupted = http.get(f"{url}/v1/runs/{executing}", headers=auth, timeout=60).json()
            assert interrupted["message"] and interrupted["result"] is None
            # Every curve point the run reached before the kill was written as it was reached.
            assert len(interrupted["curve"]) >= len(before[executing]["curve"]) >= 2
            assert interrupted["curve"][: len(before[executing]["curve"])] == before[executing]["curve"]
            assert interrupted["progress_examples"] == interrupted["curve"][-1]["examples"] >= 40
            for run_id in (executing, queued):
                session = before[run_id]["session"]
                assert poll(lambda s=session: session_status(ledger, s), lambda s: s == "closed") == "closed"
            # A restarted learner still serves: a new run on the same database.
            again = http.post(f"{url}/v1/runs", json=RUN, headers=auth, timeout=60).json()["id"]
            assert poll(lambda: http.get(f"{url}/v1/runs/{again}", headers=auth, timeout=60).json(),
                        lambda info: info["status"] == "finished")["progress_examples"] == 60


def test_a_learner_killed_mid_run_lists_every_run_after_a_restart_on_sqlite(tmp_path: Path,
                                                                           http: httpx.Client) -> None:
    restart_mid_run(f"sqlite:///{tmp_path / 'runs.db'}", tmp_path, http)


@pytest.mark.postgres
def test_a_learner_killed_mid_run_lists_every_run_after_a_restart_on_postgresql(postgres_url: str, tmp_path: Path,
                                                                               http: httpx.Client) -> None:
    restart_mid_run(postgres_url, tmp_path, http)
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        tables = {r[0] for r in conn.execute("select tablename from pg_tables where schemaname = 'public'")}
        version = conn.execute("select version_num from learner_alembic_version").fetchone()
    assert {"learner_runs", "learner_curve_points", "learner_callers", "learner_sessions"} <= tables
    assert version == ("0002",)


def test_a_learner_stopped_with_sigterm_ends_its_runs_as_interrupted_and_closes_their_sessions(
        tmp_path: Path, http: httpx.Client) -> None:
    ledger = tmp_path / "ledger.db"
    with oracle_server(f"sqlite:///{ledger}") as oracle:
        env = {"LEARNER_DATABASE_URL": f"sqlite:///{tmp_path / 'runs.db'}", "ORACLE_URL": oracle,
               "BUDGETLAB_LEARNER_MAX_RUNNING": "1", "BUDGETLAB_WORKERS": "1"}
        with learner_process(env, tmp_path / "learner-1.log") as (url, process):
            auth = {"Authorization": f"Bearer {http.post(f'{url}/v1/callers').json()['token']}"}
            long = {**RUN, "dataset_params": {**TINY, "n_train": 50_000}}
            executing = http.post(f"{url}/v1/runs", json=long, headers=auth, timeout=60).json()
            queued = http.post(f"{url}/v1/runs", json={**long, "seed": 1}, headers=auth, timeout=60).json()
            poll(lambda: http.get(f"{url}/v1/runs/{executing['id']}", headers=auth, timeout=60).json(),
                 lambda info: info["progress_examples"] >= 20)
            process.terminate()
            assert process.wait(timeout=60) is not None  # a hang guard, not a speed target
        # The stopping learner itself closed the sessions and recorded the runs' end.
        assert session_status(ledger, executing["session"]) == session_status(ledger, queued["session"]) == "closed"
        with learner_process(env, tmp_path / "learner-2.log") as (url, _):
            listed = {r["id"]: r for r in http.get(f"{url}/v1/runs", headers=auth, timeout=60).json()["runs"]}
    assert {i: r["status"] for i, r in listed.items()} == {executing["id"]: "interrupted", queued["id"]: "interrupted"}
    assert listed[executing["id"]]["progress_examples"] >= 20 and listed[queued["id"]]["progress_examples"] == 0


def predictions(ledger: Path, session_id: str) -> int:
    with sqlite3.connect(ledger) as db:
        return db.execute("select predictions from sessions where id = ?", (session_id,)).fetchone()[0]


def held_sessions(runs: Path) -> dict[str, str | None]:
    """The learner's record of the oracle sessions it opened: id -> when it closed it (None: not yet)."""
    with sqlite3.connect(runs) as db:
        return dict(db.execute("select session_id, closed_at from learner_sessions").fetchall())


def test_a_learner_killed_while_scoring_closes_the_test_session_when_it_starts_again(tmp_path: Path,
                                                                                    http: httpx.Client) -> None:
    ledger, runs = tmp_path / "ledger.db", tmp_path / "runs.db"
    with oracle_server(f"sqlite:///{ledger}") as oracle:
        env = {"LEARNER_DATABASE_URL": f"sqlite:///{runs}", "ORACLE_URL": oracle, "BUDGETLAB_WORKERS": "1"}
        # A long test split: the scoring (K attributes, then a prediction, of each test example) takes a while.
        scored = {**RUN, "dataset_params": {**TINY, "n_test": 50_000}, "test_budget": 3}
        with learner_process(env, tmp_path / "learner-1.log") as (url, process):
            auth = {"Authorization": f"Bearer {http.post(f'{url}/v1/callers').json()['token']}"}
            run = http.post(f"{url}/v1/runs", json=scored, headers=auth, timeout=60).json()
            # The test session is recorded as the run opens it, before its first prediction.
            held = poll(lambda: held_sessions(runs), lambda h: len(h) == 2)
            (test,) = set(held) - {run["session"]}
            assert held == {run["session"]: None, test: None}
            poll(lambda: predictions(ledger, test), lambda n: n >= 1)
            process.kill()  # SIGKILL while it scores: nothing of the learner closes anything
            process.wait(timeout=10)
        assert session_status(ledger, test) == "open"
        with learner_process(env, tmp_path / "learner-2.log"):
            for session in (run["session"], test):
                assert poll(lambda s=session: session_status(ledger, s), lambda s: s == "closed") == "closed"
            poll(lambda: held_sessions(runs), lambda h: None not in h.values())


def executing(dask_worker: Any) -> int:
    """The tasks a Dask worker's threads execute now, those its scheduler let go of included."""
    return len(dask_worker.state.executing)


def test_a_learner_killed_on_a_cluster_that_outlives_it_stops_its_runs_there_and_closes_every_session(
        tmp_path: Path, http: httpx.Client, shared_cluster: str) -> None:
    """On a lab's cluster (``BUDGETLAB_SCHEDULER``; here this test process's, which the learner's SIGKILL does not
    reach) the runs of a killed learner went on executing, stepping in sessions no one would record; they stop once
    the scheduler lets go of them, open no test session, and the learner started again closes every session they
    held: none is left open on the oracle."""
    from distributed import Client  # here: the import costs seconds, and only this test needs it

    ledger, runs = tmp_path / "ledger.db", tmp_path / "runs.db"
    scored = {**RUN, "dataset_params": {**TINY, "n_train": 50_000}, "test_budget": 3}
    with oracle_server(f"sqlite:///{ledger}") as oracle, Client(shared_cluster, timeout="30s") as cluster:
        env = {"LEARNER_DATABASE_URL": f"sqlite:///{runs}", "ORACLE_URL": oracle}
        with learner_process(env, tmp_path / "learner-1.log") as (url, process):
            auth = {"Authorization": f"Bearer {http.post(f'{url}/v1/callers').json()['token']}"}
            started = [http.post(f"{url}/v1/runs", json={**scored, "seed": seed}, headers=auth, timeout=60).json()
                       for seed in (1, 2)]
            for run in started:  # both executing on the cluster's two workers
                poll(lambda r=run: http.get(f"{url}/v1/runs/{r['id']}", headers=auth, timeout=60).json(),
                     lambda info: info["progress_examples"] >= 20)
            process.kill()  # SIGKILL: the cluster stays up, its workers in the middle of the runs
            process.wait(timeout=10)
        # 50,000 examples each: left alone they would execute for many seconds more (a worker's thread runs a task
        # the scheduler let go of to its end: the worker counts it executing, though cancelled).
        poll(lambda: sum(cluster.run(executing).values()), lambda n: n == 0, timeout=60)
        assert all(session_status(ledger, run["session"]) == "open" for run in started)
        with learner_process(env, tmp_path / "learner-2.log"):
            poll(lambda: held_sessions(runs), lambda held: None not in held.values())
            counts = poll(lambda: http.get(f"{oracle}/v1/dashboard/sessions").json()["counts"],
                          lambda c: c["open"] == 0)
    assert set(held_sessions(runs)) == {run["session"] for run in started}, "no test session was opened"
    assert counts["closed"] == 2
