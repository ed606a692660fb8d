"""Who may start runs: ``POST /v1/callers`` issues a caller token (``learner.service.auth``)."""

from __future__ import annotations

from fastapi import APIRouter

from budgetlab.contract.callers import CallerToken
from budgetlab.errors import Code, responses
from learner.service.deps import CallerTokens

router = APIRouter(tags=["callers"])


@router.post("/v1/callers", status_code=201, response_model=CallerToken, responses=responses(Code.RATE_LIMITED))
def new_caller(callers: CallerTokens) -> CallerToken:
    """A new caller token (shown once): the runs started with it are visible to its holder only."""
    return callers.issue()
