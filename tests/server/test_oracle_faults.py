"""Faults stay survivable: ``budgetlab serve oracle --workers 2`` is killed with SIGKILL (its master: no shutdown
code runs anywhere) several times while clients observe concurrently, and started again on the same port each
time, on SQLite and on PostgreSQL.

The master's workers exit within seconds of it (orphans would keep serving and hold the port), every value a
client was answered with a 200 is in the ledger once, with the value it was answered, and every audit is
compliant. A request whose answer was lost is sent again: a value it had already paid for comes back free and
unchanged, never recorded twice.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from budgetlab.service_client import tls_context
from client.services import announced_url, wait_healthy
from tests.helpers import BUDGETLAB
from tests.load import Client, assert_in_the_ledger_once

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)

KILLS = 3
CLIENTS = 4
D = 20
POOL = {"dataset": "sparse-gaussian", "order": "pool", "budget": {"per_example": 6},
        "dataset_params": {"d": D, "n_train": 5000, "n_test": 10, "s_plus": 2, "s_minus": 2}}
# How long the workers of a killed master may take to exit (each looks every 0.2 s, then has 3 s of grace).
ORPHAN_DEADLINE = 6.0


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (the master's workers and multiprocessing's resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def running_pid(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


Started = list[subprocess.Popen[bytes]]


@contextmanager
def stopped_at_the_end() -> Iterator[Started]:
    """A list to put the oracles started in; whichever still runs at the end is stopped."""
    started: Started = []
    try:
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def start(started: Started, database_url: str, logs: Path, port: int) -> str:
    """``budgetlab serve oracle --workers 2`` on ``port`` (0: any), as users start it; its URL once it is healthy."""
    log = logs / f"oracle-{len(started)}.log"
    args = ["serve", "oracle", "--workers", "2", "--port", str(port)]
    with log.open("w") as sink:
        process = subprocess.Popen([BUDGETLAB, *args], env={**os.environ, "DATABASE_URL": database_url},
                                   stdout=sink, stderr=subprocess.STDOUT, cwd=logs)
    started.append(process)
    deadline = time.monotonic() + 180  # two worker processes start; a loaded machine takes its time
    url = announced_url(args, process, log, deadline)
    wait_healthy(url, process, log, deadline)
    return url


def kill_and_restart(database_url: str, tmp_path: Path) -> None:
    with stopped_at_the_end() as started:
        url = start(started, database_url, tmp_path, 0)
        port = int(url.rsplit(":", 1)[1])
        created = [httpx.post(f"{url}/v1/sessions", json=POOL, timeout=30, verify=tls_context())
                   for _ in range(CLIENTS)]
        # Served as users start it: no header naming the server's software, and the Date header HTTP asks for.
        assert all("server" not in r.headers and "date" in r.headers for r in created)
        sessions = [r.json() for r in created]
        stop = threading.Event()
        clients = [Client(url, s, seed, stop, d=D) for seed, s in enumerate(sessions)]
        for client in clients:
            client.start()
        exits: list[float] = []
        workers: list[int] = []
        try:
            for _ in range(KILLS):
                before = sum(c.answers for c in clients)
                deadline = time.monotonic() + 10
                while sum(c.answers for c in clients) < before + 20 and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(random.Random(len(exits)).uniform(0.1, 0.4))
                master = started[-1]
                workers = children(master.pid)
                assert len(workers) >= 2, "the master has no workers"
                master.send_signal(signal.SIGKILL)
                master.wait(timeout=10)
                killed = time.monotonic()
                while any(running_pid(w) for w in workers) and time.monotonic() - killed < ORPHAN_DEADLINE:
                    time.sleep(0.05)
                exits.append(time.monotonic() - killed)
                assert not any(running_pid(w) for w in workers), f"workers outlived their master by {exits[-1]:.1f} s"
                assert start(started, database_url, tmp_path, port) == url  # the same port is free again
            before = sum(c.answers for c in clients)
            deadline = time.monotonic() + 10
            while sum(c.answers for c in clients) < before + 20 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            stop.set()
            for client in clients:
                client.join(timeout=15)
            for pid in workers:  # should the test fail, it leaves no orphan behind
                if running_pid(pid):
                    os.kill(pid, signal.SIGKILL)

        assert not [e for c in clients for e in c.errors], [e for c in clients for e in c.errors][:5]
        assert sum(c.answers for c in clients) >= 20 * (KILLS + 1), "the clients barely got answers"
        assert sum(c.lost for c in clients) > 0, "no request ever met a dead oracle: the kills missed the traffic"
        for client, session in zip(clients, sessions, strict=True):
            assert_in_the_ledger_once(url, session, client.acknowledged)
        assert max(exits) < ORPHAN_DEADLINE


def test_kill_9_of_the_master_under_load_on_sqlite(tmp_path: Path) -> None:
    kill_and_restart(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path)


@pytest.mark.postgres
def test_kill_9_of_the_master_under_load_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    kill_and_restart(postgres_url, tmp_path)
