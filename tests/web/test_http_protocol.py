"""web.http_protocol: uvicorn's httptools protocol as both services run it. A request it cannot parse is refused in
JSON like every other refusal, headers that do not arrive in time get a 408 and the connection closes, and a body
that does not arrive in time closes the connection before the app does anything with it."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from fastapi import FastAPI, Request

from budgetlab.contract.service import Health
from tests.servers import serve_in_thread
from web.http_protocol import BODY_TIMEOUT_ENV, HEADER_TIMEOUT_ENV

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
