"""web.http_protocol: uvicorn's httptools protocol as both services run it. A request it cannot parse is refused in
JSON like every other refusal, headers that do not arrive in time get a 408 and the connection closes, and a body
that does not arrive in time closes the connection before the app does anything with it. An answer's head and body go
out in one write, and no access line is made that the logger would drop."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import uvicorn
from fastapi import FastAPI, Request
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle
from uvicorn.server import ServerState

from budgetlab.contract.service import Health
from tests.servers import serve_in_thread
from web.http_protocol import BODY_TIMEOUT_ENV, HEADER_TIMEOUT_ENV, JsonHttpProtocol, one_write

TIMEOUT = 0.5


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[tuple[str, int], list[bytes]]]:
    # Each connection reads the timeouts as it opens.
    monkeypatch.setenv(HEADER_TIMEOUT_ENV, str(TIMEOUT))
    monkeypatch.setenv(BODY_TIMEOUT_ENV, str(TIMEOUT))
    bodies: list[bytes] = []
    app = FastAPI()

    @app.get("/healthz")
    def healthz() -> Health:
        return Health()

    @app.post("/echo")
    async def echo(request: Request) -> int:
        bodies.append(await request.body())
        return len(bodies[-1])

    with serve_in_thread(app) as url:
        parts = urlsplit(url)
        yield (parts.hostname or "", parts.port or 0), bodies


def exchange(address: tuple[str, int], *parts: bytes, pause: float = 0.0) -> bytes:
    """Send ``parts`` on a new connection (``pause`` seconds before the last), and read until the server closes."""
    with socket.create_connection(address, timeout=10) as sock:
        for i, part in enumerate(parts):
            if i == len(parts) - 1 and pause:
                time.sleep(pause)
            try:
                sock.sendall(part)
            except (BrokenPipeError, ConnectionResetError):  # the server closed first
                break
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def refusal(answer: bytes) -> tuple[str, dict[str, str]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode(), json.loads(body)


def test_a_request_uvicorn_cannot_parse_is_a_json_400(served: tuple[tuple[str, int], list[bytes]]) -> None:
    address, _ = served
    status, body = refusal(exchange(address, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad\x01: y\r\n\r\n"))
    assert status == "HTTP/1.1 400 Bad Request"
    assert body["error"] == "bad_request" and body["detail"].startswith("the HTTP request is malformed")


def test_headers_too_slow_get_a_408_and_a_body_too_slow_closes_the_connection_unread(
        served: tuple[tuple[str, int], list[bytes]]) -> None:
    address, bodies = served
    status, body = refusal(exchange(address, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", b"\r\n", pause=2 * TIMEOUT))
    assert status == "HTTP/1.1 408 Request Timeout"
    assert body["error"] == "request_timeout" and HEADER_TIMEOUT_ENV in body["detail"]
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
    assert exchange(address, head + b"12345", b"67890", pause=2 * TIMEOUT) == b""
    assert bodies == []
    # In time, the same request is answered.
    closing = head.replace(b"Host: x\r\n", b"Host: x\r\nConnection: close\r\n")
    assert exchange(address, closing + b"12345", b"67890")[:15] == b"HTTP/1.1 200 OK"
    assert bodies == [b"1234567890"]


class Recorded(asyncio.Transport):
    """A transport that keeps each write, and whether it was closed after them."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed_after: int | None = None

    def write(self, data: Any) -> None:
        assert self.closed_after is None, "written after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed_after = len(self.writes)

    def is_closing(self) -> bool:
        return self.closed_after is not None


def cycle_on(transport: Recorded, *, keep_alive: bool = True, method: str = "POST",
             expect_100: bool = False) -> RequestResponseCycle:
    scope: Any = {"type": "http", "method": method, "path": "/", "http_version": "1.1"}
    log = logging.getLogger("test")
    return RequestResponseCycle(scope, transport, FlowControl(transport), log, log, False, [], asyncio.Event(),
                                expect_100, keep_alive, lambda: None)


@pytest.mark.parametrize("keep_alive", [True, False])
def test_an_answer_is_one_write_and_a_streamed_one_sends_its_later_parts_as_they_come(keep_alive: bool) -> None:
    start: Any = {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"9")]}

    async def answer(*bodies: tuple[bytes, bool]) -> Recorded:
        transport = Recorded()
        cycle = cycle_on(transport, keep_alive=keep_alive)
        one_write(cycle)
        await cycle.send(start)
        assert transport.writes == []  # the head waits for the body
        for body, more in bodies:
            await cycle.send({"type": "http.response.body", "body": body, "more_body": more})
        return transport

    whole = asyncio.run(answer((b"123456789", False)))
    assert len(whole.writes) == 1
    assert whole.writes[0].startswith(b"HTTP/1.1 200 OK\r\n") and whole.writes[0].endswith(b"\r\n\r\n123456789")
    assert whole.closed_after == (None if keep_alive else 1)  # closed after the answer went out, never before
    parts = asyncio.run(answer((b"1234", True), (b"56789", False)))
    assert len(parts.writes) == 2 and parts.writes[0].endswith(b"\r\n\r\n1234") and parts.writes[1] == b"56789"


def test_a_100_continue_goes_out_at_once_and_a_head_answer_without_a_body_still_sends_its_head() -> None:
    async def answer(method: str) -> Recorded:
        transport = Recorded()
        cycle = cycle_on(transport, method=method, expect_100=True)
        one_write(cycle)
        cycle.more_body = False
        cycle.message_event.set()
        await cycle.receive()
        assert transport.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]  # before any answer: not held
        await cycle.send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await cycle.send({"type": "http.response.body", "body": b"{}" if method == "POST" else b""})
        return transport

    post, head = asyncio.run(answer("POST")), asyncio.run(answer("HEAD"))
    assert len(post.writes) == 2 and post.writes[1].startswith(b"HTTP/1.1 200 OK") and post.writes[1].endswith(b"{}")
    assert len(head.writes) == 2 and head.writes[1].startswith(b"HTTP/1.1 200 OK") and head.writes[1].endswith(
        b"\r\n\r\n")  # the answer's end sends the head its body did not


def test_an_access_line_is_made_only_where_the_access_logger_takes_it() -> None:
    config = uvicorn.Config(FastAPI(), http=JsonHttpProtocol, log_level="warning")
    config.load()
    access = logging.getLogger("uvicorn.access")
    level = access.level
    loop = asyncio.new_event_loop()
    try:
        assert access.hasHandlers() and not JsonHttpProtocol(config, ServerState(), {}, loop).access_log  # none made
        access.setLevel(logging.INFO)
        assert JsonHttpProtocol(config, ServerState(), {}, loop).access_log  # uvicorn's, as the operator asks
    finally:
        access.setLevel(level)
        loop.close()
