"""A database that restarts, fills up or turns read-only: a JSON 503 (Retry-After) or 507, never a 500; nothing of
a refused request is charged; the first requests after the database is back succeed; /healthz (liveness) stays
200 while /readyz is 503 with the reason; an oracle refuses to start on a ledger it cannot write. Here the faults are
injected at the database layer (SQLite's page limit, query_only); ``test_ledger_disk.py`` fills and fails real file
systems.

The restart is of a throwaway PostgreSQL cluster of the test's own (initdb into a temporary folder, a free port),
never of the team's shared server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event

from budgetlab.oracle_client import OracleClient
from server.app import create_app
from server.config import Settings
from tests.helpers import caller, session_auth
from tests.load import Client, StreamClient, assert_in_the_ledger_once
from tests.servers import learner_app, serve_in_thread
from web.database_faults import database_refusal, is_disconnect, is_postgres_lock_refused, is_postgres_unique_violation
from web.errors import install_error_handlers

POOL = {"dataset": "sparse-gaussian", "order": "pool", "budget": {"per_example": 10},
        "dataset_params": {"d": 20, "n_train": 200, "n_test": 10, "s_plus": 2, "s_minus": 2}}


def _on_every_new_connection(app: Any, pragma: str) -> Any:
    """Have the oracle's connections run ``pragma`` from now on (its idle ones are closed, so all are new)."""
    db = app.state.sessions.db

    def run(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.execute(pragma)

    event.listen(db.engine, "connect", run)
    db._close_idle()
    return run


def _back_to_normal(app: Any, listener: Any) -> None:
    db = app.state.sessions.db
    event.remove(db.engine, "connect", listener)
    db._close_idle()


def _spent(http: httpx.Client, url: str, created: dict[str, Any]) -> float:
    info = http.get(f"{url}/v1/sessions/{created['id']}", headers=session_auth(created)).json()
    return info["spent"]["cost"]


def _observe(http: httpx.Client, url: str, created: dict[str, Any], example: int,
             attributes: list[int]) -> httpx.Response:
    return http.post(f"{url}/v1/sessions/{created['id']}/observe", headers=session_auth(created),
                     json={"example": example, "attributes": attributes})


@pytest.mark.process
def test_a_full_disk_is_a_507_that_charges_nothing_and_the_oracle_goes_on_once_there_is_room(
        sqlite_url: str, http: httpx.Client) -> None:
    app = create_app(Settings(database_url=sqlite_url, batch_process=False))
    with serve_in_thread(app) as url:
        created = http.post(f"{url}/v1/sessions", json=POOL).json()
        assert _observe(http, url, created, 0, [0, 1]).status_code == 200
        # SQLite's page limit is what a full disk is to it: SQLITE_FULL on the first page it cannot add (the
        # limit cannot go below the file's size: it stays at that size, and the next pages the ledger needs fail).
        full = _on_every_new_connection(app, "PRAGMA max_page_count = 1")
        paid = 0
        for example in range(1, 200):
            answer = _observe(http, url, created, example, list(range(10)))
            if answer.status_code != 200:
                break
            paid += 10
        refused = [answer, _observe(http, url, created, example, list(range(10)))]
        assert [r.status_code for r in refused] == [507, 507], [r.text for r in refused]
        assert {r.json()["error"] for r in refused} == {"storage_full"}
        assert all("no space left" in r.json()["detail"] for r in refused)
        assert all(r.headers["content-type"] == "application/json" for r in refused)
        # Readiness tells the truth: a write that changes nothing would be taken, a real one is not.
        ready = http.get(f"{url}/readyz")
        assert (ready.status_code, ready.json()["error"]) == (503, "storage_full"), ready.text
        _back_to_normal(app, full)
        assert _spent(http, url, created) == 2 + paid, "a refused request charged nothing"
        # Not ready until a write succeeds (the file system's room has not moved: the page limit was SQLite's).
        assert http.get(f"{url}/readyz").status_code == 503
        assert _observe(http, url, created, example, [0, 1]).status_code == 200
        assert http.get(f"{url}/readyz").status_code == 200
        assert _spent(http, url, created) == 2 + paid + 2
        audit = http.get(f"{url}/v1/sessions/{created['id']}/audit", headers=session_auth(created)).json()
        assert audit["compliant"], audit


@pytest.mark.process
def test_a_read_only_ledger_is_a_507_for_writes_reads_go_on_and_readiness_says_so(sqlite_url: str,
                                                                                  http: httpx.Client) -> None:
    app = create_app(Settings(database_url=sqlite_url, batch_process=False))
    with serve_in_thread(app) as url:
        created = http.post(f"{url}/v1/sessions", json=POOL).json()
        assert http.get(f"{url}/readyz").json() == {"status": "ready", "database": "ok"}
        read_only = _on_every_new_connection(app, "PRAGMA query_only = 1")
        refused = [_observe(http, url, created, 0, [0]), http.post(f"{url}/v1/sessions", json=POOL),
                   http.get(f"{url}/readyz")]
        assert [r.status_code for r in refused] == [507, 507, 503], [r.text for r in refused]
        assert {r.json()["error"] for r in refused} == {"read_only"}
        assert all(r.headers["content-type"] == "application/json" for r in refused)
        assert http.get(f"{url}/healthz").status_code == 200, "liveness is not readiness"
        assert _spent(http, url, created) == 0, "reads go on"
        _back_to_normal(app, read_only)
        assert http.get(f"{url}/readyz").status_code == 200
        assert _observe(http, url, created, 0, [0]).status_code == 200


def test_the_oracle_refuses_to_start_on_a_ledger_it_cannot_write(sqlite_url: str, tmp_path: Path) -> None:
    create_app(Settings(database_url=sqlite_url, batch_process=False))  # creates the ledger
    path = sqlite_url.removeprefix("sqlite:///")
    with pytest.raises(ValueError, match="cannot be written.*refuses writes"):
        create_app(Settings(database_url=f"sqlite:///file:{path}?mode=ro&uri=true", batch_process=False))


# --- PostgreSQL restarting ---------------------------------------------------------------------------------------


def _pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parts[-3]))
    if not found:
        pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql)")
    return found[-1].parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A PostgreSQL cluster of this test's own, which it may stop, start and restart at will."""

    def __init__(self, folder: Path) -> None:
        self.bin = _pg_bin()
        self.data = folder / "pgdata"
        self.port = _free_port()
        self.as_postgres = os.geteuid() == 0  # initdb refuses to run as root
        folder.chmod(0o755)
        if self.as_postgres:
            if shutil.which("runuser") is None:
                pytest.skip("running as root without runuser to start PostgreSQL as its own user")
            shutil.chown(folder, "postgres")
        self.log = folder / "log"
        self.options = f"-p {self.port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")
        self.start()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def ctl(self, action: str, *args: str) -> None:
        self.run("pg_ctl", "-D", str(self.data), action, *args)

    def start(self) -> None:
        # Its log to a file: the server keeps the output it is given open, and a pipe would never end.
        self.ctl("start", "-w", "-l", str(self.log), "-o", self.options)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    # Not under pytest's temporary folder: as root that is private to root, and the server runs as postgres.
    folder = Path(tempfile.mkdtemp(prefix="budgetlab-pg-"))
    try:
        pg = Cluster(folder)
        try:
            yield pg
        finally:
            pg.ctl("stop", "-m", "immediate")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_postgresql_down_is_a_503_with_retry_after_and_the_first_requests_after_it_is_back_succeed(
        cluster: Cluster, http: httpx.Client) -> None:
    with serve_in_thread(create_app(Settings(database_url=cluster.url, batch_process=False))) as url:
        created = http.post(f"{url}/v1/sessions", json=POOL).json()
        # Requests at once, so that several connections are idle when the server goes away.
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda e: _observe(http, url, created, e, [0]).status_code, range(40)))
        assert answers == [200] * 40
        cluster.ctl("stop", "-m", "immediate", "-w")
        cluster.start()
        # Every connection the oracle held died with the server; none of them may fail a request now.
        after = [_observe(http, url, created, e, [1]) for e in range(12)]
        assert [r.status_code for r in after] == [200] * 12, [r.text for r in after]
        cluster.ctl("stop", "-m", "immediate", "-w")
        down = [_observe(http, url, created, 10, [0]), http.post(f"{url}/v1/sessions", json=POOL),
                http.get(f"{url}/v1/sessions/{created['id']}", headers=session_auth(created)),
                http.get(f"{url}/readyz")]
        assert [r.status_code for r in down] == [503] * 4, [r.text for r in down]
        assert {r.json()["error"] for r in down} == {"database_unavailable"}
        assert all(r.headers["Retry-After"] == "1" for r in down)
        assert http.get(f"{url}/healthz").status_code == 200
        cluster.start()
        assert http.get(f"{url}/readyz").status_code == 200
        assert _observe(http, url, created, 10, [2]).status_code == 200
        assert _spent(http, url, created) == 40 + 12 + 1


def test_an_sdk_client_rides_through_a_postgresql_restart(cluster: Cluster) -> None:
    """The SDK sends a request refused 503 again after its Retry-After (nothing was charged), so a client that
    observes through an immediate restart of the database sees no error, and pays each value once."""
    with serve_in_thread(create_app(Settings(database_url=cluster.url, batch_process=False))) as url:
        with OracleClient(url, stream=False) as client:
            session = client.open_session(**POOL)
            values = [session.observe(e, [0, 1]).values for e in range(5)]
            cluster.ctl("stop", "-m", "immediate", "-w")
            # Back after 2 s, while the client is already sending (and being refused).
            back = threading.Timer(2.0, cluster.start)
            back.start()
            values += [session.observe(e, [0, 1]).values for e in range(5, 10)]
            back.join()
            assert len(values) == 10
            assert session.get().spent.cost == 20
            assert session.audit().compliant


RUN = {"dataset": "sparse-gaussian", "budget": {"per_example": 4}, "eval_every": 250, "test_budget": 3,
       "dataset_params": {"d": 20, "n_train": 500, "n_test": 100, "s_plus": 2, "s_minus": 2}}
RUNS = [{**RUN, "algorithm": "aerr", "seed": 1}, {**RUN, "algorithm": "aelr", "seed": 2}]
# The load's sessions: fresh examples for as long as the test lasts.
LOAD = {**POOL, "dataset_params": {**POOL["dataset_params"], "n_train": 100_000}}


def _runs_to_the_end(http: httpx.Client, url: str, auth: dict[str, str], ids: list[str]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 300
    while True:
        infos = [http.get(f"{url}/v1/runs/{i}", headers=auth, timeout=30).json() for i in ids]
        if all(info["status"] not in ("pending", "queued", "running") for info in infos):
            return infos
        assert time.monotonic() < deadline, [(i["status"], i["progress_examples"]) for i in infos]
        time.sleep(0.1)


def _held_sessions(app: Any) -> dict[str, Any]:
    """The learner's record of the oracle sessions it opened: id -> when it closed it (None: not yet)."""
    with app.state.runs.store.engine.connect() as conn:
        return dict(conn.exec_driver_sql("select session_id, closed_at from learner_sessions").all())


def test_clients_and_learner_runs_ride_through_a_postgresql_restart(cluster: Cluster, tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture,
                                                                    http: httpx.Client) -> None:
    with serve_in_thread(create_app(Settings(database_url=cluster.url, batch_process=False))) as url, \
            learner_app(f"sqlite:///{tmp_path / 'runs.db'}", url) as (learner, app):
        auth = caller(learner)

        def start_runs() -> list[str]:
            return [http.post(f"{learner}/v1/runs", json=run, headers=auth, timeout=30).json()["id"] for run in RUNS]

        quiet = _runs_to_the_end(http, learner, auth, start_runs())
        assert [info["status"] for info in quiet] == ["finished"] * 2, [info["message"] for info in quiet]

        sessions = [http.post(f"{url}/v1/sessions", json=LOAD).json() for _ in range(4)]
        stop = threading.Event()
        clients = [kind(url, session, seed, stop, pause=0.01) for seed, (kind, session)
                   in enumerate(zip([Client, Client, StreamClient, StreamClient], sessions, strict=True))]
        for client in clients:
            client.start()
        ids = start_runs()
        try:
            deadline = time.monotonic() + 120
            while True:  # the runs well under way, and every client answered
                infos = [http.get(f"{learner}/v1/runs/{i}", headers=auth).json() for i in ids]
                if all(i["progress_examples"] >= 50 for i in infos) and all(c.answers >= 10 for c in clients):
                    break
                assert time.monotonic() < deadline, [(i["status"], i["progress_examples"]) for i in infos]
                time.sleep(0.05)
            cluster.ctl("restart", "-m", "immediate", "-w", "-l", str(cluster.log), "-o", cluster.options)
            during = [http.get(f"{learner}/v1/runs/{i}", headers=auth).json() for i in ids]
            answered = sum(c.answers for c in clients)
            deadline = time.monotonic() + 60
            while sum(c.answers for c in clients) < answered + 40:
                assert time.monotonic() < deadline, "the clients got no answers after the restart"
                time.sleep(0.05)
        finally:
            stop.set()
            for client in clients:
                client.join(timeout=30)
        loud = _runs_to_the_end(http, learner, auth, ids)

        assert [i["status"] for i in during] == ["running"] * 2, "the restart came after the runs"
        assert all(i["progress_examples"] < i["max_examples"] for i in during)
        assert not [e for c in clients for e in c.errors], [e for c in clients for e in c.errors][:5]
        assert sum(c.refused for c in clients if isinstance(c, Client)) > 0, "no request met the restart"
        assert all(c.transport == "websocket" for c in clients if isinstance(c, StreamClient))
        for client, session in zip(clients, sessions, strict=True):
            assert_in_the_ledger_once(url, session, client.acknowledged)
        assert [i["status"] for i in loud] == ["finished"] * 2, [i["message"] for i in loud]
        # The restart is an expected fault: the oracle's database log says so in lines, not tracebacks at ERROR.
        assert not [r.getMessage() for r in caplog.records if r.name.startswith("sqlalchemy") and
                    (r.levelno >= logging.ERROR or r.exc_info)]
        for a, b in zip(quiet, loud, strict=True):
            assert a["result"]["weights"] == b["result"]["weights"] and a["result"]["bias"] == b["result"]["bias"]
            scores = [{k: v for k, v in r["result"]["test_budget"].items() if k != "session"} for r in (a, b)]
            assert scores[0] == scores[1]
            assert a["curve"] == b["curve"]
        # Every session the learner opened (training and test sessions, 8 in all) ends closed.
        deadline = time.monotonic() + 60
        while None in (held := _held_sessions(app)).values() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(held) == 8 and None not in held.values(), held


def test_a_pooled_connection_that_cannot_be_reset_is_one_warning_line(caplog: pytest.LogCaptureFixture) -> None:
    """SQLAlchemy's pool logs it at ERROR with a traceback; the oracle's filter (server.db) makes it one line."""
    pool_log = logging.getLogger("sqlalchemy.pool.impl.QueuePool")
    try:
        raise OSError("consuming input failed: server closed the connection unexpectedly\n\tThis probably means ...")
    except OSError:
        with caplog.at_level(logging.WARNING, logger=pool_log.name):
            pool_log.error("Exception during reset or similar", exc_info=True)
    (record,) = caplog.records
    assert (record.levelname, record.exc_info) == ("WARNING", None)
    assert record.getMessage() == ("a pooled database connection could not be reset and was discarded: consuming input "
                                   "failed: server closed the connection unexpectedly")


@pytest.mark.process
def test_both_services_on_sqlite_start_without_psycopg_or_sqlalchemys_orm(tmp_path: Path) -> None:
    # Importing psycopg only to name its exceptions cost every oracle and learner process 0.1 CPU-s at its start,
    # on SQLite where none of them can be raised (web.database_faults.psycopg_loaded); SQLAlchemy's ORM, imported for
    # the tables' declarative classes alone (both stores work through Core), 0.08 CPU-s more.
    script = f"""
import json, sys
from learner.service.app import create_app as learner_app
from learner.service.settings import LearnerSettings
from server.app import create_app
from server.config import Settings
create_app(Settings(database_url="sqlite:///{tmp_path / 'ledger.db'}", batch_process=False))
learner_app(LearnerSettings(database_url="sqlite:///{tmp_path / 'runs.db'}"))
print(json.dumps(sorted(m for m in sys.modules
                        if m.partition(".")[0] in ("psycopg", "psycopg_binary") or m.startswith("sqlalchemy.orm"))))
"""
    env = {**os.environ, "BUDGETLAB_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == []


def test_psycopgs_errors_are_the_refusals_they_were_once_it_is_loaded() -> None:
    # The same look the PostgreSQL fault tests make through a real server, here without one: each psycopg error the
    # services tell apart, and an app's answer to one that reaches it unconverted.
    import psycopg

    refused = {name: database_refusal(exc, "the oracle") for name, exc in (
        ("disk full", psycopg.errors.DiskFull("could not extend file")),
        ("read only", psycopg.errors.ReadOnlySqlTransaction("cannot execute UPDATE in a read-only transaction")),
        ("down", psycopg.OperationalError("connection refused")),
        ("lost", psycopg.InterfaceError("the connection is lost")),
        ("bug", psycopg.errors.UndefinedTable("relation does not exist")))}
    assert {name: None if r is None else (r.status, r.error) for name, r in refused.items()} == {
        "disk full": (507, "storage_full"), "read only": (507, "read_only"), "down": (503, "database_unavailable"),
        "lost": (503, "database_unavailable"), "bug": None}
    assert is_disconnect(psycopg.OperationalError("server closed the connection unexpectedly"))
    assert not is_disconnect(psycopg.errors.DiskFull("could not extend file"))
    assert not is_disconnect(psycopg.errors.LockNotAvailable("canceling statement due to lock timeout"))
    assert is_postgres_lock_refused(psycopg.errors.LockNotAvailable("canceling statement due to lock timeout"))
    assert not is_postgres_lock_refused(psycopg.errors.DiskFull("could not extend file"))
    assert is_postgres_unique_violation(psycopg.errors.UniqueViolation("duplicate key value"))
    assert not is_postgres_unique_violation(sqlite3.IntegrityError("UNIQUE constraint failed"))

    app = FastAPI()
    install_error_handlers(app)
    answer = asyncio.run(app.exception_handlers[psycopg.Error](None, psycopg.OperationalError("connection refused")))
    assert (answer.status_code, json.loads(answer.body)["error"], answer.headers["Retry-After"]) == (
        503, "database_unavailable", "1")
