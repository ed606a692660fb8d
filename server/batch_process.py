"""Big ``observe/batch`` requests worked out in a process of their own.

In a worker's process, a 10,000-cell batch's Python work (the engine's checks, hashing the chain, the answer's
JSON: about 3 ms) shares the GIL with every other request of the worker and roughly halves their speed while it
runs. The batch process does that work on a snapshot of the session (``server.batch_preparation``) and hands
back the ledger rows to insert and the answer's bytes; the worker then only inserts them under the write lock, if
the session has not moved meanwhile, and otherwise does the whole step itself under the lock, as without this
process. The process starts with the worker's first big batch (a worker that never gets one, as most in the
tests, never pays its second of start-up); until it is ready, and whenever it fails, batches are worked out in the
worker as before. It exits when its worker does, however that ends.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from budgetlab.datasets.registry import CACHE_BYTES, CACHE_ENTRIES, cache_limits
from budgetlab.malloc import tune_malloc
from server.db import make_engine
from server.sessions import SessionService
from server.steps import Caps, Prepared

log = logging.getLogger(__name__)
# A big batch is worked out within a second (the engine's caps); this is a wedged process, not a slow one.
RESULT_TIMEOUT = 30.0
# How often the batch process looks whether its worker still lives (seconds).
WATCH_PERIOD = 0.5

_service: SessionService | None = None


def _start(database_url: str, lock_timeout: float, caps: Caps, cache_bytes: int, worker: int) -> None:
    """In the batch process: the session service it prepares with (its dataset cache bounded as the worker's),
    and a watch on the worker that started it."""
    global _service
    tune_malloc()
    cache_limits(CACHE_ENTRIES, cache_bytes)
    _service = SessionService(make_engine(database_url, lock_timeout), lock_timeout, caps)

    def watch() -> None:
        while os.getppid() == worker:
            time.sleep(WATCH_PERIOD)
        os._exit(0)  # the worker is gone (even killed with SIGKILL): nobody will ask for anything again

    threading.Thread(target=watch, name="worker-watch", daemon=True).start()


def _ready() -> bool:
    return True


def _prepare(session_id: str, token: str, raw: bytes) -> Prepared[bytes] | None:
    assert _service is not None
    return _service.batches.prepare(session_id, token, raw)


class BatchProcess:
    """The worker's side: ``prepare`` a batch in the batch process, or None when the worker must do it itself."""

    def __init__(self, database_url: str, lock_timeout: float, caps: Caps,
                 cache_bytes: int = CACHE_BYTES) -> None:
        self._args = (database_url, lock_timeout, caps, cache_bytes, os.getpid())
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._ready = threading.Event()

    def start(self) -> None:
        """Start the process now rather than with the first big batch."""
        self._started()

    def ready(self, timeout: float) -> bool:
        """Whether the process is up and prepares batches (waiting for it at most ``timeout`` seconds)."""
        return self._ready.wait(timeout)

    def prepare(self, session_id: str, token: str, raw: bytes) -> Prepared[bytes] | None:
        pool = self._started()
        if pool is None or not self._ready.is_set():
            return None
        try:
            return pool.submit(_prepare, session_id, token, raw).result(timeout=RESULT_TIMEOUT)
        except (BrokenProcessPool, TimeoutError):  # the process died or is wedged: a new one starts
            log.exception("the batch process failed; starting a new one")
            self._restart(pool)
        except Exception:  # noqa: BLE001 - a bug in preparing this batch: the worker works it out itself
            log.exception("the batch process could not prepare a batch")
        return None

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _started(self) -> ProcessPoolExecutor | None:
        with self._lock:
            if self._pool is None:
                self._ready.clear()
                self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=_start, initargs=self._args)
                self._pool.submit(_ready).add_done_callback(self._on_ready)
            return self._pool

    def _on_ready(self, started: Future[Any]) -> None:
        if started.exception() is None:
            self._ready.set()

    def _restart(self, failed: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is failed:
                self._pool = None
        failed.shutdown(wait=False, cancel_futures=True)
