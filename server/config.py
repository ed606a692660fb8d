"""Settings of the oracle, from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


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
