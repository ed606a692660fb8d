"""Wire models of the learner's callers and run listings (the runs themselves are in ``budgetlab.models``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from budgetlab.models import Budget, CurvePoint, RunStatus


class CallerToken(BaseModel):
    """A new caller of the learner: the token is shown once; the learner keeps only its SHA-256 digest."""

    caller: str = Field(description="the caller's id")
    token: str = Field(description="send it as 'Authorization: Bearer <token>'; it owns the runs started with it")


class RunSummary(BaseModel):
    """One run in a listing: where it stands, without its curve or weights (GET /v1/runs/{id} has them)."""

    id: str
    status: RunStatus
    algorithm: str
    dataset: str
    seed: int
    budget: Budget
    progress_examples: int = 0
    progress_attributes: int = 0
    max_examples: int | None = None
    session: str | None = None
    message: str = ""
    last_point: CurvePoint | None = Field(None, description="the latest point of the learning curve")
    created_at: datetime
    ended_at: datetime | None = None


class RunPage(BaseModel):
    """Runs newest first; pass ``next`` back as ``cursor`` for the page after this one."""

    runs: list[RunSummary]
    next: str | None = Field(None, description="cursor of the next page; null on the last page")
