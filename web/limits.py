"""What a request may be before any of it is read: an ASGI middleware in front of a whole service (the oracle and
the learner each install it, with their own body limit).

- A body larger than ``max_body_bytes`` is a 413 ``too_large``: at once when its ``Content-Length`` says so
  (nothing of it is read; the server discards it), and for a body without one (chunked) as soon as the bytes
  received pass the bound, so at most that much is ever held.
- A session-stream message larger than that is answered in place as the 413 an HTTP request would get, and
  never reaches the handler. (``budgetlab serve`` also has uvicorn refuse far larger frames before reading them.)
- A path with a control character (a NUL in a session or run id, say) is a 422: no id either service issues has one,
  and PostgreSQL's text cannot even hold a NUL.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from budgetlab.errors import Code, error_body

CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _too_large(limit: int, setting: str) -> dict[str, Any]:
    return error_body(Code.TOO_LARGE.value,
                      f"the request body is larger than this service's limit of {limit} bytes ({setting})")


async def refuse_http(send: Send, status: int, body: dict[str, Any], prefix: str = "http",
                      retry_after: float | None = None) -> None:
    """Answer a request with a JSON refusal, before (and without) the app."""
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(max(1, math.ceil(retry_after))).encode()))
    await send({"type": f"{prefix}.response.start", "status": status, "headers": headers})
    await send({"type": f"{prefix}.response.body", "body": payload})


class RequestLimits:
    def __init__(self, app: ASGIApp, max_body_bytes: int, setting: str,
                 larger: Callable[[Scope], tuple[int, str] | None] | None = None) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.setting = setting  # the environment variable that sets the limit, named in the refusal
        # Which requests may send more (an admin's upload): their limit and the setting that sets it, else None.
        self.larger = larger

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if CONTROL.search(scope["path"]):
            detail = "the path has a control character; ids never do"
            invalid = error_body(Code.INVALID_REQUEST.value, detail)
            if kind == "http":
                await refuse_http(send, Code.INVALID_REQUEST.status, invalid)
            elif "websocket.http.response" in scope.get("extensions", {}):  # the handshake gets HTTP's answer
                await refuse_http(send, Code.INVALID_REQUEST.status, invalid, prefix="websocket.http")
            else:  # a server without the denial extension: the stream's close code (4000 + status)
                await send({"type": "websocket.close", "code": 4000 + Code.INVALID_REQUEST.status, "reason": detail})
            return
        if kind == "websocket":
            await self.app(scope, self._bounded_messages(receive, send), send)
            return
        limit, setting = (self.larger and self.larger(scope)) or (self.max_body_bytes, self.setting)
        length, chunked = _framing(scope)
        if length is not None and length > limit:
            await refuse_http(send, Code.TOO_LARGE.status, _too_large(limit, setting))
            return
        if not chunked:  # no body, or one the server delivers only up to its Content-Length: nothing to count
            await self.app(scope, receive, send)
            return
        body = await self._read_bounded(receive, limit)
        if body is None:
            await refuse_http(send, Code.TOO_LARGE.status, _too_large(limit, setting))
            return
        await self.app(scope, replay_body(body, receive), send)

    async def _read_bounded(self, receive: Receive, limit: int) -> bytes | None:
        """A body of unknown length, read up to ``limit``; None once it passes it."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: nothing to answer
                return b""
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _bounded_messages(self, receive: Receive, send: Send) -> Receive:
        limit, setting = self.max_body_bytes, self.setting

        async def bounded() -> Message:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                data = message.get("text")
                if data is not None:
                    size = len(data) if data.isascii() else len(data.encode())
                else:
                    size = len(message.get("bytes") or b"")
                if size <= limit:
                    return message
                # The stream answers each message in order, "STATUS BODY": this one as HTTP would.
                await send({"type": "websocket.send", "text": f"413 {json.dumps(_too_large(limit, setting))}"})

        return bounded


def _framing(scope: Scope) -> tuple[int | None, bool]:
    """The body's declared length, and whether it comes chunked instead (its length known only at its end)."""
    length, chunked = None, False
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:  # the server refuses such a request before it gets here
                pass
        elif name == b"transfer-encoding":
            chunked = True
    return length, chunked


def replay_body(body: bytes, receive: Receive) -> Receive:
    """``receive`` that hands the app the body already read, then whatever comes next (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
