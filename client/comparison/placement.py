"""Which run of a ``--local`` grid a freed worker process starts next: one whose dataset it already holds.

A worker builds each dataset it meets once and keeps it (the datasets cache). Started in grid order, the runs of
one seed (every algorithm's, which share its dataset) go to different workers, each building the same data: with
2 workers and 4 seeds, both built all 4, so 2 workers spent as long building as 1. A thread that runs jobs on the
pool therefore asks for its next one naming the worker its last run ran on (the one now free): first a job of a
dataset that worker holds, else one of a dataset no worker holds or is building, else the next in grid order.
Only the order in which runs start changes: results are reported in grid order.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from budgetlab.contract.runs import RunCreate

J = TypeVar("J")


def dataset_key(request: RunCreate) -> Hashable:
    """What a worker's datasets cache tells a run's dataset by: its name, parameters and seed."""
    return request.dataset, json.dumps(request.dataset_params, sort_keys=True), request.seed


class Placement(Generic[J]):
    """The grid's jobs not started yet, handed out one at a time (thread-safe)."""

    def __init__(self, jobs: Sequence[J], key: Callable[[J], Hashable]) -> None:
        self._pending = list(range(len(jobs)))
        self._keys = [key(job) for job in jobs]
        self._held: dict[str, set[Hashable]] = {}  # worker -> datasets it built
        self._building: set[Hashable] = set()  # datasets of runs started on a worker not known yet
        self._lock = threading.Lock()

    def take(self, worker: str | None) -> int | None:
        """The index of the job to start next on ``worker`` (None: not known), or None when none is left."""
        with self._lock:
            if not self._pending:
                return None
            held = self._held.get(worker or "", set())
            elsewhere = self._building.union(*(keys for w, keys in self._held.items() if w != worker))
            chosen = next((i for i in self._pending if self._keys[i] in held), None)
            if chosen is None:
                chosen = next((i for i in self._pending if self._keys[i] not in elsewhere), self._pending[0])
            self._pending.remove(chosen)
            if self._keys[chosen] not in held:
                self._building.add(self._keys[chosen])
            return chosen

    def ran(self, index: int, worker: str) -> None:
        """Job ``index`` ran on ``worker`` ("": not known, the run never started), which now holds its dataset."""
        with self._lock:
            self._building.discard(self._keys[index])
            if worker:
                self._held.setdefault(worker, set()).add(self._keys[index])

    def drop(self) -> list[int]:
        """Start nothing more: the jobs not started, which are no one's now."""
        with self._lock:
            dropped, self._pending = self._pending, []
            return dropped
