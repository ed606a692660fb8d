"""Request dependencies: the session service and the bearer tokens."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from budgetlab.bearer import bearer_token
from budgetlab.errors import Code, refusal
from server.config import Settings
from server.sessions import SessionService
from web.state import from_state

# The schemes declare the bearers in the OpenAPI document, so that /docs can authorize. They never refuse
# (auto_error=False): the header is parsed below, so a missing, malformed or non-ASCII bearer stays this oracle's
# 401 JSON error. Two schemes for one header, so that /docs can hold a session's token and the admin's at once.
SESSION_SCHEME = HTTPBearer(
    auto_error=False, scheme_name="SessionToken",
    description="the session's token, shown once in the answer of POST /v1/sessions",
)
ADMIN_SCHEME = HTTPBearer(
    auto_error=False, scheme_name="AdminToken",
    description="the oracle's admin token (BUDGETLAB_ADMIN_TOKEN); admin endpoints are disabled without one",
)
ACCOUNT_SCHEME = HTTPBearer(
    auto_error=False, scheme_name="AccountKey",
    description="an account's API key (ID.SECRET), shown once by POST /v1/accounts; opens sessions that draw on the "
                "account's allowance (without it a session is anonymous, where the oracle opens such sessions)",
)
Credentials = HTTPAuthorizationCredentials | None
# What an admin endpoint refuses before it runs (a request that does not validate included).
ADMIN_REFUSALS = (Code.UNAUTHORIZED, Code.ADMIN_DISABLED, Code.FORBIDDEN, Code.INVALID_REQUEST)


service = from_state("sessions", SessionService)
settings = from_state("settings", Settings)


def _token(request: Request) -> str:
    token = bearer_token(request.headers.get("authorization"))
    if token is None:  # missing, or no token the oracle could have issued (non-ASCII, control characters, ...)
        raise refusal(Code.UNAUTHORIZED, "send the session's token as 'Authorization: Bearer <token>'")
    return token


async def bearer(request: Request, _: Annotated[Credentials, Depends(SESSION_SCHEME)]) -> str:
    return _token(request)


async def account_key(request: Request, _: Annotated[Credentials, Depends(ACCOUNT_SCHEME)]) -> str | None:
    """The account's API key of a request that sends one (None: no Authorization header, an anonymous request)."""
    if request.headers.get("authorization") is None:
        return None
    token = bearer_token(request.headers.get("authorization"))
    if token is None:
        raise refusal(Code.UNAUTHORIZED, "send the account's API key as 'Authorization: Bearer <key>'")
    return token


async def admin(request: Request, _: Annotated[Credentials, Depends(ADMIN_SCHEME)],
                config: Annotated[Settings, Depends(settings)]) -> None:
    token = _token(request)
    if config.admin_token is None:
        raise refusal(Code.ADMIN_DISABLED, "set BUDGETLAB_ADMIN_TOKEN on the oracle to enable admin endpoints")
    if not is_admin(token, config):
        raise refusal(Code.FORBIDDEN, "this token is not the admin token")


def is_admin(token: str | None, config: Settings) -> bool:
    """Whether ``token`` is the oracle's admin token (in constant time)."""
    return (token is not None and config.admin_token is not None
            and hmac.compare_digest(token.encode(), config.admin_token.encode()))


Service = Annotated[SessionService, Depends(service)]
Token = Annotated[str, Depends(bearer)]
ApiKey = Annotated[str | None, Depends(account_key)]
Admin = Depends(admin)
