"""The SQLite ledger's write-ahead log, kept small by the oracle's checkpoint thread (``server.checkpoint``): a log
grown past its limit is started over once no reader is on it (a reader that stays makes the thread wait, not
fail), the oracle's store leaves an empty log when it closes, and a checkpoint that keeps failing is one log line per
change of state, not a traceback per attempt. The bound under 16 clients is measured by
``benchmarks/health_bench.py``."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from budgetlab.contract.sessions import SessionCreate
from server import checkpoint
from server.checkpoint import HARD_LIMIT_BYTES, LIMIT_BYTES, Checkpointer
from server.db import make_engine, upgrade
from server.session_rows import counter_values
from server.sessions import SessionService
from server.steps import now
from server.store import Database
from tests.helpers import TINY

LIMIT = 256 << 10


def _connect(path: Path) -> Callable[[], sqlite3.Connection]:
    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA journal_size_limit={LIMIT}")
        conn.execute("PRAGMA wal_autocheckpoint=0")  # the thread alone copies the log back
        return conn
    return connect


@contextmanager
def _no_writers_to_hold() -> Iterator[bool]:
    yield True


def _wait_for(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30  # a hang guard, not a speed target
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_log_past_its_limit_is_started_over_once_its_readers_leave(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    wal = tmp_path / "ledger.db-wal"
    writer = _connect(path)()
    writer.execute("CREATE TABLE rows (value BLOB)")
    checkpointer = Checkpointer(_connect(path), path, _no_writers_to_hold, period=0.1, limit=LIMIT)
    try:
        reader = _connect(path)()
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM rows").fetchall()  # a snapshot that keeps the log's start in use
        for _ in range(100):  # 100 commits of a 16 KiB row: about 2 MB of log, eight times the limit
            writer.execute("INSERT INTO rows VALUES (randomblob(16384))")
            checkpointer.wrote()
        peak = wal.stat().st_size
        assert peak > 4 * LIMIT
        time.sleep(0.5)  # rounds of the thread while the reader stays: the log cannot start over yet
        writer.execute("INSERT INTO rows VALUES (randomblob(16384))")
        assert wal.stat().st_size >= peak, "the log was started over under a reader"
        reader.execute("COMMIT")
        checkpointer.wrote()
        # The next writer starts the log over and truncates its file to the limit.
        def small() -> bool:
            writer.execute("INSERT INTO rows VALUES (randomblob(16384))")
            checkpointer.wrote()
            return wal.stat().st_size <= LIMIT
        _wait_for(small, "the log was never started over")
        assert writer.execute("SELECT count(*) FROM rows").fetchone()[0] >= 102
    finally:
        checkpointer.close()
        writer.close()


def test_the_store_leaves_an_empty_log_when_it_closes(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    upgrade(f"sqlite:///{path}")
    db = Database(make_engine(f"sqlite:///{path}"), 5.0)
    with db.write() as cursor:
        cursor.execute("CREATE TABLE scratch (value BLOB)")
    for _ in range(20):
        with db.write() as cursor:
            cursor.execute("INSERT INTO scratch VALUES (randomblob(65536))")
    assert (tmp_path / "ledger.db-wal").stat().st_size > 0
    db.close()
    wal = tmp_path / "ledger.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0


def test_a_writer_starts_the_log_over_itself_when_the_thread_falls_behind(tmp_path: Path) -> None:
    """The thread can fall behind (a checkpoint's fsync stalled 0.4 s under a load of 13 on 2 cores while 16 clients
    wrote 15 MB of log a second): past the hard limit the next writer, holding the gate, starts the log over before
    it writes, so the file never grows past that limit and one write's pages."""
    path = tmp_path / "ledger.db"
    upgrade(f"sqlite:///{path}")
    db = Database(make_engine(f"sqlite:///{path}"), 5.0)
    wal = tmp_path / "ledger.db-wal"
    try:
        assert db._checkpointer is not None
        db._checkpointer.close()  # a thread that never comes back: only the writers are left to bound the log
        with db.write() as cursor:
            cursor.execute("CREATE TABLE scratch (value BLOB)")
        sizes = []
        for _ in range(64):  # 64 writes of 256 KiB: 16 MiB of log, more than twice the hard limit
            with db.write() as cursor:
                cursor.execute("INSERT INTO scratch VALUES (randomblob(262144))")
            sizes.append(wal.stat().st_size)
        assert max(sizes) <= HARD_LIMIT_BYTES + (512 << 10), sizes
        assert min(sizes[8:]) <= LIMIT_BYTES + (512 << 10), "the log was never started over"
        with db.read() as cursor:
            assert cursor.execute("SELECT count(*) FROM scratch").fetchone()[0] == 64
    finally:
        db.close()


def test_a_failing_checkpoint_is_one_line_per_change_of_state(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "ledger.db"
    _connect(path)().close()
    failing = threading.Event()
    failing.set()
    rounds = 0

    def connect() -> sqlite3.Connection:
        nonlocal rounds
        rounds += 1
        if failing.is_set():
            raise sqlite3.OperationalError("unable to open database file")
        return _connect(path)()

    def more_rounds_than(before: int) -> Callable[[], bool]:
        return lambda: rounds > before

    with caplog.at_level(logging.INFO, logger="server.checkpoint"):
        checkpointer = Checkpointer(connect, path, _no_writers_to_hold, period=0.01, limit=LIMIT)
        try:
            for _ in range(5):  # five rounds, each failing the same way
                before = rounds
                checkpointer.wrote()
                _wait_for(more_rounds_than(before), "no checkpoint round")
            failing.clear()
            before = rounds
            checkpointer.wrote()
            _wait_for(lambda: any("succeed again" in r.getMessage() for r in caplog.records), "no recovery line")
        finally:
            checkpointer.close()
    lines = [r for r in caplog.records if r.name == "server.checkpoint"]
    assert [r.getMessage() for r in lines] == [
        "WAL checkpoint of the ledger failed: OperationalError: unable to open database file (logged again when "
        "this changes)", "WAL checkpoints of the ledger succeed again"]
    assert all(r.exc_info is None for r in lines)


def test_writers_leave_the_log_to_the_thread_while_it_looks_at_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   ) -> None:
    """A stat of the log at every write cost a small step 5-20 us: while the thread has lately found the log under the
    hard limit, the writers do not look at it; once its look is stale (the thread stalled, or gone), each does."""
    monkeypatch.setattr(checkpoint, "STALE", 3600.0)  # the thread's look does not go stale during the test
    path = tmp_path / "ledger.db"
    upgrade(f"sqlite:///{path}")
    wal = f"{path}-wal"
    looks: list[str] = []
    stat = os.stat

    def counted(target: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(target) == wal:
            looks.append(threading.current_thread().name)
        return stat(target, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counted)
    db = Database(make_engine(f"sqlite:///{path}"), 5.0)
    try:
        with db.write() as cursor:
            cursor.execute("CREATE TABLE scratch (value BLOB)")
        deadline = time.monotonic() + 30
        while "sqlite-checkpoint" not in looks:  # the thread, woken by the write, looks within its POLL
            assert time.monotonic() < deadline, "the checkpoint thread never looked at the log"
            time.sleep(0.01)
        writers = len([name for name in looks if name != "sqlite-checkpoint"])
        for _ in range(20):
            with db.write() as cursor:
                cursor.execute("INSERT INTO scratch VALUES (randomblob(1024))")
        assert len([name for name in looks if name != "sqlite-checkpoint"]) == writers, looks

        monkeypatch.setattr(checkpoint, "STALE", 0.0)  # as if the thread had not looked for a while
        for _ in range(20):
            with db.write() as cursor:
                cursor.execute("INSERT INTO scratch VALUES (randomblob(1024))")
        assert len([name for name in looks if name != "sqlite-checkpoint"]) == writers + 20, looks
    finally:
        db.close()


def test_a_step_that_leaves_the_status_alone_writes_a_page_less_to_the_log(tmp_path: Path) -> None:
    """SQLite rewrites the entry of an index whose column an UPDATE sets, changed or not: a step that neither closes
    nor opens the session leaves the status out of its update (``same_status``), and ix_sessions_account's page out
    of the log; the row reads the same either way."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    upgrade(url)
    service = SessionService(make_engine(url))
    wal = tmp_path / "ledger.db-wal"
    try:
        created = service.create(SessionCreate(dataset="sparse-gaussian", dataset_params=TINY, order="stream",
                                               budget={"per_example": 3}))
        assert service.db._checkpointer is not None
        service.db._checkpointer.close()  # the log emptied, and from now on grown by the writes below alone

        def pages(same_status: bool) -> int:
            before = wal.stat().st_size
            with service.db.write() as cursor:
                loaded = service.steps.load(cursor, created.id, created.token, lock=True)
                service.db.append(cursor, created.id, loaded.chain(), counter_values(loaded.counters), now=now(),
                                  same_status=same_status)
                page = cursor.execute("PRAGMA page_size").fetchone()[0]
            return (wal.stat().st_size - before) // (page + 24)  # a frame: its header and a page

        assert pages(same_status=False) == pages(same_status=True) + 1
        assert service.info(created.id, created.token) == created.session  # the same counters, status and chain
    finally:
        service.close_connections()
