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
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from client.services import announced_url, wait_healthy
from tests.helpers import BUDGETLAB

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


class Client(threading.Thread):
    """Observes fresh examples of its own session, one request at a time, sending a request again until it gets an
    answer; keeps every value it was answered with a 200."""

    def __init__(self, url: str, session: dict, seed: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.session, self.stop = url, session, stop
        self.rng = random.Random(seed)
        self.acknowledged: dict[tuple[int, int], float] = {}
        self.answers = 0
        self.lost = 0  # requests with no answer (the oracle was down, or died mid-request)
        self.errors: list[str] = []

    def request(self, example: int) -> tuple[str, dict]:
        attributes = self.rng.sample(range(D), 3)
        if self.rng.random() < 0.3:  # now and then two examples in one all-or-nothing batch
            return "observe/batch", {"items": [{"example": example, "attributes": attributes},
                                               {"example": example + 1, "attributes": attributes[:2]}]}
        return "observe", {"example": example, "attributes": attributes}

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.session['token']}"}
        example = 0
        with httpx.Client(base_url=self.url, timeout=5) as http:
            while not self.stop.is_set():
                path, body = self.request(example)
                while not self.stop.is_set():
                    try:
                        answer = http.post(f"/v1/sessions/{self.session['id']}/{path}", json=body, headers=headers)
                    except httpx.TransportError:
                        self.lost += 1
                        time.sleep(0.05)
                        continue
                    if answer.status_code == 503:  # busy: nothing was done, send it again
                        continue
                    if answer.status_code != 200:
                        self.errors.append(f"{answer.status_code} {answer.text[:200]}")
                        return
                    self.answers += 1
                    items = answer.json()["items"] if path == "observe/batch" else [answer.json()]
                    for item in items:
                        for attribute, value in zip(item["attributes"], item["values"], strict=True):
                            seen = self.acknowledged.setdefault((item["example"], attribute), value)
                            if seen != value:
                                self.errors.append(f"cell {item['example']},{attribute} answered {seen}, then {value}")
                    break
                example += 2


def ledger_cells(url: str, session: dict) -> list[tuple[int, int, float]]:
    headers = {"Authorization": f"Bearer {session['token']}"}
    cells, after = [], -1
    while True:
        page = httpx.get(f"{url}/v1/sessions/{session['id']}/ledger", params={"after": after, "limit": 10_000},
                         headers=headers, timeout=30).json()
        cells += [(r["example"], r["attribute"], r["value"]) for r in page["rows"] if r["kind"] == "observe"]
        if page["next_after"] is None:
            return cells
        after = page["next_after"]


def kill_and_restart(database_url: str, tmp_path: Path) -> None:
    with stopped_at_the_end() as started:
        url = start(started, database_url, tmp_path, 0)
        port = int(url.rsplit(":", 1)[1])
        sessions = [httpx.post(f"{url}/v1/sessions", json=POOL, timeout=30).json() for _ in range(CLIENTS)]
        stop = threading.Event()
        clients = [Client(url, s, seed, stop) for seed, s in enumerate(sessions)]
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
            cells = ledger_cells(url, session)
            stored = {(example, attribute): value for example, attribute, value in cells}
            twice = [cell for cell, n in Counter((e, a) for e, a, _ in cells).items() if n > 1]
            assert not twice, f"cells recorded twice: {twice[:5]}"
            missing = [cell for cell in client.acknowledged if cell not in stored]
            assert not missing, f"acknowledged values missing from the ledger: {missing[:5]}"
            changed = [cell for cell, value in client.acknowledged.items() if stored[cell] != value]
            assert not changed, f"acknowledged values changed in the ledger: {changed[:5]}"
            audit = httpx.get(f"{url}/v1/sessions/{session['id']}/audit",
                              headers={"Authorization": f"Bearer {session['token']}"}, timeout=30).json()
            assert audit["compliant"], audit["reasons"]
            assert audit["attributes_recomputed"] == len(cells)
        assert max(exits) < ORPHAN_DEADLINE


def test_kill_9_of_the_master_under_load_on_sqlite(tmp_path: Path) -> None:
    kill_and_restart(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path)


@pytest.mark.postgres
def test_kill_9_of_the_master_under_load_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    kill_and_restart(postgres_url, tmp_path)
