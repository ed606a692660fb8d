"""Request dependencies: the session service and the bearer tokens."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Header, Request

from budgetlab.bearer import bearer_token
from budgetlab.errors import OracleError
from server.config import Settings
from server.sessions import SessionService


async def service(request: Request) -> SessionService:
    return request.app.state.sessions


async def settings(request: Request) -> Settings:
    return request.app.state.settings


async def bearer(authorization: Annotated[str | None, Header()] = None) -> str:
    token = bearer_token(authorization)
    if token is None:  # missing, or no token the oracle could have issued (non-ASCII, control characters, ...)
        raise OracleError(401, "unauthorized", "send the session's token as 'Authorization: Bearer <token>'")
    return token


async def admin(token: Annotated[str, Depends(bearer)], config: Annotated[Settings, Depends(settings)]) -> None:
    if config.admin_token is None:
        raise OracleError(403, "admin_disabled", "set BUDGETLAB_ADMIN_TOKEN on the oracle to enable admin endpoints")
    if not hmac.compare_digest(token.encode(), config.admin_token.encode()):
        raise OracleError(403, "forbidden", "this token is not the admin token")


Service = Annotated[SessionService, Depends(service)]
Token = Annotated[str, Depends(bearer)]
Admin = Depends(admin)
