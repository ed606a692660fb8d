"""Python SDK of the feature oracle: ``OracleClient`` (sync) and ``AsyncOracleClient`` (asyncio), both httpx.

Each endpoint is described once, as a ``Call``; the sync and async clients only differ in how they send it
(``budgetlab.service_client``, shared with ``LearnerClient``)::

    with OracleClient("http://127.0.0.1:8000") as oracle:
        session = oracle.open_session("mnist-3v5", budget={"per_example": 57})
        example = session.next()
        values = session.observe(example.example, [17, 300]).values
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from budgetlab.errors import OracleUnavailable, SessionBusy, oracle_refusal
from budgetlab.models import (
    AuditReport,
    Budget,
    DatasetInfo,
    DatasetList,
    EvaluateResponse,
    LabelResponse,
    LedgerPage,
    LedgerRow,
    MomentsResponse,
    NextResponse,
    ObserveBatchResponse,
    ObserveResponse,
    ParamValue,
    PredictResponse,
    Receipt,
    SessionCreated,
    SessionInfo,
    StepResponse,
)
from budgetlab.service_client import AsyncServiceClient, Call, M, Service, ServiceClient
from budgetlab.session_stream import AsyncSessionStream, SessionStream, open_async_stream, open_stream

# Answers of the charging requests, each of which carries a receipt (the session's new chain head).
C = TypeVar("C", NextResponse, StepResponse, ObserveResponse, ObserveBatchResponse, LabelResponse, PredictResponse)
# A session request refused ``busy`` (its lock was not free within the oracle's lock timeout; nothing was done) is
# sent again this many times, after the Retry-After the oracle gave, capped: a run survives a burst of contention.
BUSY_RETRIES = 3
MAX_BUSY_WAIT = 5.0


def _busy_wait(exc: SessionBusy) -> float:
    return min(exc.retry_after if exc.retry_after is not None else 1.0, MAX_BUSY_WAIT)

DEFAULT_ORACLE_URL = "http://127.0.0.1:8000"
# A busy session (503 with Retry-After) is a refusal: nothing was done, so a retry is safe.
ORACLE = Service("the oracle", oracle_refusal, OracleUnavailable, refusing_5xx=frozenset({503}))
raise_for_error = ORACLE.raise_for


def _budget(budget: Budget | dict[str, Any] | None) -> dict[str, Any]:
    if budget is None:
        return {}
    return budget.model_dump(exclude_none=True) if isinstance(budget, Budget) else dict(budget)


class SessionCalls:
    """The session endpoints as ``Call``s, shared by the sync and async session objects."""

    def __init__(self, session_id: str, token: str) -> None:
        self.id = session_id
        self.token = token

    def _call(self, method: str, suffix: str, model: type[M] | None, **kw: Any) -> Call[M]:
        return Call(method, f"/v1/sessions/{self.id}{suffix}", model, token=self.token, **kw)

    def get(self) -> Call[SessionInfo]:
        return self._call("GET", "", SessionInfo, op="get")

    def next(self) -> Call[NextResponse]:
        return self._call("POST", "/next", NextResponse, op="next")

    def step(self, attributes: Sequence[int]) -> Call[StepResponse]:
        return self._call("POST", "/step", StepResponse, json={"attributes": [int(a) for a in attributes]},
                          op="step")

    def observe(self, example: int, attributes: Sequence[int]) -> Call[ObserveResponse]:
        return self._call("POST", "/observe", ObserveResponse,
                          json={"example": int(example), "attributes": [int(a) for a in attributes]}, op="observe")

    def observe_batch(self, items: Sequence[tuple[int, Sequence[int]]]) -> Call[ObserveBatchResponse]:
        body = {"items": [{"example": int(e), "attributes": [int(a) for a in attrs]} for e, attrs in items]}
        return self._call("POST", "/observe/batch", ObserveBatchResponse, json=body, op="observe_batch")

    def label(self, example: int) -> Call[LabelResponse]:
        return self._call("POST", "/label", LabelResponse, json={"example": int(example)}, op="label")

    def predict(self, example: int, prediction: float) -> Call[PredictResponse]:
        return self._call("POST", "/predict", PredictResponse,
                          json={"example": int(example), "prediction": float(prediction)}, op="predict")

    def evaluate(self, weights: Sequence[float], bias: float = 0.0) -> Call[EvaluateResponse]:
        return self._call("POST", "/evaluate", EvaluateResponse,
                          json={"weights": [float(w) for w in weights], "bias": float(bias)}, op="evaluate")

    def moments(self) -> Call[MomentsResponse]:
        return self._call("POST", "/moments", MomentsResponse, op="moments")

    def ledger(self, after: int = -1, limit: int = 1000) -> Call[LedgerPage]:
        return self._call("GET", "/ledger", LedgerPage, params={"after": after, "limit": limit})

    def export(self, format: str = "ndjson") -> Call[BaseModel]:
        return self._call("GET", "/ledger", None, params={"format": format})

    def audit(self) -> Call[AuditReport]:
        return self._call("GET", "/audit", AuditReport)

    def close(self) -> Call[SessionInfo]:
        return self._call("DELETE", "", SessionInfo)


def _open_call(
    dataset: str, *, dataset_params: dict[str, ParamValue] | None, split: str, protocol: str, order: str,
    budget: Budget | dict[str, Any] | None, seed: int,
) -> Call[SessionCreated]:
    body = {"dataset": dataset, "dataset_params": dataset_params or {}, "split": split, "protocol": protocol,
            "order": order, "budget": _budget(budget), "seed": seed}
    return Call("POST", "/v1/sessions", SessionCreated, json=body)


# --- sync ----------------------------------------------------------------------------------------


class OracleSession:
    """One oracle session, bound to its id and token."""

    def __init__(self, client: OracleClient, session_id: str, token: str, info: SessionInfo | None = None) -> None:
        self._client = client
        self.calls = SessionCalls(session_id, token)
        self.id = session_id
        self.token = token
        self.info = info
        # The chain head of the last request that recorded anything: proof of what the ledger held then.
        self.receipt: Receipt | None = None
        self._stream: SessionStream | None = None
        self._streams = client.streams

    @property
    def transport(self) -> str:
        """How session requests travel now: ``websocket`` or ``http``."""
        return "websocket" if self._stream is not None else "http"

    def _send(self, call: Call[M]) -> M:
        """Over the session's stream when the oracle offers one (opened at the first request), else HTTP; a
        ``busy`` refusal (nothing was done) is tried again after its Retry-After, ``busy_retries`` times."""
        for attempt in range(self._client.busy_retries + 1):
            try:
                return self._send_once(call)
            except SessionBusy as exc:
                if attempt == self._client.busy_retries:
                    raise
                time.sleep(_busy_wait(exc))
        raise AssertionError("unreachable")

    def _send_once(self, call: Call[M]) -> M:
        if self._streams and self._stream is None:
            self._stream = self._client.open_stream(self.id, self.token)
            self._streams = self._stream is not None
        if self._stream is None:
            return self._client.send(call)
        try:
            return self._stream.send(call)
        except OracleUnavailable:
            self._stream, self._streams = None, self._client.streams  # reconnect at the next request
            raise

    def _charge(self, call: Call[C]) -> C:
        answer = self._send(call)
        if answer.receipt is not None:
            self.receipt = answer.receipt
        return answer

    def get(self) -> SessionInfo:
        return self._send(self.calls.get())

    def next(self) -> NextResponse:
        return self._charge(self.calls.next())

    def step(self, attributes: Sequence[int]) -> StepResponse:
        """``next`` and ``observe`` of these attributes of the issued example, in one request."""
        return self._charge(self.calls.step(attributes))

    def observe(self, example: int, attributes: Sequence[int]) -> ObserveResponse:
        return self._charge(self.calls.observe(example, attributes))

    def observe_batch(self, items: Sequence[tuple[int, Sequence[int]]]) -> ObserveBatchResponse:
        return self._charge(self.calls.observe_batch(items))

    def label(self, example: int) -> LabelResponse:
        return self._charge(self.calls.label(example))

    def predict(self, example: int, prediction: float) -> PredictResponse:
        return self._charge(self.calls.predict(example, prediction))

    def evaluate(self, weights: Sequence[float], bias: float = 0.0) -> EvaluateResponse:
        return self._send(self.calls.evaluate(weights, bias))

    def moments(self) -> MomentsResponse:
        return self._send(self.calls.moments())

    def ledger(self, after: int = -1, limit: int = 1000) -> LedgerPage:
        return self._client.send(self.calls.ledger(after, limit))

    def iter_ledger(self, page: int = 1000) -> Iterator[LedgerRow]:
        after = -1
        while True:
            result = self.ledger(after, page)
            yield from result.rows
            if result.next_after is None:
                return
            after = result.next_after

    def export_ledger(self, path: str | Path, format: str = "ndjson") -> Path:
        """Write the whole ledger (NDJSON with its head line, or CSV) to ``path``."""
        target = Path(path)
        self._client.download(self.calls.export(format), target)
        return target

    def audit(self) -> AuditReport:
        return self._client.send(self.calls.audit())

    def close(self) -> SessionInfo:
        return self._client.send(self.calls.close())


class OracleClient(ServiceClient):
    """Synchronous client of every oracle endpoint."""

    service = ORACLE

    def __init__(self, base_url: str = DEFAULT_ORACLE_URL, *, timeout: float = 60.0, admin_token: str | None = None,
                 transport: httpx.BaseTransport | None = None, stream: bool = True,
                 busy_retries: int = BUSY_RETRIES) -> None:
        """``stream``: drive sessions over their WebSocket when the oracle offers one (one connection each, no
        HTTP round per request); False keeps every request on plain HTTP. ``busy_retries``: how many times a
        session request refused ``busy`` is sent again (0: raise ``SessionBusy`` at once)."""
        super().__init__(base_url, timeout=timeout, transport=transport)
        self.admin_token = admin_token
        self.timeout = timeout
        self.busy_retries = busy_retries
        # A custom httpx transport (tests, proxies) is a choice of transport: the stream would bypass it.
        self.streams = stream and transport is None
        self._open_streams: list[SessionStream] = []

    def open_stream(self, session_id: str, token: str) -> SessionStream | None:
        opened = open_stream(ORACLE, self.base_url, session_id, token, self.timeout)
        if opened is not None:
            self._open_streams.append(opened)
        return opened

    def close(self) -> None:
        for opened in self._open_streams:
            opened.close()
        self._open_streams.clear()
        super().close()

    def download(self, call: Call[Any], target: Path) -> None:
        """Stream an answer's body into ``target`` (ledger exports can be large)."""
        try:
            with self.http.stream(call.method, call.path, params=call.params, headers=call.headers()) as r:
                if r.status_code >= 400:
                    r.read()
                    ORACLE.raise_for(r)
                with target.open("wb") as out:
                    for chunk in r.iter_bytes():
                        out.write(chunk)
        except httpx.TransportError as exc:
            raise ORACLE.unreachable(self.base_url, exc) from exc

    def datasets(self) -> DatasetList:
        return self.send(Call("GET", "/v1/datasets", DatasetList))

    def dataset(self, spec: str, seed: int = 0) -> DatasetInfo:
        return self.send(Call("GET", f"/v1/datasets/{spec}", DatasetInfo, params={"seed": seed}))

    def add_dataset(self, path: str, *, name: str | None = None, target: str | int | None = None,
                    test_fraction: float = 0.2) -> DatasetInfo:
        body = {"path": path, "name": name, "target": target, "test_fraction": test_fraction}
        return self.send(Call("POST", "/v1/datasets", DatasetInfo, json=body, token=self.admin_token))

    def open_session(
        self, dataset: str, *, dataset_params: dict[str, ParamValue] | None = None, split: str = "train",
        protocol: str = "batch", order: str = "stream", budget: Budget | dict[str, Any] | None = None, seed: int = 0,
    ) -> OracleSession:
        created = self.send(_open_call(dataset, dataset_params=dataset_params, split=split, protocol=protocol,
                                       order=order, budget=budget, seed=seed))
        return OracleSession(self, created.id, created.token, created.session)

    def session(self, session_id: str, token: str) -> OracleSession:
        """Attach to an existing session by its id and token."""
        return OracleSession(self, session_id, token)


# --- async ---------------------------------------------------------------------------------------


class AsyncOracleSession:
    """One oracle session for asyncio code; the same methods as ``OracleSession``, awaitable."""

    def __init__(self, client: AsyncOracleClient, session_id: str, token: str, info: SessionInfo | None = None):
        self._client = client
        self.calls = SessionCalls(session_id, token)
        self.id = session_id
        self.token = token
        self.info = info
        self.receipt: Receipt | None = None
        self._stream: AsyncSessionStream | None = None
        self._streams = client.streams

    @property
    def transport(self) -> str:
        return "websocket" if self._stream is not None else "http"

    async def _send(self, call: Call[M]) -> M:
        for attempt in range(self._client.busy_retries + 1):
            try:
                return await self._send_once(call)
            except SessionBusy as exc:
                if attempt == self._client.busy_retries:
                    raise
                await asyncio.sleep(_busy_wait(exc))
        raise AssertionError("unreachable")

    async def _send_once(self, call: Call[M]) -> M:
        if self._streams and self._stream is None:
            self._stream = await self._client.open_stream(self.id, self.token)
            self._streams = self._stream is not None
        if self._stream is None:
            return await self._client.send(call)
        try:
            return await self._stream.send(call)
        except OracleUnavailable:
            self._stream, self._streams = None, self._client.streams
            raise

    async def _charge(self, call: Call[C]) -> C:
        answer = await self._send(call)
        if answer.receipt is not None:
            self.receipt = answer.receipt
        return answer

    async def get(self) -> SessionInfo:
        return await self._send(self.calls.get())

    async def next(self) -> NextResponse:
        return await self._charge(self.calls.next())

    async def step(self, attributes: Sequence[int]) -> StepResponse:
        return await self._charge(self.calls.step(attributes))

    async def observe(self, example: int, attributes: Sequence[int]) -> ObserveResponse:
        return await self._charge(self.calls.observe(example, attributes))

    async def observe_batch(self, items: Sequence[tuple[int, Sequence[int]]]) -> ObserveBatchResponse:
        return await self._charge(self.calls.observe_batch(items))

    async def label(self, example: int) -> LabelResponse:
        return await self._charge(self.calls.label(example))

    async def predict(self, example: int, prediction: float) -> PredictResponse:
        return await self._charge(self.calls.predict(example, prediction))

    async def evaluate(self, weights: Sequence[float], bias: float = 0.0) -> EvaluateResponse:
        return await self._send(self.calls.evaluate(weights, bias))

    async def moments(self) -> MomentsResponse:
        return await self._send(self.calls.moments())

    async def ledger(self, after: int = -1, limit: int = 1000) -> LedgerPage:
        return await self._client.send(self.calls.ledger(after, limit))

    async def iter_ledger(self, page: int = 1000) -> AsyncIterator[LedgerRow]:
        after = -1
        while True:
            result = await self.ledger(after, page)
            for row in result.rows:
                yield row
            if result.next_after is None:
                return
            after = result.next_after

    async def audit(self) -> AuditReport:
        return await self._client.send(self.calls.audit())

    async def close(self) -> SessionInfo:
        return await self._client.send(self.calls.close())


class AsyncOracleClient(AsyncServiceClient):
    """Asynchronous client of every oracle endpoint (httpx.AsyncClient)."""

    service = ORACLE

    def __init__(self, base_url: str = DEFAULT_ORACLE_URL, *, timeout: float = 60.0, admin_token: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, stream: bool = True,
                 busy_retries: int = BUSY_RETRIES) -> None:
        super().__init__(base_url, timeout=timeout, transport=transport)
        self.admin_token = admin_token
        self.timeout = timeout
        self.busy_retries = busy_retries
        self.streams = stream and transport is None
        self._open_streams: list[AsyncSessionStream] = []

    async def open_stream(self, session_id: str, token: str) -> AsyncSessionStream | None:
        opened = await open_async_stream(ORACLE, self.base_url, session_id, token, self.timeout)
        if opened is not None:
            self._open_streams.append(opened)
        return opened

    async def aclose(self) -> None:
        for opened in self._open_streams:
            await opened.close()
        self._open_streams.clear()
        await super().aclose()

    async def datasets(self) -> DatasetList:
        return await self.send(Call("GET", "/v1/datasets", DatasetList))

    async def dataset(self, spec: str, seed: int = 0) -> DatasetInfo:
        return await self.send(Call("GET", f"/v1/datasets/{spec}", DatasetInfo, params={"seed": seed}))

    async def add_dataset(self, path: str, *, name: str | None = None, target: str | int | None = None,
                          test_fraction: float = 0.2) -> DatasetInfo:
        body = {"path": path, "name": name, "target": target, "test_fraction": test_fraction}
        return await self.send(Call("POST", "/v1/datasets", DatasetInfo, json=body, token=self.admin_token))

    async def open_session(
        self, dataset: str, *, dataset_params: dict[str, ParamValue] | None = None, split: str = "train",
        protocol: str = "batch", order: str = "stream", budget: Budget | dict[str, Any] | None = None, seed: int = 0,
    ) -> AsyncOracleSession:
        created = await self.send(_open_call(dataset, dataset_params=dataset_params, split=split,
                                             protocol=protocol, order=order, budget=budget, seed=seed))
        return AsyncOracleSession(self, created.id, created.token, created.session)

    def session(self, session_id: str, token: str) -> AsyncOracleSession:
        return AsyncOracleSession(self, session_id, token)
