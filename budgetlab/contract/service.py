"""What both services answer alike: their health, and every refusal."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from budgetlab.contract.budgets import REMAINING_EXAMPLE, Remaining


class Health(BaseModel):
    """A service that answers (``GET /healthz`` of the oracle and of the learner)."""

    status: str = Field("ok", description="'ok' while the service answers", examples=["ok"])


class Readiness(BaseModel):
    """A service ready to serve (``GET /readyz``): its database would take a write now. Not ready is a 503 whose
    ``error`` is the reason (``database_unavailable``, ``storage_full``, ``read_only``), the code of the refusal
    every write would get meanwhile."""

    status: str = Field("ready", description="'ready' while the service's database answers and takes writes",
                        examples=["ready"])
    database: str = Field("ok", description="the database's state: 'ok'", examples=["ok"])


class ErrorBody(BaseModel):
    """Every 4xx answer of both services."""

    error: str = Field(description="a stable machine-readable code, e.g. 'budget_exceeded' or 'not_found'",
                       examples=["budget_exceeded"])
    detail: str | list[Any] = Field(
        description="human text; for a request that does not validate, pydantic's errors (loc, msg, type)",
        examples=["example 0 would have 5 distinct attributes observed; the local budget is 4 per example "
                  "(2 already observed)"],
    )
    remaining: Remaining | None = Field(None, description="what is left of the budgets (with budget_exceeded)",
                                        examples=[REMAINING_EXAMPLE])
