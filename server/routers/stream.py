"""A session over one WebSocket: the same requests as the HTTP endpoints, without a round of HTTP for each.

``GET /v1/sessions/{id}/stream`` upgrades to a WebSocket; the handshake carries the session's bearer token
(``Authorization`` header); a handshake without a token or with one that does not match is refused with the HTTP
status and JSON error body a request would get (401, 404), or, behind a server without the WebSocket denial
extension, with close code 4000 + that status (4401, 4404).
Each text message is one request, ``{"op": OP, "body": {...}}``, answered in order by one message
``"STATUS BODY"``: the status an HTTP request would get, a space, and the very JSON body it would get (the
answer, or ``{"error", "detail", ...}``). Bodies are validated by the wire models, and answered by the session
service, exactly as over HTTP: the transport is all that differs.

Nothing a client sends ends the connection: a binary frame, a message that is not JSON or nested too deep to
parse, or an ``op`` that is not an operation's name is answered ``400 {"error": "invalid_message" | "unknown_op"}``,
and the stream stays open. The one exception is the WebSocket protocol's own: a text frame that is not UTF-8 is
closed by the server with code 1007 (RFC 6455), before the application sees it. Each message takes a token of its
session token's request rate, as an HTTP request carrying it does (``web.rates``): past it the message is answered
``429 {"error": "rate_limited", "retry_after": SECONDS}``, nothing done, and the stream stays open.

``OPS`` are the operations of the table (``budgetlab.operations``) offered on the stream (``Operation.stream``:
all but ``close`` and the reads of the recorded ledger). Single queries by hand stay plain HTTP (curl).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from pydantic_core import from_json
from starlette.concurrency import run_in_threadpool

from budgetlab.bearer import bearer_token
from budgetlab.contract.calls import ObserveBatchRequest, StepsRequest
from budgetlab.errors import Code, Refused, error_body, invalid_request
from budgetlab.operations import OPERATIONS, Operation, SessionOperations
from server.sessions import SessionService
from web.rates import Buckets, key_of

log = logging.getLogger(__name__)


class _NoTraceback(logging.Filter):
    """uvicorn logs its refusal of a text frame that is not UTF-8 with a traceback: a client sending such frames
    would write thirty lines of log each. One line says it all."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("Invalid UTF-8"):
            record.exc_info = record.exc_text = None
        return True


logging.getLogger("uvicorn.error").addFilter(_NoTraceback())
router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
# From this many characters on, a message is parsed on the thread pool: a step's is a few dozen, a 10,000-cell
# observe_batch's about 40,000, whose json.loads alone holds the event loop for a third of a millisecond.
BIG_MESSAGE = 16_384
OPS: dict[str, Operation[..., Any]] = {name: op for name, op in OPERATIONS.items() if op.stream}


def call(op: Operation[..., Any], sessions: SessionService, session_id: str, token: str,
         request: BaseModel | None) -> BaseModel | bytes:
    """The operation on the session, as over HTTP: ``observe_batch`` as JSON, and a big one through the batch
    process (``server.batch_preparation``)."""
    if op is SessionOperations.observe_batch:
        assert isinstance(request, ObserveBatchRequest)
        return sessions.batches.observe_json(session_id, token, request.items, request.model_dump_json().encode())
    return sessions.perform(op, session_id, token, request)


def _error(status: int, body: dict[str, Any]) -> str:
    return f"{status} {json.dumps(body)}"


def _refused(exc: Refused) -> str:
    body = error_body(exc.error, exc.detail, exc.remaining)
    if exc.retry_after is not None:  # what HTTP says in its Retry-After header
        body["retry_after"] = exc.retry_after
    return _error(exc.status, body)


async def answer(sessions: SessionService, session_id: str, token: str, message: str) -> str:
    """The reply to one message, as ``"STATUS BODY"``; never raises for anything a client sends.

    Only a small step's message is read, checked and answered on the event loop, in the group of the steps ready at
    once (``server.scheduling.GroupCommit``). Any other is
    handled whole on the thread pool, a big ``observe_batch`` message's parsing and its answer's JSON included,
    so the worker's other requests do not wait behind them."""
    if len(message) >= BIG_MESSAGE:
        return await run_in_threadpool(_answer_here, sessions, session_id, token, message)
    parsed = _parse(message)
    if isinstance(parsed, str):
        return parsed
    op, body = parsed
    if not op.small:
        return await run_in_threadpool(_reply, op, sessions, session_id, token, body)
    try:
        request = None if op.request is None else op.request.model_validate(body or {})
        result = await sessions.group.run(session_id, sessions.perform, op, session_id, token, request)
    except ValidationError as exc:
        return _refused(invalid_request(exc))
    except Refused as exc:
        return _refused(exc)
    return f"200 {result.model_dump_json()}"


def _parse(message: str) -> tuple[Operation[..., Any], Any] | str:
    """The message's operation and raw body, or the refusal of a message that names none."""
    try:
        request = _loads(message)
    except ValueError:
        return _invalid_message("a message is JSON: {\"op\": ..., \"body\": ...}")
    except RecursionError:
        return _invalid_message("the message is nested too deep to parse")
    name = request.get("op") if isinstance(request, dict) else None
    op = OPS.get(name) if isinstance(name, str) else None
    if op is None:
        return _error(Code.UNKNOWN_OP.status, {"error": Code.UNKNOWN_OP.value,
                                               "detail": f"op must be one of {', '.join(OPS)}"})
    return op, request.get("body")


def _loads(message: str) -> Any:
    """The message parsed: a big one (a ``steps`` request's 100,000 ints) by pydantic's parser in Rust, twice as fast
    as the standard library's; one it refuses by the standard library's, whose errors the refusals name."""
    if len(message) >= BIG_MESSAGE:
        try:
            return from_json(message)
        except ValueError:
            pass
    return json.loads(message)


def _invalid_message(detail: str) -> str:
    return _error(Code.INVALID_MESSAGE.status, {"error": Code.INVALID_MESSAGE.value, "detail": detail})


def _reply(op: Operation[..., Any], sessions: SessionService, session_id: str, token: str, body: Any) -> str:
    """Validate, call and serialise, blocking (on the thread pool)."""
    try:
        request = None if op.request is None else op.request.model_validate(body or {})
    except ValidationError as exc:
        return _refused(invalid_request(exc))
    return _called(op, sessions, session_id, token, request)


def _called(op: Operation[..., Any], sessions: SessionService, session_id: str, token: str,
            request: BaseModel | None) -> str:
    try:
        answer = call(op, sessions, session_id, token, request)
        return f"200 {answer.decode() if isinstance(answer, bytes) else answer.model_dump_json()}"
    except ValidationError as exc:
        return _refused(invalid_request(exc))
    except Refused as exc:
        return _refused(exc)


# How the SDK writes a ``steps`` message (``budgetlab.session_stream``), byte for byte up to its body.
STEPS_MESSAGE = '{"op":"steps","body":'


def _steps_request(message: str) -> StepsRequest | None:
    """A ``steps`` message written as the SDK writes it, its request validated from its body's JSON at once, no
    Python objects made of its 100,000 ints first (half the CPU of parsing, then validating); None for any other
    message, and for one the model refuses: the general path answers it, with its refusal."""
    if not (message.startswith(STEPS_MESSAGE) and message.endswith("}")):
        return None
    try:
        return StepsRequest.model_validate_json(message[len(STEPS_MESSAGE) : -1])
    except ValidationError:
        return None


def _answer_here(sessions: SessionService, session_id: str, token: str, message: str) -> str:
    steps = _steps_request(message)
    if steps is not None:
        return _called(SessionOperations.steps, sessions, session_id, token, steps)
    parsed = _parse(message)
    return parsed if isinstance(parsed, str) else _reply(parsed[0], sessions, session_id, token, parsed[1])


@router.websocket("/{session_id}/stream")
async def stream(websocket: WebSocket, session_id: str) -> None:
    """Drive a session over one WebSocket (see the module's docstring for the messages)."""
    sessions: SessionService = websocket.app.state.sessions
    token = bearer_token(websocket.headers.get("authorization"))
    if token is None:
        await _deny(websocket, Code.UNAUTHORIZED.status, Code.UNAUTHORIZED.value,
                    "send the session's token as 'Authorization: Bearer <token>'")
        return
    try:
        await run_in_threadpool(sessions.info, session_id, token)
    except Refused as exc:
        await _deny(websocket, exc.status, exc.error, exc.detail)
        return
    await websocket.accept()
    keys: Buckets | None = websocket.app.state.key_rates
    key = key_of(token.encode())
    while True:
        try:
            message = await websocket.receive()
        except WebSocketDisconnect:
            return
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        limited = keys.refusal(key, "requests", "key") if keys is not None else None
        if limited is not None:
            wait, detail = limited
            reply = _error(Code.RATE_LIMITED.status, {**error_body(Code.RATE_LIMITED.value, detail),
                                                      "retry_after": wait})
        elif text is None:
            reply = _invalid_message("send each request as a text frame, not a binary one")
        else:
            try:
                reply = await answer(sessions, session_id, token, text)
            except Exception as exc:  # the stream outlives a bug: the client gets a 500, the log one line
                log.error("stream %s: %s answering a message: %s", session_id, type(exc).__name__, exc)
                reply = _error(Code.INTERNAL_ERROR.status, {"error": Code.INTERNAL_ERROR.value,
                                                            "detail": "the oracle failed to answer; see its log"})
        await websocket.send_text(reply)


async def _deny(websocket: WebSocket, status: int, error: str, detail: str) -> None:
    """Refuse the handshake with the HTTP answer a request would get, or a close code where that cannot be sent."""
    try:
        await websocket.send_denial_response(JSONResponse(error_body(error, detail), status_code=status))
    except RuntimeError:  # the server lacks the denial extension (wsproto, say)
        await websocket.close(code=4000 + status, reason=detail[:120])
