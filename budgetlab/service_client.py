"""What both SDK clients share: an endpoint described once as a ``Call`` (its body a model of the wire contract),
sent over httpx (sync or asyncio), and the one rule that turns a service's error answer into an exception.

A service's 4xx answer ``{"error", "detail", "remaining"?}`` becomes its ``Refused`` subclass (``OracleError``,
``LearnerError``) with the same fields; a 5xx answer, an answer that is not the services' error body, or no answer
at all becomes its ``Unavailable`` subclass. The oracle's 503 ``busy`` is a refusal (nothing was done, a retry is
safe), so a service may name 5xx statuses that are refusals too. ``OracleClient`` and ``LearnerClient`` are these
base clients with their endpoints. The sync and async clients differ only in how they wait: everything else is
in ``Call`` and ``Service``, which do no I/O.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Generic, Self, TypeVar

import httpx
from pydantic import BaseModel

from budgetlab.contract.base import WITH_SECRETS
from budgetlab.contract.budgets import Remaining
from budgetlab.errors import Refused, Unavailable

M = TypeVar("M", bound=BaseModel)


@cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings of every client of this process, built once: httpx builds them for each new client, loading
    the CA bundle every time (~45 ms of CPU, ten times a request to a service on loopback), and a command, a learner's
    run or a worker opens a client for each service it talks to. httpx's defaults (certifi's bundle,
    ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set)."""
    return httpx.create_ssl_context()


@dataclass(frozen=True)
class Call(Generic[M]):
    """One request of an endpoint and the model its answer is parsed into (``None``: no body to parse)."""

    method: str
    path: str
    model: type[M] | None
    body: BaseModel | None = None
    params: dict[str, Any] | None = None
    token: str | None = None
    # The operation's name on a session's stream (``server/routers/stream.py``); None: HTTP only.
    op: str | None = None
    # A file sent as the multipart form's ``file`` beside the ``form`` fields (instead of a JSON body).
    upload: Path | None = None
    form: dict[str, str] | None = None

    def request(self) -> dict[str, Any]:
        """httpx's keyword arguments of this call but the file (``files``), which the client opens."""
        if self.upload is not None:
            return {"params": self.params, "headers": self.headers(), "data": self.form}
        return {"content": self.content(), "params": self.params, "headers": self.headers()}

    def headers(self) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if self.body is not None:
            headers["Content-Type"] = "application/json"
        return headers

    def content(self) -> bytes | None:
        """The body as JSON, as the model writes it, secrets included (a run's API key: ``WITH_SECRETS``)."""
        return None if self.body is None else self.body.model_dump_json(context=WITH_SECRETS).encode()


RefusalFactory = Callable[[int, str, str, Remaining | None, float | None], Refused]


@dataclass(frozen=True)
class Service:
    """How one service's error answers become exceptions, and how messages name the service."""

    name: str
    refusal: RefusalFactory
    unavailable: type[Unavailable]
    refusing_5xx: frozenset[int] = frozenset()

    def raise_for(self, response: httpx.Response) -> None:
        """Nothing for a success; else the refusal (4xx, or a 5xx the service names as one) or ``unavailable``."""
        status = response.status_code
        if status < 400:
            return
        try:
            body = response.json()
        except ValueError:
            body = None
        retry_after = response.headers.get("Retry-After")
        self.refuse(status, body, f"{response.request.method} {response.request.url.path} -> {status}",
                    float(retry_after) if retry_after and retry_after.isdigit() else None)

    def refuse(self, status: int, body: Any, where: str, retry_after: float | None = None) -> None:
        """Raise what an error answer means, whichever transport brought it."""
        if not isinstance(body, dict) or "error" not in body:
            raise self.unavailable(f"{self.name}: {where}")
        detail = body.get("detail", "")
        detail = detail if isinstance(detail, str) else str(detail)
        if status >= 500 and status not in self.refusing_5xx:
            raise self.unavailable(f"{self.name}: {where}: {detail}")
        remaining = body.get("remaining")
        if retry_after is None and isinstance(body.get("retry_after"), int | float):
            retry_after = float(body["retry_after"])
        raise self.refusal(status, str(body["error"]), detail,
                           Remaining.model_validate(remaining) if remaining else None, retry_after)

    def unreachable(self, base_url: str, exc: Exception) -> Unavailable:
        return self.unavailable(f"cannot reach {self.name} at {base_url}: {exc}")

    def parse(self, call: Call[M], response: httpx.Response) -> M:
        self.raise_for(response)
        assert call.model is not None, f"{call.method} {call.path} answers no model: download it"
        return call.model.model_validate_json(response.content)


class ServiceClient:
    """Synchronous base client: one ``httpx.Client`` on ``base_url``; ``send`` returns a call's model or raises."""

    service: ClassVar[Service]

    def __init__(self, base_url: str, *, timeout: float = 60.0, transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport, verify=tls_context())

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _request(self, call: Call[Any]) -> httpx.Response:
        try:
            if call.upload is not None:
                with call.upload.open("rb") as f:
                    return self.http.request(call.method, call.path, files={"file": (call.upload.name, f)},
                                             **call.request())
            return self.http.request(call.method, call.path, **call.request())
        except httpx.TransportError as exc:
            raise self.service.unreachable(self.base_url, exc) from exc

    def send(self, call: Call[M]) -> M:
        return self.service.parse(call, self._request(call))

    def download(self, call: Call[Any], target: Path) -> None:
        """Stream an answer's body into ``target`` (ledger exports can be large)."""
        try:
            with self.http.stream(call.method, call.path, params=call.params, headers=call.headers()) as r:
                if r.status_code >= 400:
                    r.read()
                    self.service.raise_for(r)
                with target.open("wb") as out:
                    for chunk in r.iter_bytes():
                        out.write(chunk)
        except httpx.TransportError as exc:
            raise self.service.unreachable(self.base_url, exc) from exc

    def health(self) -> bool:
        try:
            return self.http.get("/healthz").status_code == 200
        except httpx.TransportError:
            return False


class AsyncServiceClient:
    """Asynchronous base client (``httpx.AsyncClient``); the same ``send`` and ``health``, awaitable."""

    service: ClassVar[Service]

    def __init__(self, base_url: str, *, timeout: float = 60.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout, transport=transport,
                                      verify=tls_context())

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def send(self, call: Call[M]) -> M:
        try:
            if call.upload is not None:
                with call.upload.open("rb") as f:
                    response = await self.http.request(call.method, call.path, files={"file": (call.upload.name, f)},
                                                       **call.request())
            else:
                response = await self.http.request(call.method, call.path, **call.request())
        except httpx.TransportError as exc:
            raise self.service.unreachable(self.base_url, exc) from exc
        return self.service.parse(call, response)

    async def download(self, call: Call[Any], target: Path) -> None:
        """Stream an answer's body into ``target`` (ledger exports can be large)."""
        try:
            async with self.http.stream(call.method, call.path, params=call.params, headers=call.headers()) as r:
                if r.status_code >= 400:
                    await r.aread()
                    self.service.raise_for(r)
                with target.open("wb") as out:
                    async for chunk in r.aiter_bytes():
                        out.write(chunk)
        except httpx.TransportError as exc:
            raise self.service.unreachable(self.base_url, exc) from exc

    async def health(self) -> bool:
        try:
            return (await self.http.get("/healthz")).status_code == 200
        except httpx.TransportError:
            return False
