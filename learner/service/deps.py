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

# Declares the scheme in the OpenAPI document (so /docs can authorize); the header itself is checked by ``Callers``.
SCHEME = HTTPBearer(auto_error=False, scheme_name="LearnerToken",
                    description="a caller token from POST /v1/callers, or the learner's admin token")


async def settings(request: Request) -> LearnerSettings:
    found: LearnerSettings = request.app.state.settings
    return found


async def runs(request: Request) -> RunManager:
    found: RunManager = request.app.state.runs
    return found


async def store(request: Request) -> RunStore:
    found: RunStore = request.app.state.store
    return found


async def oracles(request: Request) -> OracleAllowList:
    found: OracleAllowList = request.app.state.oracles
    return found


async def callers(request: Request) -> Callers:
    found: Callers = request.app.state.callers
    return found


# Not async: identifying a caller reads the database, which must not hold the event loop.
def current_caller(request: Request, known: Annotated[Callers, Depends(callers)],
                   _: Annotated[HTTPAuthorizationCredentials | None, Depends(SCHEME)] = None) -> Caller:
    return known.identify(request.headers.get("authorization"))


Config = Annotated[LearnerSettings, Depends(settings)]
Runs = Annotated[RunManager, Depends(runs)]
Store = Annotated[RunStore, Depends(store)]
Oracles = Annotated[OracleAllowList, Depends(oracles)]
CallerTokens = Annotated[Callers, Depends(callers)]
CurrentCaller = Annotated[Caller, Depends(current_caller)]
