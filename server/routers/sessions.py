"""Session endpoints: open, the stream, observation, labels, predictions, evaluation, ledger, audit, close."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel

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
from server.sessions import export_header, promptly

ERRORS = {code: {"model": ErrorBody} for code in (401, 402, 404, 409, 422, 503)}
router = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses=ERRORS)
SessionId = Annotated[str, Path(min_length=1, max_length=64)]


def serialized(model: BaseModel) -> Response:
    """The hot endpoints' answer, built once: returning the model would make FastAPI validate it again."""
    return Response(model.model_dump_json(), media_type="application/json")


@router.post("", status_code=201, response_model=SessionCreated)
def open_session(body: SessionCreate, sessions: Service) -> SessionCreated:
    """Open a session on a dataset split with a budget; the token in the answer is shown only once."""
    return sessions.create(body)


@router.get("/{session_id}", response_model=SessionInfo)
def get_session(session_id: SessionId, sessions: Service, token: Token) -> SessionInfo:
    return sessions.info(session_id, token)


@router.delete("/{session_id}", response_model=SessionInfo)
def close_session(session_id: SessionId, sessions: Service, token: Token) -> SessionInfo:
    return sessions.close(session_id, token)


# Every endpoint that may wait for a lock is a plain ``def``: FastAPI runs it on the thread pool, so a wait never
# holds up the event loop and the other requests of this worker. The small per-example steps run ``promptly``:
# in place when their write needs no wait, else on the thread pool as well.


@router.post("/{session_id}/next", response_model=NextResponse)
async def next_example(session_id: SessionId, sessions: Service, token: Token) -> Response:
    """Issue the next example of the stream (with its label in the batch protocol)."""
    return serialized(await promptly(sessions.next, session_id, token))


@router.post("/{session_id}/step", response_model=StepResponse)
async def step(session_id: SessionId, body: StepRequest, sessions: Service, token: Token) -> Response:
    """``next`` and ``observe`` of the issued example in one all-or-nothing request: a round of the batch protocol
    in one round trip (in the online protocol, ``predict`` completes the round)."""
    return serialized(await promptly(sessions.step, session_id, token, body))


@router.post("/{session_id}/observe", response_model=ObserveResponse)
async def observe(session_id: SessionId, body: ObserveRequest, sessions: Service, token: Token) -> Response:
    """Pay for attributes of one example; already-paid ones are free. All or nothing (402 on any budget)."""
    return serialized(await promptly(sessions.observe, session_id, token, body))


@router.post("/{session_id}/observe/batch", response_model=ObserveBatchResponse)
def observe_batch(session_id: SessionId, body: ObserveBatchRequest, sessions: Service, token: Token) -> Response:
    """Pay for attributes of many examples in one all-or-nothing request."""
    return serialized(sessions.observe_batch(session_id, token, body.items))


@router.post("/{session_id}/label", response_model=LabelResponse)
async def label(session_id: SessionId, body: LabelRequest, sessions: Service, token: Token) -> Response:
    """Reveal a training label (batch protocol); a second reveal of the same label is free."""
    return serialized(await promptly(sessions.label, session_id, token, body))


@router.post("/{session_id}/predict", response_model=PredictResponse)
async def predict(session_id: SessionId, body: PredictRequest, sessions: Service, token: Token) -> Response:
    """Commit a prediction for an example, then learn its label (online protocol and test sessions)."""
    return serialized(await promptly(sessions.predict, session_id, token, body))


@router.post("/{session_id}/evaluate", response_model=EvaluateResponse)
def evaluate(session_id: SessionId, body: EvaluateRequest, sessions: Service, token: Token) -> EvaluateResponse:
    """Full-information test error of a linear predictor: free, but recorded in the ledger."""
    return sessions.evaluate(session_id, token, body)


@router.post("/{session_id}/moments", response_model=MomentsResponse)
def moments(session_id: SessionId, sessions: Service, token: Token) -> MomentsResponse:
    """Declared prior knowledge: E[x_i^2] over the training split (recorded in the ledger)."""
    return sessions.moments(session_id, token)


@router.get("/{session_id}/ledger", response_model=LedgerPage)
def ledger(
    session_id: SessionId,
    sessions: Service,
    token: Token,
    after: Annotated[int, Query(ge=-1, le=2**62)] = -1,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    format: Annotated[Literal["json", "ndjson", "csv"], Query()] = "json",
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


@router.get("/{session_id}/audit", response_model=AuditReport)
def audit(session_id: SessionId, sessions: Service, token: Token) -> AuditReport:
    """Recompute every budget from the rows, the per-example maxima and the hash chain."""
    return sessions.audit(session_id, token)
