"""The results store of ``budgetlab bench``: one SQLite row per completed run, committed as the run ends.

A second invocation reads the store and runs only what it lacks. Each commit is one SQLite transaction in its default
rollback-journal mode with ``synchronous = FULL``: Ctrl-C, ``kill -9`` or a power cut leave every row committed
before it whole and no row half-written, so nothing stored is lost and nothing is stored twice. A row that does not
read back as a run (a file edited by hand, a damaged disk) is set aside, counted and run again, never trusted.

A run's key is the hash of everything that makes it the run it is: the algorithm (and the version of the package that
provides it: a plugin upgraded is a new run), its parameters, the dataset and its parameters, the budget, the seed,
the examples and the curve's spacing, budgetlab's version and the grid's (``client.bench.grid.GRID_VERSION``). A
grid changed in any of these never reuses a stale row; where the run executed (in-process or through the services)
is not part of it, since both give the same run.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path

from pydantic import ValidationError

from budgetlab.contract.runs import RunCreate, RunResult

SCHEMA = """CREATE TABLE IF NOT EXISTS runs (
    key TEXT PRIMARY KEY,
    request TEXT NOT NULL,
    result TEXT NOT NULL,
    stored_at REAL NOT NULL
)"""


class StoreError(RuntimeError):
    """The file is not a results store (or cannot be opened as one)."""


def run_key(request: RunCreate, *, budgetlab_version: str, grid_version: int, package: str) -> str:
    """The run's key: a hash of what makes it the run it is (not where it runs, nor its account)."""
    what = {"grid": grid_version, "budgetlab": budgetlab_version, "package": package,
            "algorithm": request.algorithm, "params": request.params, "defaults": request.defaults,
            "dataset": request.dataset, "dataset_params": request.dataset_params,
            "budget": request.budget.model_dump(mode="json"), "seed": request.seed,
            "max_examples": request.max_examples, "eval_every": request.eval_every,
            "test_budget": request.test_budget}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


class RunStore:
    """The store at ``path`` (created if missing), safe to add to from several threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            # The grid's threads add rows as their runs end: one connection, behind the lock.
            self._db = sqlite3.connect(path, timeout=30.0, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA synchronous = FULL")
            self._db.execute(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path} is not a results store of budgetlab bench ({exc}): move it away, or give "
                             "another --out") from None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def read(self, keys: set[str]) -> tuple[dict[str, RunResult], int]:
        """The stored runs among ``keys``, and how many of their rows did not read back as a run (run again)."""
        found: dict[str, RunResult] = {}
        damaged = 0
        with self._lock:
            rows = self._db.execute("SELECT key, result FROM runs").fetchall()
        for key, text in rows:
            if key not in keys:
                continue
            try:
                found[key] = RunResult.model_validate_json(text)
            except (ValidationError, TypeError):
                damaged += 1
        return found, damaged

    def add(self, key: str, request: RunCreate, result: RunResult) -> None:
        """Keep the run, committed before this returns (a row of the same key is replaced)."""
        row = (key, request.model_dump_json(exclude={"api_key", "oracle_url"}), result.model_dump_json(),
               time.time())
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO runs (key, request, result, stored_at) VALUES (?, ?, ?, ?)", row)

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM runs").fetchone()[0])
