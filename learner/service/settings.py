"""Settings of the learner service, from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import SecretStr

from budgetlab.oracle_client import DEFAULT_ORACLE_URL
from learner.algorithms import TARGET
from learner.cluster import SCHEDULER_ENV, WORKERS_ENV, http_worker_threads
from web.environment import env_count, env_float, env_int, env_names

MAX_QUEUED = 16


def default_database_url() -> str:
    return os.environ.get("LEARNER_DATABASE_URL") or f"sqlite:///{Path.cwd() / 'budgetlab-runs.db'}"


@dataclass(frozen=True)
class LearnerSettings:
    # Runs, their curves and results, and the callers' token digests.
    database_url: str = field(default_factory=default_database_url)
    # The oracle of runs that name none; always on the allow-list.
    oracle_url: str = field(default_factory=lambda: os.environ.get("ORACLE_URL") or DEFAULT_ORACLE_URL)
    # Further oracles a run may name (space or comma separated URLs); no other URL is ever contacted.
    extra_oracles: tuple[str, ...] = field(default_factory=lambda: env_names("BUDGETLAB_LEARNER_ORACLES") or ())
    # An account's API key on the oracle: the sessions of runs that bring no key of their own draw on its allowance
    # (unset: anonymous sessions, where the oracle opens them).
    api_key: SecretStr | None = field(
        default_factory=lambda: SecretStr(os.environ["BUDGETLAB_LEARNER_API_KEY"])
        if os.environ.get("BUDGETLAB_LEARNER_API_KEY") else None)
    # Sees, audits and cancels every caller's runs; unset means there is no admin.
    admin_token: str | None = field(default_factory=lambda: os.environ.get("BUDGETLAB_LEARNER_ADMIN_TOKEN") or None)
    # Runs executing at once; the others wait with status 'queued'. Unset: as many as the workers run at once.
    max_running: int | None = field(default_factory=lambda: env_count("BUDGETLAB_LEARNER_MAX_RUNNING"))
    # Where runs execute: the Dask scheduler of a cluster (tcp://HOST:8786), else a LocalCluster of `workers`
    # processes started with the learner (unset: one per core).
    scheduler: str | None = field(default_factory=lambda: os.environ.get(SCHEDULER_ENV) or None)
    workers: int | None = field(default_factory=lambda: env_count(WORKERS_ENV))
    # Runs each of those processes executes at once (a scheduler's workers have their own threads).
    worker_threads: int = field(default_factory=http_worker_threads)
    # Runs one caller may have queued or executing at once (429 too_many_runs past it): each holds an oracle session
    # open. A comparison sends as many at a time as the machine has cores.
    max_queued: int = field(default_factory=lambda: env_int("BUDGETLAB_LEARNER_MAX_QUEUED", MAX_QUEUED))
    # Ended runs kept in memory for fast reads; older ones are read back from the database.
    retained_runs: int = field(default_factory=lambda: env_int("BUDGETLAB_LEARNER_RETAINED_RUNS", 100))
    # A request body: a run's request is a few hundred bytes, so 1 MiB leaves room for any real one (413 above).
    max_body_bytes: int = field(default_factory=lambda: env_int("BUDGETLAB_LEARNER_MAX_BODY_BYTES", 1 << 20))

    # New callers per second from one client address, in bursts of up to callers_burst (429 past it; 0: no limit).
    callers_per_second: float = field(
        default_factory=lambda: env_float("BUDGETLAB_LEARNER_CALLERS_PER_SECOND", 5))
    callers_burst: float = field(
        default_factory=lambda: env_float("BUDGETLAB_LEARNER_CALLERS_BURST", 100))

    # Algorithms a run may name as package.module:Class (space or comma separated), beside budgetlab's and the installed
    # plugins' (entry points of 'budgetlab.algorithms'); a run naming any other code to import is refused.
    algorithm_targets: tuple[str, ...] = field(default_factory=lambda: env_names("BUDGETLAB_LEARNER_ALGORITHMS") or ())

    def __post_init__(self) -> None:
        malformed = [t for t in self.algorithm_targets if not TARGET.fullmatch(t)]
        if malformed:
            raise ValueError(f"BUDGETLAB_LEARNER_ALGORITHMS takes package.module:Class targets, not {malformed}")
        if self.callers_per_second < 0 or self.callers_burst < 1:
            raise ValueError("BUDGETLAB_LEARNER_CALLERS_PER_SECOND must not be negative, "
                             "BUDGETLAB_LEARNER_CALLERS_BURST at least 1")
        if self.max_running is not None and self.max_running < 1:
            raise ValueError("BUDGETLAB_LEARNER_MAX_RUNNING must be at least 1")
        if self.max_queued < 1:
            raise ValueError("BUDGETLAB_LEARNER_MAX_QUEUED must be at least 1")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"{WORKERS_ENV} must be at least 1")
        if self.max_body_bytes < 1:
            raise ValueError("BUDGETLAB_LEARNER_MAX_BODY_BYTES must be at least 1")
        if self.retained_runs < 0:
            raise ValueError("BUDGETLAB_LEARNER_RETAINED_RUNS cannot be negative")
