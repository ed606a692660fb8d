"""WAL checkpoints of the SQLite ledger, in a thread of their own, and a write-ahead log of bounded size.

By default the connection whose commit takes the write-ahead log past 1,000 pages copies them back into the
database, inside that commit and so inside the write lock: every few megabytes of ledger one request takes
several milliseconds longer (fsyncs included), and every request queued behind it waits as long. Here the
oracle's writers leave that work to a background thread.

Copying the log back is not enough to keep it small: SQLite starts writing the log from its beginning again only
when a writer finds it wholly copied back and no reader still using it, which under steady load never happens (a
write always comes between a checkpoint and the next writer; 6 clients grew it to 67 MB in 36 s). So the thread:

- checkpoints PASSIVE (never waiting for, nor blocking, a writer or a reader) ``PERIOD`` after anything was
  written, or as soon as the log file passes ``LIMIT_BYTES`` (its size looked at every ``POLL`` while writes come);
- once the log is past ``LIMIT_BYTES``, checkpoints PASSIVE again (what was written meanwhile), then holds this
  process's writers back (they wait at the store's gate, as behind any write) for a RESTART checkpoint: it copies
  the pages of the last few milliseconds, waits ``READERS_WAIT_MS`` at most for readers still on the log, and has
  the next writer start the log over from its beginning. Readers that take longer (a long audit) make it give up
  for a period: the log grows meanwhile. Under 16 clients writers were held back about 10 ms, 6 times a second
  (``benchmarks/health_bench.py``);
- should the thread fall behind all the same (a checkpoint's fsync stalled for 0.4 s on busy cores), the first
  writer to find the log past ``HARD_LIMIT_BYTES`` starts it over itself, holding the gate, before it writes
  (``Database._restart_log``): the file stays under that and one request's pages;
- ``journal_size_limit`` (every connection's, ``server.db``) has the writer that starts the log over truncate the
  file to ``LIMIT_BYTES``; the oracle's last checkpoint, as it stops, empties it (TRUNCATE).

A checkpoint that fails (a full disk, a read-only file system, a ledger removed) is logged once, then once more when
it works again or fails otherwise, never a traceback per attempt: the writers' refusals say what matters to clients.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

# The size of write-ahead log past which it is started over (bytes).
LIMIT_BYTES = 2 << 20
# Past this, the thread has fallen behind (a checkpoint's copy and fsync took 0.4 s on 2 cores under a load of 13,
# while 16 clients wrote 15 MB of log a second): the next writer starts the log over itself (``overdue``), so that
# the file stays under this and one request's pages (at most about 2 MB, at the cells cap).
HARD_LIMIT_BYTES = 3 * LIMIT_BYTES
# Pages (4 KiB) of log past which a writer checkpoints itself after all: the background thread was not keeping up.
WRITER_BACKSTOP_PAGES = 4 * LIMIT_BYTES // 4096
# How soon after a write the background thread checkpoints it (seconds). Each checkpoint ends with fsyncs, during
# which a writer's commit can stall for milliseconds on the file system: once a second they stall one write in
# hundreds (every 0.2 s, the head-of-line p99 of small requests behind big batches was 4-7x their idle p99, against
# 1.3-1.6x). A log growing faster than LIMIT_BYTES a second is checkpointed sooner.
PERIOD = 1.0
# How often the log's size is looked at while writes come (seconds): a stat of one file.
POLL = 0.05
# How long the thread's look that found the log under ``HARD_LIMIT_BYTES`` spares the writers their own (seconds): a
# stat of the log at every write cost a small step 5-20 us (the file's inode busy with the checkpoint's writes). The
# thread looks every ``POLL`` while writes come; should it stall (a checkpoint's fsync) or stop, the writers look
# again after this. At 15 MB of log a second (16 clients) the log grows 1.5 MB meanwhile, well within the 4 MB
# between the limit, where the thread starts it over, and the hard limit.
STALE = 2 * POLL
# How long the RESTART checkpoint waits for readers on the log, the process's writers held back meanwhile.
READERS_WAIT_MS = 50

log = logging.getLogger(__name__)


class Checkpointer:
    """Checkpoints ``database`` (opened by ``connect()``) in a daemon thread after ``wrote()``, keeping its log file
    near ``limit`` bytes; ``hold_writers()`` holds this process's writers back, and says whether it could."""

    def __init__(self, connect: Callable[[], Any], database: Path,
                 hold_writers: Callable[[], AbstractContextManager[bool]], *, period: float = PERIOD,
                 limit: int = LIMIT_BYTES) -> None:
        self._connect, self._database, self._hold_writers = connect, database, hold_writers
        self._wal = database.with_name(database.name + "-wal")
        self._period, self._limit = period, limit
        self._written = threading.Event()
        self._stopping = threading.Event()
        self._failure: str | None = None  # what the last checkpoint failed of, logged once
        self._restart_after = 0.0  # readers kept the last TRUNCATE from emptying the log: not before this
        self._under_at = -STALE  # when the thread last found the log under the hard limit
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpoint", daemon=True)
        self._thread.start()

    def overdue(self) -> bool:
        """Whether the log is past ``HARD_LIMIT_BYTES``: a writer holding the gate should start it over first. Not
        looked at while the thread found it under that limit less than ``STALE`` ago."""
        if time.monotonic() - self._under_at < STALE:
            return False
        return self._log_size() > HARD_LIMIT_BYTES

    def wrote(self) -> None:
        """Called after each committed write: there is log to copy back."""
        if not self._written.is_set():  # set() takes the event's lock and notifies, at every step otherwise
            self._written.set()

    def close(self) -> None:
        """Stop the thread after a last checkpoint that empties the log, so that a stopped oracle leaves none."""
        self._stopping.set()
        self._written.set()
        self._thread.join(timeout=10)

    def _log_size(self) -> int:
        try:
            return os.stat(self._wal).st_size
        except OSError:  # not there (yet, or any more): nothing to copy back
            return 0

    def _look(self) -> int:
        """The log's size, as the thread looks at it: a look under the hard limit spares the writers theirs."""
        size = self._log_size()
        if size <= HARD_LIMIT_BYTES:
            self._under_at = time.monotonic()
        return size

    def _run(self) -> None:
        conn = None
        try:
            final = False
            while not final:
                self._written.wait()
                # Writes a moment apart share one checkpoint (and its fsyncs), unless the log grows past the limit.
                due = time.monotonic() + self._period
                while not self._stopping.wait(POLL) and time.monotonic() < due:
                    if self._look() > self._limit:
                        break
                self._written.clear()
                final = self._stopping.is_set()
                conn = self._checkpoint(conn, final=final)
        finally:
            if conn is not None:
                conn.close()

    def _checkpoint(self, conn: Any, *, final: bool) -> Any:
        """One round: PASSIVE, then a RESTART if the log is past the limit (a TRUNCATE if the oracle stops). Returns
        the connection to keep (None after a failure: the next round opens another)."""
        if conn is None and not self._database.exists():
            return None  # removed (a throwaway ledger): opening it would make a new, empty one
        try:
            conn = conn or self._open()
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            if final or (self._look() > self._limit and time.monotonic() >= self._restart_after):
                self._restart(conn, final=final)
        except Exception as exc:  # noqa: BLE001 - the writers' backstop checkpoints; the next write retries here
            self._failed(exc)
            if conn is not None:
                conn.close()
            return None
        if self._failure is not None:
            log.warning("WAL checkpoints of the ledger succeed again")
            self._failure = None
        return conn

    def _open(self) -> Any:
        conn = self._connect()
        # The RESTART checkpoint's wait for readers (SQLite's busy handler), bounded: the writers wait meanwhile.
        conn.execute(f"PRAGMA busy_timeout = {READERS_WAIT_MS}")
        return conn

    def _restart(self, conn: Any, *, final: bool) -> None:
        # Again, writers running: what they wrote during the first is copied back too, so that they are held back
        # below only for the pages of the last few milliseconds (about 10 ms under 16 clients, against 30-80 ms).
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        with self._hold_writers() as held:
            if not held:  # a write kept the gate for longer than the lock timeout: next round
                return
            busy, _, _ = conn.execute(f"PRAGMA wal_checkpoint({'TRUNCATE' if final else 'RESTART'})").fetchone()
        if busy:  # readers still on the log: the next round's PASSIVE copies on, and the RESTART waits a period
            self._restart_after = time.monotonic() + self._period

    def _failed(self, exc: Exception) -> None:
        failure = f"{type(exc).__name__}: {exc}"
        if failure != self._failure:
            log.warning("WAL checkpoint of the ledger failed: %s (logged again when this changes)", failure)
            self._failure = failure
