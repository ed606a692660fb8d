"""Every failure of both services answers JSON ``{"error", "detail"}`` with a 4xx status; a 5xx is a bug.

The codes are ``budgetlab.errors.Code``'s; a request body that does not validate is answered with the same
``validation_detail`` the in-process oracle's ``invalid_request`` summarises, so both refuse bad input alike.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException

from budgetlab.contract.budgets import Remaining
from budgetlab.errors import Code, Refused, error_body, validation_detail
from web.database_faults import database_refusal, postgres_errors

INVALID_REQUEST = Code.INVALID_REQUEST.value
# The codes of the refusals the HTTP layer itself answers, by status (any other status: http_error).
HTTP_CODES = {code.status: code.value for code in (Code.NOT_FOUND, Code.METHOD_NOT_ALLOWED, Code.UNAUTHORIZED,
                                                   Code.TOO_LARGE)}


def error_response(status: int, error: str, detail: Any, remaining: Remaining | None = None,
                   retry_after: float | None = None) -> JSONResponse:
    body = error_body(error, detail, remaining)
    headers = None if retry_after is None else {"Retry-After": str(max(1, round(retry_after)))}
    return JSONResponse(status_code=status, content=body, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(Refused)
    async def _refused(_: Request, exc: Refused) -> JSONResponse:
        return error_response(exc.status, exc.error, exc.detail, exc.remaining, exc.retry_after)

    async def _database(_: Request, exc: Exception) -> JSONResponse:
        refused = database_refusal(exc)
        if refused is None:  # not the database's state: a bug, and a 500 says so
            raise exc
        return error_response(refused.status, refused.error, refused.detail, None, refused.retry_after)

    # A database fault that reaches the app unconverted (the learner's SQLAlchemy store) is the same 503 or 507.
    # psycopg's, if it is loaded: an app on PostgreSQL has made its engine, which imports it, before this is called.
    for kind in (DBAPIError, sqlite3.Error, *postgres_errors()):
        app.add_exception_handler(kind, _database)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, INVALID_REQUEST, validation_detail(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and isinstance(exc.__cause__, UnicodeDecodeError):
            # FastAPI's 400 for a body it cannot decode: a body that does not validate, as malformed JSON is.
            return error_response(422, INVALID_REQUEST, f"the request body is not UTF-8 JSON: {exc.__cause__}")
        code = HTTP_CODES.get(exc.status_code, Code.HTTP_ERROR.value)
        return error_response(exc.status_code, code, str(exc.detail))
