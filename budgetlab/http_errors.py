"""Every failure of both services answers JSON ``{"error", "detail"}`` with a 4xx status; a 5xx is a bug.

Also the one translation of a pydantic validation error into a refusal, used by the services for request
bodies and by the in-process oracle for the same models, so both refuse bad input alike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from budgetlab.errors import OracleError, Refused
from budgetlab.models import ErrorBody, Remaining

INVALID_REQUEST = "invalid_request"


def error_body(error: str, detail: Any, remaining: Remaining | None = None) -> dict[str, Any]:
    """The JSON body of every refusal."""
    return ErrorBody(error=error, detail=detail, remaining=remaining).model_dump(exclude_none=True)


def error_response(status: int, error: str, detail: Any, remaining: Remaining | None = None,
                   retry_after: float | None = None) -> JSONResponse:
    body = error_body(error, detail, remaining)
    headers = None if retry_after is None else {"Retry-After": str(max(1, round(retry_after)))}
    return JSONResponse(status_code=status, content=body, headers=headers)


def validation_detail(errors: Sequence[Any], drop_body: bool = False) -> list[dict[str, Any]]:
    """pydantic's errors as plain JSON: where (``loc``), what (``msg``) and which rule (``type``)."""
    out = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ())]
        if drop_body and loc[:1] == ["body"]:
            loc = loc[1:]
        out.append({"loc": loc, "msg": str(err.get("msg", "")), "type": str(err.get("type", ""))})
    return out


def invalid_request(exc: ValidationError) -> OracleError:
    """The oracle's 422 for a request model that does not validate (in-process, as over HTTP)."""
    return OracleError(422, INVALID_REQUEST, _summary(validation_detail(exc.errors())))


def _summary(detail: list[dict[str, Any]]) -> str:
    return "; ".join(f"{'.'.join(d['loc']) or 'body'}: {d['msg']}" for d in detail)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(Refused)
    async def _refused(_: Request, exc: Refused) -> JSONResponse:
        return error_response(exc.status, exc.error, exc.detail, exc.remaining, exc.retry_after)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, INVALID_REQUEST, validation_detail(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized", 413: "too_large"}
        return error_response(exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail))


class JsonHttpProtocol(HttpToolsProtocol):
    """uvicorn's fast (httptools) HTTP protocol, whose refusal of a request it cannot parse (a control character
    in a header, a malformed request line) is JSON like every other refusal, not uvicorn's plain text."""

    def send_400_response(self, msg: str) -> None:
        body = json.dumps(error_body("bad_request", f"the HTTP request is malformed: {msg}")).encode()
        head = [b"HTTP/1.1 400 Bad Request\r\n"]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(body),
                 b"connection: close\r\n\r\n"]
        self.transport.write(b"".join(head) + body)
        self.transport.close()
