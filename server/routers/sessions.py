"""Session endpoints, made from the table of operations (``budgetlab.operations``): one route per operation, its
method, path, models, description and refusals as the table declares them, plus opening a session.

Every route that may wait for a lock is a plain ``def`` (FastAPI runs it on the thread pool, so a wait never holds
up the event loop and the worker's other requests), but the small per-example steps (``Operation.small``), which
run ``promptly``: in place when their write needs no wait, else on the thread pool as well. Two routes are the
table's with a body of their own: ``observe_batch`` parses its (big) body on the thread pool, and ``ledger``
also streams the whole ledger as an export.
"""

from __future__ import annotations

import csv
import inspect
import io
import json
from collections.abc import Callable, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from budgetlab.contract.calls import ObserveBatchRequest
from budgetlab.contract.ledger import LedgerQuery
from budgetlab.contract.sessions import SessionCreate, SessionCreated
from budgetlab.errors import responses
from budgetlab.ledger import ROW_FIELDS, canonical_json
from budgetlab.operations import OPEN_REFUSALS, OPERATIONS, Operation, SessionOperations
from server.deps import Service, Token
from server.raw_bodies import documented, parsed
from server.sessions import export_header, promptly

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
SessionId = Annotated[str, Path(min_length=1, max_length=64)]


def serialized(model: BaseModel) -> Response:
    """An answer built once: returning the model would make FastAPI validate it again."""
    return Response(model.model_dump_json(), media_type="application/json")


@router.post("", status_code=201, response_model=SessionCreated, responses=responses(*OPEN_REFUSALS))
def open_session(body: SessionCreate, sessions: Service) -> SessionCreated:
    """Open a session on a dataset split with a budget; the token in the answer is shown only once."""
    return sessions.create(body)


def endpoint(op: Operation[..., Any]) -> Callable[..., Any]:
    """The route of an operation: its request (a body, or the query of a GET) validated by FastAPI, then
    ``SessionService.perform``."""
    if op.small:

        async def small(session_id: str, sessions: Service, token: Token, body: BaseModel | None = None) -> Response:
            return serialized(await promptly(sessions.perform, op, session_id, token, body))

        route: Callable[..., Any] = small
    else:

        def route(session_id: str, sessions: Service, token: Token, body: BaseModel | None = None) -> Response:
            return serialized(sessions.perform(op, session_id, token, body))

    parameters = [inspect.Parameter("session_id", inspect.Parameter.KEYWORD_ONLY, annotation=SessionId),
                  inspect.Parameter("sessions", inspect.Parameter.KEYWORD_ONLY, annotation=Service),
                  inspect.Parameter("token", inspect.Parameter.KEYWORD_ONLY, annotation=Token)]
    if op.request is not None:
        annotation = Annotated[op.request, Query()] if op.method == "GET" else op.request
        parameters.append(inspect.Parameter("body", inspect.Parameter.KEYWORD_ONLY, annotation=annotation))
    # What FastAPI reads the route's parameters from (setattr: a function has no such attribute to type).
    setattr(route, "__signature__", inspect.Signature(parameters))  # noqa: B010
    return route


def ledger(session_id: SessionId, sessions: Service, token: Token,
           query: Annotated[LedgerQuery, Query()]) -> Response:
    if query.format == "json":
        return serialized(sessions.page(session_id, token, query))
    # Authenticate before streaming starts: once the status line is out, an error can no longer be a 404.
    head = sessions.head(session_id, token)
    rows_iter = sessions.iter_ledger(session_id, token, query.after)
    if query.format == "ndjson":

        def ndjson() -> Iterator[str]:
            yield json.dumps(export_header(session_id)) + "\n"
            dumps = json.dumps
            lines: list[str] = []
            for row in rows_iter:
                lines.append(dumps(row))
                if len(lines) >= 2000:
                    yield "\n".join(lines) + "\n"
                    lines.clear()
            if lines:
                yield "\n".join(lines) + "\n"
            yield json.dumps(head) + "\n"

        return StreamingResponse(ndjson(), media_type="application/x-ndjson",
                                 headers={"Content-Disposition": f'attachment; filename="{session_id}.ndjson"'})

    def as_csv() -> Iterator[str]:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=ROW_FIELDS)
        writer.writeheader()
        for i, row in enumerate(rows_iter, start=1):
            writer.writerow({**row, "payload": canonical_json(row["payload"])})
            if i % 2000 == 0:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue()

    return StreamingResponse(as_csv(), media_type="text/csv")


async def observe_batch(session_id: SessionId, request: Request, sessions: Service, token: Token) -> Response:
    raw = await request.body()

    def run() -> Response:  # parsing a big body included: none of it on the event loop (server.raw_bodies)
        body = parsed(ObserveBatchRequest, raw)
        return Response(sessions.observe_batch_json(session_id, token, body.items, raw), media_type="application/json")

    return await run_in_threadpool(run)


# The operations whose route is not ``endpoint``'s, and what their OpenAPI entries say beyond the table.
OWN_ROUTES: dict[str, Callable[..., Any]] = {SessionOperations.observe_batch.name: observe_batch,
                                             SessionOperations.ledger.name: ledger}
OPENAPI_EXTRA: dict[str, dict[str, Any]] = {SessionOperations.observe_batch.name: documented(ObserveBatchRequest)}
ANSWERS: dict[str, dict[int | str, dict[str, Any]]] = {SessionOperations.ledger.name: {
    200: {"description": "a page of rows (format=json), or the export (format=ndjson or csv)",
          "content": {"application/x-ndjson": {"schema": {"type": "string"}},
                      "text/csv": {"schema": {"type": "string"}}}},
}}


def add_routes() -> None:
    for op in OPERATIONS.values():
        router.add_api_route(
            op.url.removeprefix(router.prefix), OWN_ROUTES.get(op.name) or endpoint(op), methods=[op.method],
            name=op.name, description=op.doc, response_model=op.response,
            responses={**ANSWERS.get(op.name, {}), **responses(*op.all_refusals)},
            openapi_extra=OPENAPI_EXTRA.get(op.name))


add_routes()
