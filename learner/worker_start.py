"""What each worker process of the learner's own ``LocalCluster`` runs as it starts (Dask's preload).

A module of its own, importing nothing: a worker then starts without the run machinery (``learner.cluster`` and what
it imports: the algorithms, the SDK clients, the contract's models, about 0.45 CPU-s per worker process), which it
imports with its first run. A learner that never runs anything on a worker never pays it there.
"""

from __future__ import annotations

import signal
import threading


def dask_setup(worker: object) -> None:
    """A worker process of our LocalCluster ignores SIGINT: Ctrl-C in a terminal reaches every process of the
    foreground group, and the comparison, not its workers, stops the runs (each ends with its curve so far)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
