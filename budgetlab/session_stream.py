"""The SDK's side of a session's WebSocket (``GET /v1/sessions/{id}/stream``): one request in flight at a time.

A ``Call`` with an ``op`` goes out as ``{"op", "body"}`` and its answer comes back as ``"STATUS BODY"``, the
status and body an HTTP request would have got; ``Service.refuse`` turns an error answer into the same exception
HTTP would raise. ``open_stream`` gives ``None`` when the oracle offers no stream (an older oracle, a proxy that
does not pass WebSockets): the session then keeps to plain HTTP.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from websockets.asyncio.client import ClientConnection as AsyncConnection
from websockets.asyncio.client import connect as async_connect
from websockets.exceptions import InvalidHandshake, InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

from budgetlab.service_client import Call, M, Service


def stream_url(base_url: str, session_id: str) -> str:
    scheme, _, rest = base_url.partition("://")
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/v1/sessions/{session_id}/stream"


def _message(call: Call[Any]) -> str:
    body = "null" if call.body is None else call.body.model_dump_json()
    return f'{{"op":{json.dumps(call.op)},"body":{body}}}'


def _parse(service: Service, call: Call[M], reply: str | bytes) -> M:
    text = reply.decode() if isinstance(reply, bytes) else reply
    status_text, _, body = text.partition(" ")
    status = int(status_text) if status_text.isdigit() else 0
    if status != 200:
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        service.refuse(status, parsed, f"stream {call.op} -> {status}")
    assert call.model is not None
    return call.model.model_validate_json(body)


class SessionStream:
    """A session's WebSocket for synchronous code; thread-safe (requests are answered in order)."""

    def __init__(self, service: Service, connection: ClientConnection, timeout: float) -> None:
        self.service, self.connection, self.timeout = service, connection, timeout
        self._lock = threading.Lock()

    def send(self, call: Call[M]) -> M:
        with self._lock:
            try:
                self.connection.send(_message(call))
                reply = self.connection.recv(timeout=self.timeout)
            except (WebSocketException, OSError, TimeoutError) as exc:
                # The request may or may not have been done: like a dropped HTTP connection, say so; never resend.
                self.close()
                raise self.service.unavailable(f"{self.service.name}: the session's stream broke during "
                                               f"{call.op}: {exc}") from exc
        return _parse(self.service, call, reply)

    def close(self) -> None:
        self.connection.close()


# A handshake refused with these (429 rate_limited, 503 busy), nothing done, is the refusal a request would get: the
# caller waits and asks again, as for a request, instead of leaving the stream for HTTP.
RETRIED = frozenset({429, 503})


def refuse_retried(service: Service, exc: InvalidStatus, where: str) -> None:
    """Raise the refusal a handshake answered with 429 or 503 stands for; anything else returns (no stream)."""
    response = exc.response
    if response.status_code not in RETRIED:
        return
    try:
        body = json.loads(response.body or b"")
    except ValueError:
        body = None
    retry_after = response.headers.get("Retry-After")
    service.refuse(response.status_code, body, f"{where} -> {response.status_code}",
                   float(retry_after) if retry_after and retry_after.isdigit() else None)


def open_stream(service: Service, base_url: str, session_id: str, token: str,
                timeout: float) -> SessionStream | None:
    """The session's stream; None where the oracle offers none (HTTP then carries the requests). A handshake refused
    with nothing done (429, 503) raises that refusal, for the caller to wait and ask again."""
    url = stream_url(base_url, session_id)
    try:
        connection = connect(url, additional_headers={"Authorization": f"Bearer {token}"},
                             open_timeout=timeout, max_size=None, compression=None, legacy=True)
    except InvalidStatus as exc:
        refuse_retried(service, exc, f"the stream of session {session_id}")
        return None
    except (InvalidHandshake, OSError, TimeoutError):
        return None
    return SessionStream(service, connection, timeout)


class AsyncSessionStream:
    """A session's WebSocket for asyncio code."""

    def __init__(self, service: Service, connection: AsyncConnection, timeout: float) -> None:
        self.service, self.connection, self.timeout = service, connection, timeout
        self._lock = asyncio.Lock()

    async def send(self, call: Call[M]) -> M:
        async with self._lock:
            try:
                await self.connection.send(_message(call))
                reply = await asyncio.wait_for(self.connection.recv(), self.timeout)
            except (WebSocketException, OSError, TimeoutError) as exc:
                await self.close()
                raise self.service.unavailable(f"{self.service.name}: the session's stream broke during "
                                               f"{call.op}: {exc}") from exc
        return _parse(self.service, call, reply)

    async def close(self) -> None:
        await self.connection.close()


async def open_async_stream(service: Service, base_url: str, session_id: str, token: str,
                            timeout: float) -> AsyncSessionStream | None:
    try:
        connection = await async_connect(stream_url(base_url, session_id),
                                         additional_headers={"Authorization": f"Bearer {token}"},
                                         open_timeout=timeout, max_size=None, compression=None)
    except InvalidStatus as exc:
        refuse_retried(service, exc, f"the stream of session {session_id}")
        return None
    except (InvalidHandshake, OSError, TimeoutError):
        return None
    return AsyncSessionStream(service, connection, timeout)
