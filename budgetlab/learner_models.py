"""Wire models of the learner's callers and run listings (the runs themselves are in ``budgetlab.models``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from budgetlab.models import CURVE_POINT_EXAMPLE, SESSION_ID_EXAMPLE, Budget, CurvePoint, RunStatus

RUN_SUMMARY_EXAMPLE = {
    "id": "3f0b1c9e2d7a4e58", "status": "running", "algorithm": "aerr", "dataset": "powerlaw", "seed": 0,
    "budget": {"per_example": 4}, "progress_examples": 1200, "progress_attributes": 4800, "max_examples": 2000,
    "session": SESSION_ID_EXAMPLE, "message": "", "last_point": CURVE_POINT_EXAMPLE,
    "created_at": "2025-01-31T09:30:00Z", "ended_at": None}


class CallerToken(BaseModel):
    """A new caller of the learner: the token is shown once; the learner keeps only its SHA-256 digest."""

    caller: str = Field(description="the caller's id", examples=["c7d1e0a94b2f4e6a8d3b5f1c9e0a7d24"])
    token: str = Field(description="send it as 'Authorization: Bearer <token>'; it owns the runs started with it",
                       examples=["Jm0b3Q2k9xV7yLwTQe1nR8sZc4uHfA6gPd5iKoE2lXw"])


class RunSummary(BaseModel):
    """One run in a listing: where it stands, without its curve or weights (GET /v1/runs/{id} has them)."""

    id: str = Field(description="the run's id", examples=["3f0b1c9e2d7a4e58"])
    status: RunStatus = Field(description="pending, queued or running until it ends, then how it ended",
                              examples=["running"])
    algorithm: str = Field(description="the algorithm's id (GET /v1/algorithms)", examples=["aerr"])
    dataset: str = Field(description="the dataset's name on the oracle", examples=["powerlaw"])
    seed: int = Field(description="the run's seed (the algorithm's and its oracle session's)", examples=[0])
    budget: Budget = Field(description="the budget of its training session", examples=[{"per_example": 4}])
    progress_examples: int = Field(0, description="training examples seen so far", examples=[1200])
    progress_attributes: int = Field(0, description="attributes paid for so far", examples=[4800])
    max_examples: int | None = Field(None, description="examples it will see at most", examples=[2000])
    session: str | None = Field(None, description="its training session's id on the oracle (null before it opened)",
                                examples=["f396ed88b0c0e8e3d6b3b937b222247e"])
    message: str = Field("", description="why it ended so, in words (empty while it runs)",
                         examples=["this request costs 4; 2 of the global budget of 20000 remains"])
    last_point: CurvePoint | None = Field(None, description="the latest point of the learning curve",
                                          examples=[CURVE_POINT_EXAMPLE])
    created_at: datetime = Field(description="when the learner accepted it (UTC)",
                                 examples=["2025-01-31T09:30:00Z"])
    ended_at: datetime | None = Field(None, description="when it ended (UTC); null while pending, queued or running",
                                      examples=["2025-01-31T09:31:12Z"])


class RunPage(BaseModel):
    """Runs newest first; pass ``next`` back as ``cursor`` for the page after this one."""

    runs: list[RunSummary] = Field(description="this page's runs (at most `limit`), newest first",
                                   examples=[[RUN_SUMMARY_EXAMPLE]])
    next: str | None = Field(None, description="cursor of the next page; null on the last page",
                             examples=["1187"])
