"""Whether the oracle answers (``/healthz``) and whether its ledger would take a write now (``/readyz``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from budgetlab.contract.service import ErrorBody, Health, Readiness
from budgetlab.errors import Code, Refused
from server.deps import Service

router = APIRouter(tags=["health"])
# Not ready: a 503 whose error is the reason, whatever the status writes get for it (507 for a full or read-only one).
NOT_READY_STATUS = 503
NOT_READY: dict[int | str, dict[str, Any]] = {NOT_READY_STATUS: {
    "model": ErrorBody, "description": "not ready, the error saying why: " + "; ".join(
        f"{c.value}: {c.when}" for c in (Code.DATABASE_UNAVAILABLE, Code.STORAGE_FULL, Code.READ_ONLY))}}


@router.get("/healthz", response_model=Health)
def healthz() -> Health:
    """Liveness: the process answers (whatever its database's state; see /readyz)."""
    return Health()


@router.get("/readyz", response_model=Readiness, responses=NOT_READY)
def readyz(sessions_: Service) -> Readiness:
    """Readiness: the ledger would take a write now (its file system writable and above its reserve, no write
    refused for lack of room since the last that succeeded, a write that changes nothing taken through the
    same connections as every request); else 503 with the reason, the code of the refusal every write would
    get now."""
    try:
        sessions_.check_ready()
    except Refused as exc:
        raise Refused(NOT_READY_STATUS, exc.error, exc.detail, retry_after=exc.retry_after) from exc
    return Readiness()
