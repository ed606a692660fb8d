"""Python SDK of the feature oracle: ``OracleClient`` (sync) and ``AsyncOracleClient`` (asyncio), both httpx.

A session's methods come from the table of operations (``budgetlab.operations``): ``OracleSession`` and
``AsyncOracleSession`` inherit them and only say how a request travels. Everything but the waiting is shared, and
does no I/O: ``SessionCore`` makes each operation's ``Call`` and keeps the session's receipt, ``OracleCalls``
makes the client's own calls (``budgetlab.service_client`` sends them, as it does ``LearnerClient``'s)::

    with OracleClient("http://127.0.0.1:8000") as oracle:
        session = oracle.open_session("mnist-3v5", budget={"per_example": 57})
        example = session.next()
        values = session.observe(example.example, [17, 300]).values
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ValidationError

from budgetlab.contract.accounts import (
    AccountAudit,
    AccountCreate,
    AccountCreated,
    AccountInfo,
    AccountList,
    AccountView,
    Allowance,
)
from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.datasets import DatasetAdd, DatasetInfo, DatasetList
from budgetlab.contract.ledger import LedgerQuery, LedgerRow, Receipt
from budgetlab.contract.sessions import Order, Protocol, SessionCreated, SessionInfo, Split
from budgetlab.errors import OracleUnavailable, SessionBusy, invalid_request, oracle_refusal
from budgetlab.operations import SESSIONS, AsyncSession, Operation, SessionOperations, SyncSession, session_create
from budgetlab.service_client import AsyncServiceClient, Call, M, Service, ServiceClient
from budgetlab.session_stream import AsyncSessionStream, SessionStream, open_async_stream, open_stream

# A session request, or the opening of one, refused with a 503 (``busy``: its lock was not free within the oracle's
# lock timeout; ``database_unavailable``: the oracle's database is restarting) or a 429 (``rate_limited``: past the
# oracle's request rate, or the CPU time it spends building datasets for this client), nothing done either way, is
# sent again this many times, after the Retry-After the oracle gave (1 s for a database), capped: a run survives a
# burst of contention, a rate limit and a database restart of about ten seconds.
BUSY_RETRIES = 12
MAX_BUSY_WAIT = 5.0
DEFAULT_ORACLE_URL = "http://127.0.0.1:8000"
ACCOUNTS = "/v1/accounts"
ACCOUNT = "/v1/account"
# A busy session (503 with Retry-After) is a refusal: nothing was done, so a retry is safe.
ORACLE = Service("the oracle", oracle_refusal, OracleUnavailable, refusing_5xx=frozenset({503}))
raise_for_error = ORACLE.raise_for
ExportFormat = Literal["ndjson", "csv"]


class OracleCalls:
    """The oracle's endpoints that are not a session's operations, as ``Call``s (shared by both clients)."""

    @staticmethod
    def datasets() -> Call[DatasetList]:
        return Call("GET", "/v1/datasets", DatasetList)

    @staticmethod
    def dataset(spec: str, seed: int = 0) -> Call[DatasetInfo]:
        return Call("GET", f"/v1/datasets/{spec}", DatasetInfo, params={"seed": seed})

    @staticmethod
    def add_dataset(path: str, *, name: str | None, target: str | int | None, test_fraction: float,
                    admin_token: str | None) -> Call[DatasetInfo]:
        body = DatasetAdd(path=path, name=name, target=target, test_fraction=test_fraction)
        return Call("POST", "/v1/datasets", DatasetInfo, body=body, token=admin_token)

    @staticmethod
    def upload_dataset(path: Path, *, name: str | None, target: str | int | None, test_fraction: float,
                       split_seed: int | None, costs: list[float] | dict[str, float] | None,
                       admin_token: str | None) -> Call[DatasetInfo]:
        form = {"name": name, "target": None if target is None else str(target), "test_fraction": str(test_fraction),
                "split_seed": None if split_seed is None else str(split_seed),
                "costs": None if costs is None else json.dumps(costs)}
        return Call("POST", "/v1/datasets/upload", DatasetInfo, token=admin_token, upload=Path(path),
                    form={key: value for key, value in form.items() if value is not None})

    @staticmethod
    def open_session(dataset: str, *, dataset_params: dict[str, ParamValue] | None, split: Split,
                     protocol: Protocol, order: Order, budget: Budget | dict[str, Any] | None,
                     seed: int, api_key: str | None = None) -> Call[SessionCreated]:
        body = session_create(dataset, dataset_params=dataset_params, split=split, protocol=protocol, order=order,
                              budget=budget, seed=seed)
        return Call("POST", SESSIONS, SessionCreated, body=body, token=api_key)

    @staticmethod
    def create_account(name: str, allowance: Allowance | dict[str, Any] | None,
                       admin_token: str | None) -> Call[AccountCreated]:
        try:
            limits = allowance if isinstance(allowance, Allowance) else Allowance.model_validate(allowance or {})
            body = AccountCreate(name=name, allowance=limits)
        except ValidationError as exc:
            raise invalid_request(exc) from None
        return Call("POST", ACCOUNTS, AccountCreated, body=body, token=admin_token)

    @staticmethod
    def accounts(admin_token: str | None) -> Call[AccountList]:
        return Call("GET", ACCOUNTS, AccountList, token=admin_token)

    @staticmethod
    def account(account_id: str | None, limit: int, token: str | None) -> Call[AccountView]:
        """An account with its sessions: the admin's view of ``account_id``, or (None) the key holder's own."""
        path = ACCOUNT if account_id is None else f"{ACCOUNTS}/{account_id}"
        return Call("GET", path, AccountView, params={"limit": limit}, token=token)

    @staticmethod
    def revoke_account(account_id: str, admin_token: str | None) -> Call[AccountInfo]:
        return Call("DELETE", f"{ACCOUNTS}/{account_id}", AccountInfo, token=admin_token)

    @staticmethod
    def account_audit(account_id: str | None, token: str | None) -> Call[AccountAudit]:
        path = f"{ACCOUNT}/audit" if account_id is None else f"{ACCOUNTS}/{account_id}/audit"
        return Call("GET", path, AccountAudit, token=token)


class SessionCore:
    """What a session over HTTP is, whichever way it waits: its id, token and receipt, and each operation's
    ``Call`` (over the session's stream when the operation is offered there). No I/O."""

    def __init__(self, session_id: str, token: str, info: SessionInfo | None, streams: bool,
                 busy_retries: int) -> None:
        self.id = session_id
        self.token = token
        self.info = info
        # The chain head of the last request that recorded anything: proof of what the ledger held then.
        self.receipt: Receipt | None = None
        self.busy_retries = busy_retries
        self._streams = streams  # whether to try the session's stream at the next request

    def call(self, op: Operation[..., Any], request: BaseModel | None) -> Call[Any]:
        path = f"{SESSIONS}/{self.id}{op.path}"
        on_stream = op.name if op.stream else None
        if op.method == "GET":
            params = None if request is None else request.model_dump(mode="json")
            return Call(op.method, path, op.response, params=params, token=self.token, op=on_stream)
        return Call(op.method, path, op.response, body=request, token=self.token, op=on_stream)

    def export_call(self, format: ExportFormat) -> Call[Any]:
        return Call("GET", f"{SESSIONS}/{self.id}{SessionOperations.ledger.path}", None,
                    params=LedgerQuery(format=format).model_dump(mode="json"), token=self.token)

    def received(self, answer: M) -> M:
        receipt = getattr(answer, "receipt", None)
        if receipt is not None:
            self.receipt = receipt
        return answer

    def busy_wait(self, exc: SessionBusy, attempt: int) -> float:
        """How long to wait before sending a request refused ``busy`` again; the refusal once retries are spent."""
        return busy_wait(exc, attempt, self.busy_retries)


def busy_wait(exc: SessionBusy, attempt: int, retries: int) -> float:
    """How long to wait before sending a request refused with nothing done (503, 429) again: its Retry-After, capped;
    the refusal itself once ``retries`` are spent."""
    if attempt >= retries:
        raise exc
    return min(exc.retry_after if exc.retry_after is not None else 1.0, MAX_BUSY_WAIT)


# --- sync ----------------------------------------------------------------------------------------


class OracleSession(SessionCore, SyncSession, SessionOperations):
    """One oracle session, bound to its id and token; a method per operation of ``SessionOperations``."""

    def __init__(self, client: OracleClient, session_id: str, token: str, info: SessionInfo | None = None) -> None:
        super().__init__(session_id, token, info, client.streams, client.busy_retries)
        self._client = client
        self._stream: SessionStream | None = None

    @property
    def transport(self) -> str:
        """How session requests travel now: ``websocket`` or ``http``."""
        return "websocket" if self._stream is not None else "http"

    def _perform(self, op: Operation[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.received(self._send(self.call(op, op.request_of(args, kwargs))))

    def _send(self, call: Call[M]) -> M:
        """Over the session's stream when the oracle offers one (opened at the first request), else HTTP; a
        ``busy`` refusal (nothing was done) is tried again after its Retry-After, ``busy_retries`` times."""
        attempt = 0
        while True:
            try:
                return self._send_once(call)
            except SessionBusy as exc:
                time.sleep(self.busy_wait(exc, attempt))
                attempt += 1

    def _send_once(self, call: Call[M]) -> M:
        if call.op is not None and self._streams and self._stream is None:
            self._stream = self._client.open_stream(self.id, self.token)
            self._streams = self._stream is not None
        if call.op is None or self._stream is None:
            return self._client.send(call)
        try:
            return self._stream.send(call)
        except OracleUnavailable:
            self._stream, self._streams = None, self._client.streams  # reconnect at the next request
            raise

    def iter_ledger(self, page: int = 1000) -> Iterator[LedgerRow]:
        """Every row of the ledger, a page at a time."""
        after = -1
        while True:
            result = self.ledger(after, page)
            yield from result.rows
            if result.next_after is None:
                return
            after = result.next_after

    def export_ledger(self, path: str | Path, format: ExportFormat = "ndjson") -> Path:
        """Write the whole ledger (NDJSON with its head line, or CSV) to ``path``."""
        target = Path(path)
        self._client.download(self.export_call(format), target)
        return target


class OracleClient(ServiceClient):
    """Synchronous client of every oracle endpoint."""

    service = ORACLE

    def __init__(self, base_url: str = DEFAULT_ORACLE_URL, *, timeout: float = 60.0, admin_token: str | None = None,
                 api_key: str | None = None, transport: httpx.BaseTransport | None = None, stream: bool = True,
                 busy_retries: int = BUSY_RETRIES) -> None:
        """``api_key``: an account's key; the sessions this client opens draw on its allowance (None: anonymous
        sessions). ``stream``: drive sessions over their WebSocket when the oracle offers one (one connection each,
        no HTTP round per request); False keeps every request on plain HTTP. ``busy_retries``: how many times a
        session request refused ``busy`` is sent again (0: raise ``SessionBusy`` at once)."""
        super().__init__(base_url, timeout=timeout, transport=transport)
        self.admin_token = admin_token
        self.api_key = api_key
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

    def datasets(self) -> DatasetList:
        return self.send(OracleCalls.datasets())

    def dataset(self, spec: str, seed: int = 0) -> DatasetInfo:
        return self.send(OracleCalls.dataset(spec, seed))

    def add_dataset(self, path: str, *, name: str | None = None, target: str | int | None = None,
                    test_fraction: float = 0.2) -> DatasetInfo:
        return self.send(OracleCalls.add_dataset(path, name=name, target=target, test_fraction=test_fraction,
                                                 admin_token=self.admin_token))

    def upload_dataset(self, path: Path | str, *, name: str | None = None, target: str | int | None = None,
                       test_fraction: float = 0.2, split_seed: int | None = None,
                       costs: list[float] | dict[str, float] | None = None) -> DatasetInfo:
        """Admin: add a local CSV, NPY or NPZ file to the oracle's data directory (``costs``: d prices, or
        {column name or attribute index: price}, the others costing 1)."""
        return self.send(OracleCalls.upload_dataset(Path(path), name=name, target=target, test_fraction=test_fraction,
                                                    split_seed=split_seed, costs=costs, admin_token=self.admin_token))

    def open_session(
        self, dataset: str, *, dataset_params: dict[str, ParamValue] | None = None, split: Split = "train",
        protocol: Protocol = "batch", order: Order = "stream", budget: Budget | dict[str, Any] | None = None,
        seed: int = 0,
    ) -> OracleSession:
        """A new session; refused with nothing created (503 ``busy``, 429 ``rate_limited``: too many new sessions, or
        datasets built, for this client), it is asked again after the Retry-After, ``busy_retries`` times."""
        call = OracleCalls.open_session(dataset, dataset_params=dataset_params, split=split, protocol=protocol,
                                        order=order, budget=budget, seed=seed, api_key=self.api_key)
        attempt = 0
        while True:
            try:
                created = self.send(call)
                break
            except SessionBusy as exc:
                time.sleep(busy_wait(exc, attempt, self.busy_retries))
                attempt += 1
        return OracleSession(self, created.id, created.token, created.session)

    def account(self, limit: int = 50) -> AccountView:
        """The account of this client's ``api_key``: its allowance, what its sessions drew, its newest sessions."""
        return self.send(OracleCalls.account(None, limit, self.api_key))

    def create_account(self, name: str, allowance: Allowance | dict[str, Any] | None = None) -> AccountCreated:
        """Admin: a new account with ``allowance``; its key is in the answer only."""
        return self.send(OracleCalls.create_account(name, allowance, self.admin_token))

    def accounts(self) -> AccountList:
        """Admin: every account."""
        return self.send(OracleCalls.accounts(self.admin_token))

    def show_account(self, account_id: str, limit: int = 50) -> AccountView:
        """Admin: an account and its newest sessions."""
        return self.send(OracleCalls.account(account_id, limit, self.admin_token))

    def revoke_account(self, account_id: str) -> AccountInfo:
        """Admin: revoke an account (its key opens nothing more) and close its open sessions."""
        return self.send(OracleCalls.revoke_account(account_id, self.admin_token))

    def audit_account(self, account_id: str | None = None) -> AccountAudit:
        """The audit of an account: ``account_id``'s as the admin, or (None) this client's ``api_key``'s."""
        token = self.api_key if account_id is None else self.admin_token
        return self.send(OracleCalls.account_audit(account_id, token))

    def session(self, session_id: str, token: str) -> OracleSession:
        """Attach to an existing session by its id and token."""
        return OracleSession(self, session_id, token)


# --- async ---------------------------------------------------------------------------------------


class AsyncOracleSession(SessionCore, AsyncSession, SessionOperations):
    """One oracle session for asyncio code; the same methods as ``OracleSession``, awaitable."""

    def __init__(self, client: AsyncOracleClient, session_id: str, token: str, info: SessionInfo | None = None):
        super().__init__(session_id, token, info, client.streams, client.busy_retries)
        self._client = client
        self._stream: AsyncSessionStream | None = None

    @property
    def transport(self) -> str:
        """How session requests travel now: ``websocket`` or ``http``."""
        return "websocket" if self._stream is not None else "http"

    async def _perform(self, op: Operation[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.received(await self._send(self.call(op, op.request_of(args, kwargs))))

    async def _send(self, call: Call[M]) -> M:
        attempt = 0
        while True:
            try:
                return await self._send_once(call)
            except SessionBusy as exc:
                await asyncio.sleep(self.busy_wait(exc, attempt))
                attempt += 1

    async def _send_once(self, call: Call[M]) -> M:
        if call.op is not None and self._streams and self._stream is None:
            self._stream = await self._client.open_stream(self.id, self.token)
            self._streams = self._stream is not None
        if call.op is None or self._stream is None:
            return await self._client.send(call)
        try:
            return await self._stream.send(call)
        except OracleUnavailable:
            self._stream, self._streams = None, self._client.streams
            raise

    async def iter_ledger(self, page: int = 1000) -> AsyncIterator[LedgerRow]:
        """Every row of the ledger, a page at a time."""
        after = -1
        while True:
            result = await self.ledger(after, page)
            for row in result.rows:
                yield row
            if result.next_after is None:
                return
            after = result.next_after

    async def export_ledger(self, path: str | Path, format: ExportFormat = "ndjson") -> Path:
        """Write the whole ledger (NDJSON with its head line, or CSV) to ``path``."""
        target = Path(path)
        await self._client.download(self.export_call(format), target)
        return target


class AsyncOracleClient(AsyncServiceClient):
    """Asynchronous client of every oracle endpoint (httpx.AsyncClient); the same methods as ``OracleClient``."""

    service = ORACLE

    def __init__(self, base_url: str = DEFAULT_ORACLE_URL, *, timeout: float = 60.0, admin_token: str | None = None,
                 api_key: str | None = None, transport: httpx.AsyncBaseTransport | None = None, stream: bool = True,
                 busy_retries: int = BUSY_RETRIES) -> None:
        super().__init__(base_url, timeout=timeout, transport=transport)
        self.admin_token = admin_token
        self.api_key = api_key
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
        return await self.send(OracleCalls.datasets())

    async def dataset(self, spec: str, seed: int = 0) -> DatasetInfo:
        return await self.send(OracleCalls.dataset(spec, seed))

    async def add_dataset(self, path: str, *, name: str | None = None, target: str | int | None = None,
                          test_fraction: float = 0.2) -> DatasetInfo:
        return await self.send(OracleCalls.add_dataset(path, name=name, target=target, test_fraction=test_fraction,
                                                       admin_token=self.admin_token))

    async def upload_dataset(self, path: Path | str, *, name: str | None = None, target: str | int | None = None,
                             test_fraction: float = 0.2, split_seed: int | None = None,
                             costs: list[float] | dict[str, float] | None = None) -> DatasetInfo:
        """Admin: add a local CSV, NPY or NPZ file to the oracle's data directory (see ``OracleClient``'s)."""
        return await self.send(OracleCalls.upload_dataset(
            Path(path), name=name, target=target, test_fraction=test_fraction, split_seed=split_seed, costs=costs,
            admin_token=self.admin_token))

    async def open_session(
        self, dataset: str, *, dataset_params: dict[str, ParamValue] | None = None, split: Split = "train",
        protocol: Protocol = "batch", order: Order = "stream", budget: Budget | dict[str, Any] | None = None,
        seed: int = 0,
    ) -> AsyncOracleSession:
        """A new session, asked again as ``OracleClient.open_session`` says when refused with nothing created."""
        call = OracleCalls.open_session(dataset, dataset_params=dataset_params, split=split, protocol=protocol,
                                        order=order, budget=budget, seed=seed, api_key=self.api_key)
        attempt = 0
        while True:
            try:
                created = await self.send(call)
                break
            except SessionBusy as exc:
                await asyncio.sleep(busy_wait(exc, attempt, self.busy_retries))
                attempt += 1
        return AsyncOracleSession(self, created.id, created.token, created.session)

    async def account(self, limit: int = 50) -> AccountView:
        """The account of this client's ``api_key`` (see ``OracleClient.account``)."""
        return await self.send(OracleCalls.account(None, limit, self.api_key))

    async def create_account(self, name: str, allowance: Allowance | dict[str, Any] | None = None) -> AccountCreated:
        return await self.send(OracleCalls.create_account(name, allowance, self.admin_token))

    async def accounts(self) -> AccountList:
        return await self.send(OracleCalls.accounts(self.admin_token))

    async def show_account(self, account_id: str, limit: int = 50) -> AccountView:
        return await self.send(OracleCalls.account(account_id, limit, self.admin_token))

    async def revoke_account(self, account_id: str) -> AccountInfo:
        return await self.send(OracleCalls.revoke_account(account_id, self.admin_token))

    async def audit_account(self, account_id: str | None = None) -> AccountAudit:
        token = self.api_key if account_id is None else self.admin_token
        return await self.send(OracleCalls.account_audit(account_id, token))

    def session(self, session_id: str, token: str) -> AsyncOracleSession:
        """Attach to an existing session by its id and token."""
        return AsyncOracleSession(self, session_id, token)
