"""Session endpoints: open, the stream, observation, labels, predictions, evaluation, ledger, audit, close."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from budgetlab.ledger import ROW_FIELDS, canonical_json
from budgetlab.models import (
    AuditReport,
    ErrorBody,
    EvaluateRequest,
    EvaluateResponse,
    LabelRequest,
    LabelResponse,
    LedgerPage,
    MomentsResponse,
    NextResponse,
    ObserveBatchRequest,
    ObserveBatchResponse,
    ObserveRequest,
    ObserveResponse,
    PredictRequest,
    PredictResponse,
    SessionCreate,
    SessionCreated,
    SessionInfo,
    StepRequest,
    StepResponse,
)
from server.deps import Service, Token
from server.raw_bodies import documented, parsed
from server.sessions import export_header, promptly

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
SessionId = Annotated[str, Path(min_length=1, max_length=64)]

# The refusals an endpoint can answer, as (status, "error code: when"), from what ``budgetlab.engine`` and
# ``server.sessions`` raise on its path; each endpoint lists only its own.
Refusal = tuple[int, str]
UNAUTHORIZED = (401, "unauthorized: no bearer token, or one this oracle could not have issued (malformed, non-ASCII)")
NOT_FOUND = (404, "not_found: no session has this id, or the token is not its own")
INVALID = (422, "invalid_request: the path, query or body does not validate (see detail)")
TOO_LARGE = (413, "too_large: the body is larger than the oracle's limit (BUDGETLAB_MAX_BODY_BYTES)")
TOO_MANY_CELLS = (413, "too_many_cells: more cells or examples than one request may ask for "
                       "(BUDGETLAB_MAX_CELLS, BUDGETLAB_MAX_EXAMPLES): split it")
OVER_BUDGET = (402, "budget_exceeded: it would break the local budget k (per_example) or the global budget "
                    "(total); nothing was charged, and remaining says what is left")
CLOSED = (409, "session_closed: the session is closed")
DATASET_GONE = (409, "dataset_unavailable: the session's dataset can no longer be served (an admin removed it)")
BUSY = (503, "busy: the session's lock was not free within BUDGETLAB_LOCK_TIMEOUT; nothing was done, "
             "retry after Retry-After")
UNKNOWN_EXAMPLE = (404, "unknown_example: no example of a pool session has this id")
UNKNOWN_ATTRIBUTE = (404, "unknown_attribute: an attribute is not in 0..d-1")
NOT_ISSUED = (409, "example_not_issued: the stream has not issued this example yet")
DUPLICATE_ATTRIBUTES = (422, "duplicate_attributes: an attribute of an example is listed twice")
STREAM = ((409, "pool_order: a pool session has no next"), (409, "stream_exhausted: every example was issued"))
# Every endpoint that takes a session's token, and the ones that also load its dataset, write, or take a body.
AUTHENTICATED = (UNAUTHORIZED, NOT_FOUND, INVALID)
LOADED = (*AUTHENTICATED, DATASET_GONE)
WRITE = (*LOADED, CLOSED, BUSY)
BODY = (TOO_LARGE, INVALID)
OBSERVE = (*WRITE, *BODY, OVER_BUDGET, UNKNOWN_EXAMPLE, UNKNOWN_ATTRIBUTE, NOT_ISSUED, DUPLICATE_ATTRIBUTES,
           TOO_MANY_CELLS)


def refusals(*listed: Refusal) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of an endpoint: each status it can refuse with, described by its error codes."""
    by_status: dict[int, list[str]] = {}
    for status, what in listed:
        if what not in by_status.setdefault(status, []):
            by_status[status].append(what)
    return {status: {"model": ErrorBody, "description": "; ".join(by_status[status])} for status in sorted(by_status)}


def serialized(model: BaseModel) -> Response:
    """The hot endpoints' answer, built once: returning the model would make FastAPI validate it again."""
    return Response(model.model_dump_json(), media_type="application/json")


@router.post("", status_code=201, response_model=SessionCreated,
             responses=refusals(*BODY, (422, "invalid_session: an unknown dataset or parameter, or a part outside the "
                                              "split"), BUSY))
def open_session(body: SessionCreate, sessions: Service) -> SessionCreated:
    """Open a session on a dataset split with a budget; the token in the answer is shown only once."""
    return sessions.create(body)


@router.get("/{session_id}", response_model=SessionInfo, responses=refusals(*LOADED))
def get_session(session_id: SessionId, sessions: Service, token: Token) -> SessionInfo:
    """The session's configuration, what it spent and what remains of its budgets (never a value)."""
    return sessions.info(session_id, token)


@router.delete("/{session_id}", response_model=SessionInfo, responses=refusals(*WRITE))
def close_session(session_id: SessionId, sessions: Service, token: Token) -> SessionInfo:
    """Close the session: its ledger stays readable and auditable; every later charging request is a 409."""
    return sessions.close(session_id, token)


# Every endpoint that may wait for a lock is a plain ``def``: FastAPI runs it on the thread pool, so a wait never
# holds up the event loop and the other requests of this worker. The small per-example steps run ``promptly``:
# in place when their write needs no wait, else on the thread pool as well.


@router.post("/{session_id}/next", response_model=NextResponse, responses=refusals(*WRITE, OVER_BUDGET, *STREAM))
async def next_example(session_id: SessionId, sessions: Service, token: Token) -> Response:
    """Issue the next example of the stream (with its label in the batch protocol)."""
    return serialized(await promptly(sessions.next, session_id, token))


@router.post("/{session_id}/step", response_model=StepResponse,
             responses=refusals(*WRITE, *BODY, OVER_BUDGET, *STREAM, UNKNOWN_ATTRIBUTE, DUPLICATE_ATTRIBUTES,
                                TOO_MANY_CELLS))
async def step(session_id: SessionId, body: StepRequest, sessions: Service, token: Token) -> Response:
    """``next`` and ``observe`` of the issued example in one all-or-nothing request: a round of the batch protocol
    in one round trip (in the online protocol, ``predict`` completes the round)."""
    return serialized(await promptly(sessions.step, session_id, token, body))


@router.post("/{session_id}/observe", response_model=ObserveResponse, responses=refusals(*OBSERVE))
async def observe(session_id: SessionId, body: ObserveRequest, sessions: Service, token: Token) -> Response:
    """Pay for attributes of one example; already-paid ones are free. All or nothing (402 on any budget)."""
    return serialized(await promptly(sessions.observe, session_id, token, body))


@router.post("/{session_id}/observe/batch", response_model=ObserveBatchResponse,
             responses=refusals(*OBSERVE, (422, "duplicate_example: an example is listed twice")),
             openapi_extra=documented(ObserveBatchRequest))
async def observe_batch(session_id: SessionId, request: Request, sessions: Service, token: Token) -> Response:
    """Pay for attributes of many examples in one all-or-nothing request."""
    raw = await request.body()

    def run() -> Response:  # parsing a big body included: none of it on the event loop (server.raw_bodies)
        body = parsed(ObserveBatchRequest, raw)
        return Response(sessions.observe_batch_json(session_id, token, body.items, raw), media_type="application/json")

    return await run_in_threadpool(run)


@router.post("/{session_id}/label", response_model=LabelResponse,
             responses=refusals(*WRITE, *BODY, OVER_BUDGET, UNKNOWN_EXAMPLE, NOT_ISSUED,
                                (409, "online_protocol: predict reveals the labels of an online session")))
async def label(session_id: SessionId, body: LabelRequest, sessions: Service, token: Token) -> Response:
    """Reveal a training label (batch protocol); a second reveal of the same label is free."""
    return serialized(await promptly(sessions.label, session_id, token, body))


@router.post("/{session_id}/predict", response_model=PredictResponse,
             responses=refusals(*WRITE, *BODY, UNKNOWN_EXAMPLE, NOT_ISSUED,
                                (409, "batch_protocol: predict belongs to online and test sessions"),
                                (409, "already_predicted: this example already has a prediction"),
                                (422, "invalid_prediction: its squared loss overflows")))
async def predict(session_id: SessionId, body: PredictRequest, sessions: Service, token: Token) -> Response:
    """Commit a prediction for an example, then learn its label (online protocol and test sessions)."""
    return serialized(await promptly(sessions.predict, session_id, token, body))


@router.post("/{session_id}/evaluate", response_model=EvaluateResponse,
             responses=refusals(*WRITE, *BODY, (422, "invalid_weights: not d weights, or weights whose test error "
                                                          "overflows")))
def evaluate(session_id: SessionId, body: EvaluateRequest, sessions: Service, token: Token) -> EvaluateResponse:
    """Full-information test error of a linear predictor: free, but recorded in the ledger."""
    return sessions.evaluate(session_id, token, body)


@router.post("/{session_id}/moments", response_model=MomentsResponse,
             responses=refusals(*WRITE, (409, "test_session: prior knowledge is for training sessions")))
def moments(session_id: SessionId, sessions: Service, token: Token) -> MomentsResponse:
    """Declared prior knowledge: E[x_i^2] over the training split (recorded in the ledger)."""
    return sessions.moments(session_id, token)


@router.get("/{session_id}/ledger", response_model=LedgerPage, responses={
    200: {"description": "a page of rows (format=json), or the export (format=ndjson or csv)",
          "content": {"application/x-ndjson": {"schema": {"type": "string"}},
                      "text/csv": {"schema": {"type": "string"}}}},
    **refusals(*AUTHENTICATED),
})
def ledger(
    session_id: SessionId,
    sessions: Service,
    token: Token,
    after: Annotated[int, Query(ge=-1, le=2**62, description="rows after this seq (-1: from the first row)")] = -1,
    limit: Annotated[int, Query(ge=1, le=10_000, description="rows per page (json only)")] = 1000,
    format: Annotated[Literal["json", "ndjson", "csv"], Query(description="a page, or the whole export")] = "json",
) -> LedgerPage | StreamingResponse:
    """A page of the ledger (json), or the whole ledger from ``after`` on as an NDJSON or CSV export.

    The NDJSON export starts with ``{"type": "ledger", "format": 2, ...}`` and ends with the session's recorded
    counters (``{"type": "head", ...}``), which ``budgetlab audit FILE`` checks offline.
    """
    if format == "json":
        rows, next_after = sessions.ledger_page(session_id, token, after, limit)
        return LedgerPage(rows=rows, next_after=next_after)
    # Authenticate before streaming starts: once the status line is out, an error can no longer be a 404.
    head = sessions.head(session_id, token)
    rows_iter = sessions.iter_ledger(session_id, token, after)
    if format == "ndjson":

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


@router.get("/{session_id}/audit", response_model=AuditReport, responses=refusals(*AUTHENTICATED))
def audit(session_id: SessionId, sessions: Service, token: Token) -> AuditReport:
    """Recompute every budget from the rows, the per-example maxima and the hash chain."""
    return sessions.audit(session_id, token)
