"""WAL checkpoints of the SQLite ledger, in a thread of their own.

By default the connection whose commit takes the write-ahead log past 1,000 pages copies them back into the
database, inside that commit and so inside the write lock: every few megabytes of ledger one request takes
several milliseconds longer (fsyncs included), and every request queued behind it waits as long. Here the
oracle's writers leave that work to a background thread, which checkpoints PASSIVE (never waiting for, nor
blocking, a writer or a reader) a moment after anything was written. The writers' own automatic checkpoint
stays as a backstop at a much larger log, should this thread ever fall behind.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

# Pages (4 KiB) of log past which a writer checkpoints itself after all: the background thread was not keeping up.
WRITER_BACKSTOP_PAGES = 16_384
# How soon after a write the background thread checkpoints it (seconds): a bound on the log's growth. Each
# checkpoint ends with fsyncs, during which a writer's commit can stall for milliseconds on the file system: once a
# second they stall one write in hundreds (every 0.2 s, the head-of-line p99 of small requests behind big batches
# was 4-7x their idle p99, against 1.3-1.6x).
PERIOD = 1.0

log = logging.getLogger(__name__)


class Checkpointer:
    """Checkpoints the database of ``connect()`` in a daemon thread, ``period`` seconds after any ``wrote()``."""

    def __init__(self, connect: Callable[[], Any], period: float = PERIOD) -> None:
        self._connect, self._period = connect, period
        self._written = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpoint", daemon=True)
        self._thread.start()

    def wrote(self) -> None:
        """Called after each committed write: there is log to copy back."""
        if not self._written.is_set():  # set() takes the event's lock and notifies, at every step otherwise
            self._written.set()

    def close(self) -> None:
        self._stopping.set()
        self._written.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        conn = None
        try:
            while not self._stopping.is_set():
                self._written.wait()
                # Writes a moment apart share one checkpoint (and its fsyncs).
                self._stopping.wait(self._period)
                self._written.clear()
                try:
                    conn = conn or self._connect()
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except Exception:  # noqa: BLE001 - the writers' backstop checkpoints; the next write retries here
                    log.exception("WAL checkpoint failed")
        finally:
            if conn is not None:
                conn.close()
