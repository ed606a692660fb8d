"""A session's row of the oracle's database and the session it records: the one mapping, both ways.

The session service (opening, loading, stepping) and the dashboard's overview (listing without tokens) read and
write a session's row through these functions only; the engine's ``SessionConfig`` and ``Counters`` are what a
row holds, ``budgetlab.engine.session_view`` what a session shows of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from budgetlab.contract.budgets import Budget
from budgetlab.engine import Counters, SessionConfig
from budgetlab.ledger import FORMAT
from server.store import COUNTER_COLUMNS, Database

# The columns of a session that say what it is and what it used (no token, no chain head): what a listing reads.
SESSION_FACTS = ("id", "dataset", "dataset_params", "split", "protocol", "example_order", "budget", "seed",
                 "n_examples", "d", *COUNTER_COLUMNS, "ledger_rows", "created_at", "last_active", "account_id")


def config_of(db: Database, row: Mapping[str, Any]) -> SessionConfig:
    return SessionConfig(
        dataset=row["dataset"], dataset_params=db.decode(row, "dataset_params"), split=row["split"],
        protocol=row["protocol"], order=row["example_order"], budget=Budget.model_validate(db.decode(row, "budget")),
        seed=row["seed"], n_examples=row["n_examples"], d=row["d"],
    )


# The counters are the row's columns in the same order: a step reads and writes them as a tuple (``_make``, ``tuple``;
# by name, each cost a step 2-3 us).
assert Counters._fields == COUNTER_COLUMNS, "budgetlab.engine.Counters and server.store.COUNTER_COLUMNS disagree"


def counters_of(row: Mapping[str, Any]) -> Counters:
    return Counters._make([row[column] for column in COUNTER_COLUMNS])


def counter_values(counters: Counters) -> tuple[Any, ...]:
    """The counters as the row's ``COUNTER_COLUMNS``, in their order."""
    return tuple(counters)


def new_row(session_id: str, token_hash: str, config: SessionConfig, counters: Counters, *, head_hash: str,
            now: datetime, account: str | None) -> dict[str, Any]:
    """The row of a session just opened (before its first chain link), drawing on ``account`` (None: anonymous)."""
    return {
        "id": session_id, "token_hash": token_hash, "dataset": config.dataset, "dataset_params": config.dataset_params,
        "split": config.split, "protocol": config.protocol, "example_order": config.order,
        "budget": config.budget.model_dump(), "seed": config.seed, "n_examples": config.n_examples, "d": config.d,
        **dict(zip(COUNTER_COLUMNS, counter_values(counters), strict=True)), "ledger_rows": 0, "head_hash": head_hash,
        "created_at": now, "last_active": now, "account_id": account, "ledger_format": FORMAT,
    }
