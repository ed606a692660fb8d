"""Request dependencies of the learner service: what ``create_app`` put in the app's state, and the caller.

The caller is whoever holds the bearer token of the request (``learner.service.auth``): a missing, malformed, non-ASCII
or unknown one is a 401 before the route runs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from learner.service.auth import Caller, Callers
from learner.service.oracle_access import OracleAllowList
from learner.service.runs import RunManager
from learner.service.settings import LearnerSettings
from learner.service.store import RunStore
from web.state import from_state

# Declares the scheme in the OpenAPI document (so /docs can authorize); the header itself is checked by ``Callers``.
SCHEME = HTTPBearer(auto_error=False, scheme_name="LearnerToken",
                    description="a caller token from POST /v1/callers, or the learner's admin token")


Config = Annotated[LearnerSettings, Depends(from_state("settings", LearnerSettings))]
Runs = Annotated[RunManager, Depends(from_state("runs", RunManager))]
Store = Annotated[RunStore, Depends(from_state("store", RunStore))]
Oracles = Annotated[OracleAllowList, Depends(from_state("oracles", OracleAllowList))]
CallerTokens = Annotated[Callers, Depends(from_state("callers", Callers))]


# Not async: identifying a caller reads the database, which must not hold the event loop.
def current_caller(request: Request, known: CallerTokens,
                   _: Annotated[HTTPAuthorizationCredentials | None, Depends(SCHEME)] = None) -> Caller:
    return known.identify(request.headers.get("authorization"))


CurrentCaller = Annotated[Caller, Depends(current_caller)]
