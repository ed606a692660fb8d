"""The admin's housekeeping: closing the sessions left idle."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from budgetlab.errors import Code, responses
from server.config import Settings
from server.deps import ADMIN_REFUSALS, Admin, Service, settings

router = APIRouter(tags=["admin"])


class Closed(BaseModel):
    closed: list[str] = Field(description="the ids of the sessions this request closed",
                              examples=[["f396ed88b0c0e8e3d6b3b937b222247e"]])


@router.post("/v1/admin/close-idle", response_model=Closed, dependencies=[Admin],
             responses=responses(*ADMIN_REFUSALS, Code.BUSY))
def close_idle(
    sessions_: Service,
    config: Annotated[Settings, Depends(settings)],
    idle_seconds: Annotated[float | None, Query(ge=0, le=10**9)] = None,
) -> Closed:
    """Close every session idle longer than ``idle_seconds`` (default: the oracle's idle timeout)."""
    return Closed(closed=sessions_.close_idle(config.idle_timeout if idle_seconds is None else idle_seconds))
