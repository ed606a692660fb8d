"""Every failure answers JSON ``{"error", "detail"}`` with a 4xx status; a 5xx is a bug."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from budgetlab.models import ErrorBody, Remaining


class APIError(Exception):
    def __init__(self, status: int, error: str, detail: str, remaining: Remaining | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.remaining = remaining


def not_found(what: str) -> APIError:
    return APIError(404, "not_found", f"{what} does not exist")


def error_response(status: int, error: str, detail: Any, remaining: Remaining | None = None) -> JSONResponse:
    body = ErrorBody(error=error, detail=detail, remaining=remaining).model_dump(exclude_none=True)
    return JSONResponse(status_code=status, content=body)


def _validation_detail(exc: RequestValidationError) -> list[dict[str, Any]]:
    return [
        {"loc": [str(p) for p in err.get("loc", ())], "msg": str(err.get("msg", "")), "type": str(err.get("type", ""))}
        for err in exc.errors()
    ]


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api_error(_: Request, exc: APIError) -> JSONResponse:
        return error_response(exc.status, exc.error, exc.detail, exc.remaining)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "invalid_request", _validation_detail(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized"}
        return error_response(exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail))
