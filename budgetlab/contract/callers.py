"""The learner's callers: who owns a run."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CallerToken(BaseModel):
    """A new caller of the learner: the token is shown once; the learner keeps only its SHA-256 digest."""

    caller: str = Field(description="the caller's id", examples=["c7d1e0a94b2f4e6a8d3b5f1c9e0a7d24"])
    token: str = Field(description="send it as 'Authorization: Bearer <token>'; it owns the runs started with it",
                       examples=["Jm0b3Q2k9xV7yLwTQe1nR8sZc4uHfA6gPd5iKoE2lXw"])
