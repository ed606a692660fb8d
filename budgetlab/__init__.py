"""The ground floor of budgetlab: the wire contract, errors, budget rules, datasets, the ledger chain, the
session engine and the SDK clients. Nothing here imports ``server``, ``learner`` or ``client``.

What a user of the SDK imports is importable from here by name (``from budgetlab import OracleClient, Budget``):
``__all__`` lists it, and ``docs/reference/python.md`` documents it (``tests/ground/test_public_api.py`` keeps the two
in step). Each name is imported from its module when it is first used (PEP 562's module ``__getattr__``), so that
``import budgetlab`` loads nothing: the services import the ground floor's modules by their own names, and a
service worker that imports ``budgetlab.errors`` must not pay for httpx, numpy or the datasets on the way.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from budgetlab.audit import audit_ndjson
    from budgetlab.contract.budgets import Budget
    from budgetlab.contract.runs import RunCreate
    from budgetlab.errors import (
        BudgetExhausted,
        BudgetlabError,
        Code,
        LearnerError,
        LearnerUnavailable,
        OracleError,
        OracleUnavailable,
        RateLimited,
        Refused,
        RunTimeout,
        SessionBusy,
        StreamExhausted,
        Unavailable,
    )
    from budgetlab.learner_client import AsyncLearnerClient, LearnerClient
    from budgetlab.local_session import LocalSession
    from budgetlab.oracle_client import AsyncOracleClient, AsyncOracleSession, OracleClient, OracleSession

# Each exported name and the module it lives in.
_HOMES = {
    # the clients of the two services and the oracle's sessions
    "OracleClient": "budgetlab.oracle_client",
    "OracleSession": "budgetlab.oracle_client",
    "AsyncOracleClient": "budgetlab.oracle_client",
    "AsyncOracleSession": "budgetlab.oracle_client",
    "LearnerClient": "budgetlab.learner_client",
    "AsyncLearnerClient": "budgetlab.learner_client",
    # a session in memory, on the oracle's own engine
    "LocalSession": "budgetlab.local_session",
    # the contract's models a user builds: a budget, a run to start
    "Budget": "budgetlab.contract.budgets",
    "RunCreate": "budgetlab.contract.runs",
    # an exported ledger checked offline
    "audit_ndjson": "budgetlab.audit",
    # the errors, and the catalog of the codes a refusal carries
    "BudgetlabError": "budgetlab.errors",
    "Refused": "budgetlab.errors",
    "OracleError": "budgetlab.errors",
    "BudgetExhausted": "budgetlab.errors",
    "StreamExhausted": "budgetlab.errors",
    "SessionBusy": "budgetlab.errors",
    "RateLimited": "budgetlab.errors",
    "LearnerError": "budgetlab.errors",
    "RunTimeout": "budgetlab.errors",
    "Unavailable": "budgetlab.errors",
    "OracleUnavailable": "budgetlab.errors",
    "LearnerUnavailable": "budgetlab.errors",
    "Code": "budgetlab.errors",
}

__all__ = [
    "AsyncLearnerClient",
    "AsyncOracleClient",
    "AsyncOracleSession",
    "Budget",
    "BudgetExhausted",
    "BudgetlabError",
    "Code",
    "LearnerClient",
    "LearnerError",
    "LearnerUnavailable",
    "LocalSession",
    "OracleClient",
    "OracleError",
    "OracleSession",
    "OracleUnavailable",
    "RateLimited",
    "Refused",
    "RunCreate",
    "RunTimeout",
    "SessionBusy",
    "StreamExhausted",
    "Unavailable",
    "audit_ndjson",
]

# Only at run time: a type checker takes the names from the imports above, and with a module ``__getattr__`` in
# sight it would take any other name (a misspelt ``budgetlab.OracleClent``) for a valid one.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        if name not in _HOMES:
            raise AttributeError(f"module 'budgetlab' has no attribute {name!r}")
        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value  # found directly from now on
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
