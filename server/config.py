"""Settings of the oracle, from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from budgetlab.contract.accounts import Allowance
from budgetlab.datasets.registry import CACHE_BYTES
from budgetlab.engine import MAX_CELLS, MAX_EXAMPLES
from server.readiness import RESERVE_BYTES
from web.environment import env_amount, env_count, env_float, env_int, env_names, env_switch

# The largest request body (and stream message) by default: an ``evaluate`` of 100,000 weights at full precision
# takes about 2.5 MB, a request at the cells cap well under that.
MAX_BODY_BYTES = 4 << 20
MAX_UPLOAD_BYTES = 1 << 30
# Sessions one address may open: a burst of 500 (a class's comparison opens a few dozen), then 20 a second; the
# unlimited oracle opened about 340 a second for one anonymous client.
SESSIONS_PER_SECOND = 20.0
SESSIONS_BURST = 500.0
# Anonymous sessions open at once, all strangers together: far above what the sandbox's comparisons keep open (a few
# dozen), far below what the opening rate alone lets strangers pile up in a day.
ANONYMOUS_SESSIONS = 10_000
# Every request of one address, and of one key (bearer token): sized above what one worker serves over plain HTTP
# on a small machine, so that a heavy client there is not slowed; a shared deployment on big machines lowers them.
# A session's stream counts once per address; each of its messages takes a token of its session token's rate.
REQUESTS_PER_SECOND, REQUESTS_BURST = 2000.0, 4000.0
KEY_REQUESTS_PER_SECOND, KEY_REQUESTS_BURST = 1000.0, 2000.0
# CPU seconds of dataset building per second, per address and per key (server.build_costs), in bursts: a comparison
# of ten seeds of sparse-gaussian at the paper's size (1.25 CPU-s each) starts in a few seconds, and a flood of new
# seeds takes a quarter of one core.
BUILD_SECONDS_PER_SECOND, BUILD_SECONDS_BURST = 0.25, 8.0


def default_database_url() -> str:
    return os.environ.get("DATABASE_URL") or f"sqlite:///{Path.cwd() / 'budgetlab-ledger.db'}"


@dataclass(frozen=True)
class Settings:
    database_url: str = field(default_factory=default_database_url)
    # Guards the dataset-admin endpoints; unset means they are disabled.
    admin_token: str | None = field(default_factory=lambda: os.environ.get("BUDGETLAB_ADMIN_TOKEN") or None)
    # Sessions idle longer than this may be closed by POST /v1/admin/close-idle (seconds).
    idle_timeout: float = field(default_factory=lambda: float(os.environ.get("BUDGETLAB_IDLE_TIMEOUT", "3600")))
    # A request waits at most this long for its session's lock, then gets 503 with Retry-After (seconds).
    lock_timeout: float = field(default_factory=lambda: float(os.environ.get("BUDGETLAB_LOCK_TIMEOUT", "5")))
    # A request body or stream message larger than this is refused (413) before it is read.
    max_body_bytes: int = field(default_factory=lambda: env_int("BUDGETLAB_MAX_BODY_BYTES", MAX_BODY_BYTES))
    # The largest dataset file an admin may upload (POST /v1/datasets/upload); it is spooled to disk, not memory.
    max_upload_bytes: int = field(default_factory=lambda: env_int("BUDGETLAB_MAX_UPLOAD_BYTES", MAX_UPLOAD_BYTES))
    # The most cells (example, attribute), and examples, one observe or step may ask for (413 above, nothing
    # charged), so that no request holds the ledger's write lock for more than about a second.
    max_cells: int = field(default_factory=lambda: env_int("BUDGETLAB_MAX_CELLS", MAX_CELLS))
    max_examples: int = field(default_factory=lambda: env_int("BUDGETLAB_MAX_EXAMPLES", MAX_EXAMPLES))
    # In-memory dataset arrays kept by each worker's dataset cache (memory-mapped user datasets count nothing).
    dataset_cache_bytes: int = field(default_factory=lambda: env_int("BUDGETLAB_DATASET_CACHE_BYTES", CACHE_BYTES))
    # New sessions per second from one client address, in bursts of up to sessions_burst (429 past it; 0: no limit).
    sessions_per_second: float = field(
        default_factory=lambda: env_float("BUDGETLAB_SESSIONS_PER_SECOND", SESSIONS_PER_SECOND))
    sessions_burst: float = field(
        default_factory=lambda: env_float("BUDGETLAB_SESSIONS_BURST", SESSIONS_BURST))
    # Every request from one client address, and with one key, per second in bursts (429 past it; 0: no limit).
    requests_per_second: float = field(
        default_factory=lambda: env_float("BUDGETLAB_REQUESTS_PER_SECOND", REQUESTS_PER_SECOND))
    requests_burst: float = field(
        default_factory=lambda: env_float("BUDGETLAB_REQUESTS_BURST", REQUESTS_BURST))
    key_requests_per_second: float = field(
        default_factory=lambda: env_float("BUDGETLAB_KEY_REQUESTS_PER_SECOND", KEY_REQUESTS_PER_SECOND))
    key_requests_burst: float = field(
        default_factory=lambda: env_float("BUDGETLAB_KEY_REQUESTS_BURST", KEY_REQUESTS_BURST))
    # CPU seconds of dataset building one address, and one key, may have the oracle spend per second, in bursts
    # (429 past it, before anything is built; 0 a second: no limit).
    build_seconds_per_second: float = field(
        default_factory=lambda: env_float("BUDGETLAB_BUILD_SECONDS_PER_SECOND", BUILD_SECONDS_PER_SECOND))
    build_seconds_burst: float = field(
        default_factory=lambda: env_float("BUDGETLAB_BUILD_SECONDS_BURST", BUILD_SECONDS_BURST))
    # Bytes the SQLite ledger's file system must keep free: below it every write is refused (507 storage_full) and
    # /readyz is 503, so that the write-ahead log can still be copied back into the database (server.readiness).
    ledger_reserve_bytes: int = field(
        default_factory=lambda: env_int("BUDGETLAB_LEDGER_RESERVE_BYTES", RESERVE_BYTES))
    # Work big observe/batch requests out in a process of the worker's own (server.batch_process), so that they
    # do not slow the worker's other requests down; 0 does it in the worker.
    batch_process: bool = field(default_factory=lambda: os.environ.get("BUDGETLAB_BATCH_PROCESS", "1") != "0")
    # Commit the small steps ready on the event loop at once together (server.scheduling.GroupCommit); 0: each alone.
    group_commit: bool = field(default_factory=lambda: os.environ.get("BUDGETLAB_GROUP_COMMIT", "1") != "0")
    # Sessions opened without an account's key: on for the sandbox, off for a shared deployment (then every session
    # draws on an account's allowance). When on, the anonymous allowance below bounds them.
    anonymous: bool = field(default_factory=lambda: env_switch("BUDGETLAB_ANONYMOUS", True))
    # The largest local budget k of an anonymous session (a session asking none gets it); None: no limit.
    anonymous_per_example: int | None = field(
        default_factory=lambda: env_count("BUDGETLAB_ANONYMOUS_PER_EXAMPLE"))
    # The largest global budget of one anonymous session (and the default); None: no limit.
    anonymous_total: float | None = field(
        default_factory=lambda: env_amount("BUDGETLAB_ANONYMOUS_TOTAL"))
    # The datasets anonymous sessions may use (names, space or comma separated); None: every dataset.
    anonymous_datasets: tuple[str, ...] | None = field(
        default_factory=lambda: env_names("BUDGETLAB_ANONYMOUS_DATASETS"))
    # Whether anonymous sessions may open test splits (0 shields them: only evaluation results leave a test split).
    anonymous_test: bool = field(default_factory=lambda: env_switch("BUDGETLAB_ANONYMOUS_TEST", True))
    # Anonymous sessions open at once, all anonymous clients together (0: no limit).
    anonymous_sessions: int | None = field(
        default_factory=lambda: env_count("BUDGETLAB_ANONYMOUS_SESSIONS", ANONYMOUS_SESSIONS) or None)
    # Datasets whose test split no session opens, whoever asks ("*": every dataset); only evaluation results leave
    # them.
    shielded_datasets: tuple[str, ...] = field(
        default_factory=lambda: env_names("BUDGETLAB_SHIELDED_DATASETS") or ())

    def anonymous_allowance(self) -> Allowance:
        """What anonymous sessions may do: per session (total, per_example) and together (sessions open)."""
        return Allowance(total=self.anonymous_total, per_example=self.anonymous_per_example,
                         datasets=None if self.anonymous_datasets is None else list(self.anonymous_datasets),
                         splits=["train", "test"] if self.anonymous_test else ["train"],
                         sessions=self.anonymous_sessions, evaluations=None)
