"""A database that restarts, fills up or turns read-only: a JSON 503 (Retry-After) or 507, never a 500; nothing of
a refused request is charged; the first requests after the database is back succeed; /healthz (liveness) stays
200 while /readyz reports the database; an oracle refuses to start on a ledger it cannot write.

The restart is of a throwaway PostgreSQL cluster of the test's own (initdb into a temporary folder, a free port),
never of the team's shared server.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from budgetlab.oracle_client import OracleClient
from server.app import create_app
from server.config import Settings
from tests.helpers import session_auth
from tests.servers import serve_in_thread

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


def _spent(url: str, created: dict[str, Any]) -> float:
    info = httpx.get(f"{url}/v1/sessions/{created['id']}", headers=session_auth(created)).json()
    return info["spent"]["cost"]


def _observe(url: str, created: dict[str, Any], example: int, attributes: list[int]) -> httpx.Response:
    return httpx.post(f"{url}/v1/sessions/{created['id']}/observe", headers=session_auth(created),
                      json={"example": example, "attributes": attributes})


def test_a_full_disk_is_a_507_that_charges_nothing_and_the_oracle_goes_on_once_there_is_room(sqlite_url: str) -> None:
    app = create_app(Settings(database_url=sqlite_url, batch_process=False))
    with serve_in_thread(app) as url:
        created = httpx.post(f"{url}/v1/sessions", json=POOL).json()
        assert _observe(url, created, 0, [0, 1]).status_code == 200
        # SQLite's page limit is what a full disk is to it: SQLITE_FULL on the first page it cannot add (the
        # limit cannot go below the file's size: it stays at that size, and the next pages the ledger needs fail).
        full = _on_every_new_connection(app, "PRAGMA max_page_count = 1")
        paid = 0
        for example in range(1, 200):
            answer = _observe(url, created, example, list(range(10)))
            if answer.status_code != 200:
                break
            paid += 10
        refused = [answer, _observe(url, created, example, list(range(10)))]
        assert [r.status_code for r in refused] == [507, 507], [r.text for r in refused]
        assert {r.json()["error"] for r in refused} == {"storage_full"}
        assert all("no space left" in r.json()["detail"] for r in refused)
        assert all(r.headers["content-type"] == "application/json" for r in refused)
        _back_to_normal(app, full)
        assert _spent(url, created) == 2 + paid, "a refused request charged nothing"
        assert _observe(url, created, example, [0, 1]).status_code == 200
        assert _spent(url, created) == 2 + paid + 2
        audit = httpx.get(f"{url}/v1/sessions/{created['id']}/audit", headers=session_auth(created)).json()
        assert audit["compliant"], audit


def test_a_read_only_ledger_is_a_507_for_writes_reads_go_on_and_readiness_says_so(sqlite_url: str) -> None:
    app = create_app(Settings(database_url=sqlite_url, batch_process=False))
    with serve_in_thread(app) as url:
        created = httpx.post(f"{url}/v1/sessions", json=POOL).json()
        assert httpx.get(f"{url}/readyz").json() == {"status": "ready", "database": "ok"}
        read_only = _on_every_new_connection(app, "PRAGMA query_only = 1")
        refused = [_observe(url, created, 0, [0]), httpx.post(f"{url}/v1/sessions", json=POOL),
                   httpx.get(f"{url}/readyz")]
        assert [r.status_code for r in refused] == [507, 507, 507], [r.text for r in refused]
        assert {r.json()["error"] for r in refused} == {"read_only"}
        assert all(r.headers["content-type"] == "application/json" for r in refused)
        assert httpx.get(f"{url}/healthz").status_code == 200, "liveness is not readiness"
        assert _spent(url, created) == 0, "reads go on"
        _back_to_normal(app, read_only)
        assert httpx.get(f"{url}/readyz").status_code == 200
        assert _observe(url, created, 0, [0]).status_code == 200


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
        cluster: Cluster) -> None:
    with serve_in_thread(create_app(Settings(database_url=cluster.url, batch_process=False))) as url:
        created = httpx.post(f"{url}/v1/sessions", json=POOL).json()
        # Requests at once, so that several connections are idle when the server goes away.
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda e: _observe(url, created, e, [0]).status_code, range(40)))
        assert answers == [200] * 40
        cluster.ctl("stop", "-m", "immediate", "-w")
        cluster.start()
        # Every connection the oracle held died with the server; none of them may fail a request now.
        after = [_observe(url, created, e, [1]) for e in range(12)]
        assert [r.status_code for r in after] == [200] * 12, [r.text for r in after]
        cluster.ctl("stop", "-m", "immediate", "-w")
        down = [_observe(url, created, 10, [0]), httpx.post(f"{url}/v1/sessions", json=POOL),
                httpx.get(f"{url}/v1/sessions/{created['id']}", headers=session_auth(created)),
                httpx.get(f"{url}/readyz")]
        assert [r.status_code for r in down] == [503] * 4, [r.text for r in down]
        assert {r.json()["error"] for r in down} == {"database_unavailable"}
        assert all(r.headers["Retry-After"] == "1" for r in down)
        assert httpx.get(f"{url}/healthz").status_code == 200
        cluster.start()
        assert httpx.get(f"{url}/readyz").status_code == 200
        assert _observe(url, created, 10, [2]).status_code == 200
        assert _spent(url, created) == 40 + 12 + 1


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
