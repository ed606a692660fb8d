"""Session endpoints, made from the table of operations (``budgetlab.operations``): one route per operation, its
method, path, models, description and refusals as the table declares them, plus opening a session.

Every route that may wait for a lock is a plain ``def`` (FastAPI runs it on the thread pool, so a wait never holds
up the event loop and the worker's other requests), but the small per-example steps (``Operation.small``), which
run in the group of the steps ready at once (``server.scheduling.GroupCommit``): in place when their write needs no
wait, else on the thread pool as well. A well-formed request of such a step is answered before it reaches these
routes (``server.small_steps``); they answer what that does not take, and are the OpenAPI document's. Two routes are the
table's with a body of their own: ``observe_batch`` and ``steps`` parse their (big) bodies on the thread pool, and
``ledger`` also streams the whole ledger as an export.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from budgetlab.contract.calls import ObserveBatchRequest, StepsRequest
from budgetlab.contract.ledger import LedgerQuery
from budgetlab.contract.sessions import SessionCreate, SessionCreated
from budgetlab.errors import responses
from budgetlab.operations import OPEN_REFUSALS, OPERATIONS, Operation, SessionOperations
from server.deps import ApiKey, Service, Token
from server.raw_bodies import documented, parsed

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
SessionId = Annotated[str, Path(min_length=1, max_length=64)]


def serialized(model: BaseModel) -> Response:
    """An answer built once: returning the model would make FastAPI validate it again. Its JSON as the serializer's
    bytes (``model_dump_json``'s, not decoded to a str to be encoded again: a steps answer's is 1.9 MB)."""
    return Response(model.__pydantic_serializer__.to_json(model), media_type="application/json")


# The account's key is optional where the oracle opens anonymous sessions: {} is the OpenAPI for "or none" (FastAPI
# adds it to the AccountKey requirement that the route's dependency declares; the app states the pair at the
# document's root, web.openapi_security says why).
@router.post("", status_code=201, response_model=SessionCreated, responses=responses(*OPEN_REFUSALS),
             openapi_extra={"security": [{}]})
def open_session(body: SessionCreate, sessions: Service, key: ApiKey) -> SessionCreated:
    """Open a session on a dataset split with a budget; the token in the answer is shown only once.

    With an account's API key as the bearer, the session draws on the account's allowance, which completes and
    bounds its budget; without one it is anonymous, where the oracle opens such sessions."""
    return sessions.create(body, key)


def endpoint(op: Operation[..., Any]) -> Callable[..., Any]:
    """The route of an operation: its request (a body, or the query of a GET) validated by FastAPI, then
    ``SessionService.perform``."""
    if op.small:

        async def small(session_id: str, sessions: Service, token: Token, body: BaseModel | None = None) -> Response:
            return serialized(await sessions.group.run(session_id, sessions.perform, op, session_id, token, body))

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
    if query.format == "ndjson":
        return StreamingResponse(sessions.export.ndjson(session_id, token, query.after),
                                 media_type="application/x-ndjson",
                                 headers={"Content-Disposition": f'attachment; filename="{session_id}.ndjson"'})
    return StreamingResponse(sessions.export.csv(session_id, token, query.after), media_type="text/csv")


async def observe_batch(session_id: SessionId, request: Request, sessions: Service, token: Token) -> Response:
    raw = await request.body()

    def run() -> Response:  # parsing a big body included: none of it on the event loop (server.raw_bodies)
        body = parsed(ObserveBatchRequest, raw)
        answer = sessions.batches.observe_json(session_id, token, body.items, raw)
        return Response(answer, media_type="application/json")

    return await run_in_threadpool(run)


async def steps(session_id: SessionId, request: Request, sessions: Service, token: Token) -> Response:
    raw = await request.body()

    def run() -> Response:  # a body of up to 100,000 attributes: parsed on the thread pool too (server.raw_bodies)
        return serialized(sessions.perform(SessionOperations.steps, session_id, token, parsed(StepsRequest, raw)))

    return await run_in_threadpool(run)


# The operations whose route is not ``endpoint``'s, and what their OpenAPI entries say beyond the table.
OWN_ROUTES: dict[str, Callable[..., Any]] = {SessionOperations.observe_batch.name: observe_batch,
                                             SessionOperations.steps.name: steps,
                                             SessionOperations.ledger.name: ledger}
OPENAPI_EXTRA: dict[str, dict[str, Any]] = {SessionOperations.observe_batch.name: documented(ObserveBatchRequest),
                                            SessionOperations.steps.name: documented(StepsRequest)}
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
