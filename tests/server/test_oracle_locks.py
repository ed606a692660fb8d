"""No head-of-line blocking: a write that cannot get its lock in time is a 503 with Retry-After, never a frozen
worker, and reads never need the write lock. The lock is held from outside the oracle, as another worker or
process would hold it, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from budgetlab.contract.calls import ObserveBatchRequest, ObserveRequest
from budgetlab.contract.sessions import SessionCreate
from budgetlab.errors import SessionBusy
from budgetlab.oracle_client import OracleClient
from budgetlab.service_client import tls_context
from server.app import create_app
from server.checkpoint import WRITER_BACKSTOP_PAGES
from server.config import Settings
from server.db import make_engine, upgrade
from server.sessions import SessionService
from tests.servers import serve_in_thread

LOCK_TIMEOUT = 0.5
PARAMS = {"d": 8, "n_train": 30, "n_test": 10, "s_plus": 2, "s_minus": 2}


def session_with_one_value(http: httpx.Client) -> tuple[str, dict[str, str]]:
    """A pool session (3 attributes per example) that has paid for one value; its id and auth header."""
    created = http.post("/v1/sessions", json={"dataset": "sparse-gaussian", "dataset_params": PARAMS,
                                               "order": "pool", "budget": {"per_example": 3}}).json()
    sid, headers = created["id"], {"Authorization": f"Bearer {created['token']}"}
    assert http.post(f"/v1/sessions/{sid}/observe", headers=headers,
                     json={"example": 0, "attributes": [1]}).status_code == 200
    return sid, headers


def hold_sqlite_lock(url: str) -> sqlite3.Connection:
    conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def hold_postgres_row(url: str, session_id: str) -> psycopg.Connection:
    conn = psycopg.connect(url)
    conn.execute("SELECT id FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
    return conn


@pytest.mark.process
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_held_lock_gives_503_busy_while_reads_and_health_answer(backend: str,
                                                                  request: pytest.FixtureRequest) -> None:
    database_url = request.getfixturevalue(f"{backend}_url")
    # Long enough that the reads are answered while the write still waits, however loaded the machine.
    lock_timeout = 3.0
    app = create_app(Settings(database_url=database_url, admin_token="admin", lock_timeout=lock_timeout))
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30, verify=tls_context()) as http:
        sid, headers = session_with_one_value(http)

        holder = hold_sqlite_lock(database_url) if backend == "sqlite" else hold_postgres_row(database_url, sid)
        try:
            # While a write waits for the lock on the thread pool, the worker keeps answering everything else.
            waiting: dict[str, httpx.Response] = {}
            writer = threading.Thread(target=lambda: waiting.update(r=http.post(
                f"/v1/sessions/{sid}/observe", headers=headers, json={"example": 1, "attributes": [2]})))
            writer.start()
            time.sleep(0.1)
            assert http.get("/healthz").status_code == 200
            info = http.get(f"/v1/sessions/{sid}", headers=headers)
            audit = http.get(f"/v1/sessions/{sid}/audit", headers=headers)
            page = http.get(f"/v1/sessions/{sid}/ledger", headers=headers)
            # The write is answered only when the lock is freed or its timeout passes: not yet, if reads did not
            # wait behind it.
            answered_while_locked = writer.is_alive()
            writer.join(timeout=30)
            busy = waiting["r"]
        finally:
            holder.rollback()
            holder.close()

        assert info.status_code == audit.status_code == page.status_code == 200
        assert answered_while_locked, "reads waited for the write lock"
        assert busy.status_code == 503, busy.text
        assert busy.json()["error"] == "busy" and int(busy.headers["Retry-After"]) >= 1
        # The refused write charged and recorded nothing; once the lock is free, the same request succeeds.
        assert info.json()["spent"]["attributes"] == 1 and audit.json()["compliant"]
        assert http.get(f"/v1/sessions/{sid}", headers=headers).json()["spent"]["attributes"] == 1
        again = http.post(f"/v1/sessions/{sid}/observe", headers=headers, json={"example": 1, "attributes": [2]})
        assert again.status_code == 200 and again.json()["charged"] == 1.0
        assert http.get(f"/v1/sessions/{sid}/audit", headers=headers).json()["compliant"]


@pytest.mark.process
def test_a_session_whose_dataset_was_removed_is_refused_not_a_500(sqlite_url: str, tmp_path) -> None:
    """After a restart, a session on a removed user dataset gets a 409 JSON error and nothing is charged."""
    csv = tmp_path / "tiny.csv"
    csv.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(20)))
    admin = {"Authorization": "Bearer admin"}
    settings = Settings(database_url=sqlite_url, admin_token="admin")
    with serve_in_thread(create_app(settings)) as url, httpx.Client(base_url=url, verify=tls_context()) as http:
        assert http.post("/v1/datasets", headers=admin, json={"path": str(csv), "name": "tiny",
                                                              "target": "y"}).status_code == 201
        created = http.post("/v1/sessions", json={"dataset": "tiny", "order": "pool"}).json()
        assert http.delete("/v1/datasets/tiny", headers=admin).status_code == 204
    headers = {"Authorization": f"Bearer {created['token']}"}
    # A restarted oracle:
    with serve_in_thread(create_app(settings)) as url, httpx.Client(base_url=url, verify=tls_context()) as http:
        refused = http.post(f"/v1/sessions/{created['id']}/observe", headers=headers,
                            json={"example": 0, "attributes": [0]})
        assert refused.status_code == 409 and refused.json()["error"] == "dataset_unavailable"
        assert http.get(f"/v1/sessions/{created['id']}/audit", headers=headers).json()["compliant"]
        # Closing idle sessions goes on past the one that cannot be served.
        other = http.post("/v1/sessions", json={"dataset": "sparse-gaussian", "dataset_params": PARAMS}).json()["id"]
        closed = http.post("/v1/admin/close-idle?idle_seconds=0", headers=admin)
        assert closed.status_code == 200 and closed.json()["closed"] == [other]


@pytest.mark.process
def test_the_sdk_sends_a_busy_request_again_and_it_is_charged_once(sqlite_url: str) -> None:
    """A request refused busy did nothing, so the SDK sends it again after Retry-After (``busy_retries`` times);
    with no retries left it raises ``SessionBusy``. The impatient client is on plain HTTP, the other on the stream:
    both transports raise the same refusal."""
    app = create_app(Settings(database_url=sqlite_url, lock_timeout=LOCK_TIMEOUT))
    with serve_in_thread(app) as url, OracleClient(url) as client, \
            OracleClient(url, stream=False, busy_retries=0) as impatient:
        s = client.open_session("sparse-gaussian", dataset_params=PARAMS, budget={"per_example": 3}, seed=1)
        s.step([0])
        hurried = impatient.session(s.id, s.token)
        holder = hold_sqlite_lock(sqlite_url)
        with pytest.raises(SessionBusy):
            hurried.step([1])
        release = threading.Timer(1.2, holder.rollback)
        release.start()
        try:
            answer = s.step([1, 2])  # busy at first (lock timeout 0.5 s), then answered once the lock is free
        finally:
            release.join()
            holder.close()
        assert answer.example == 1 and answer.charged == 2.0
        info = s.get()
        assert (info.spent.examples_issued, info.spent.attributes) == (2, 3) and s.audit().compliant


def test_the_log_is_checkpointed_by_a_thread_of_its_own_not_inside_a_write(tmp_path: Path) -> None:
    """SQLite copies the write-ahead log back into the database in the oracle's checkpoint thread, soon after the
    writes: a writer's own commit would do it only past the backstop, holding up every request queued behind it."""

    path = tmp_path / "ledger.db"
    upgrade(f"sqlite:///{path}")
    service = SessionService(make_engine(f"sqlite:///{path}"))
    try:
        created = service.create(SessionCreate(dataset="sparse-gaussian", order="pool",
                                               dataset_params={"d": 200, "n_train": 2000, "n_test": 10}))
        with service.db.write() as cursor:
            assert cursor.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == WRITER_BACKSTOP_PAGES
        before = path.stat().st_size  # the session's few rows: far below the 5 MB looked for
        for first in range(0, 2000, 100):  # 400,000 values: about 6 MB of log, past SQLite's default 1,000 pages
            items = [ObserveRequest(example=e, attributes=list(range(200))) for e in range(first, first + 100)]
            service.batches.observe_json(created.id, created.token, items,
                                       ObserveBatchRequest(items=items).model_dump_json().encode())
        deadline = time.monotonic() + 10
        while path.stat().st_size < before + (5 << 20) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert path.stat().st_size >= before + (5 << 20), "the values never reached the database file"
    finally:
        service.close_connections()


@pytest.mark.process
@pytest.mark.parametrize("freed_in_time", [True, False])
def test_a_small_write_behind_another_write_of_the_worker_waits_on_the_loop(sqlite_url: str,
                                                                          freed_in_time: bool) -> None:
    """While another write of the same worker holds the gate (as a big batch does), a small observe waits for it
    without holding up the worker: it is answered once the gate is freed, or 503 busy if that does not happen
    within the lock timeout, having charged nothing."""
    lock_timeout = 1.0
    app = create_app(Settings(database_url=sqlite_url, lock_timeout=lock_timeout))
    service: SessionService = app.state.sessions
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30, verify=tls_context()) as http:
        sid, headers = session_with_one_value(http)
        holding, release = threading.Event(), threading.Event()

        def hold_the_gate() -> None:
            with service.db.write():
                holding.set()
                release.wait(30)

        holder = threading.Thread(target=hold_the_gate)
        holder.start()
        assert holding.wait(10)
        waiting: dict[str, httpx.Response] = {}
        writer = threading.Thread(target=lambda: waiting.update(r=http.post(
            f"/v1/sessions/{sid}/observe", headers=headers, json={"example": 1, "attributes": [2]})))
        writer.start()
        time.sleep(0.05)
        # Answered while the gate is still held (it is freed only after this), well within the lock timeout: a
        # write waiting for the gate on the event loop would hold every request of the worker up that long.
        with httpx.Client(base_url=url, timeout=lock_timeout / 2, verify=tls_context()) as other:
            assert other.get("/healthz").status_code == 200
        if freed_in_time:
            release.set()
        writer.join(timeout=30)
        release.set()
        holder.join(timeout=30)
        answered = waiting["r"]
        spent = http.get(f"/v1/sessions/{sid}", headers=headers).json()["spent"]["attributes"]
        if freed_in_time:
            assert answered.status_code == 200, answered.text
            assert spent == 2
        else:
            assert answered.status_code == 503 and answered.json()["error"] == "busy", answered.text
            assert spent == 1
        assert http.get(f"/v1/sessions/{sid}/audit", headers=headers).json()["compliant"]
