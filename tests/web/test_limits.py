"""web.limits and web.rates: what a request meets before the app reads any of it. A body over the limit, a path with
a control character and a request past its rate are refused in JSON without reaching the app, so nothing is done;
the rest reach it untouched."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi import FastAPI, Request
from starlette.types import Message, Scope

from budgetlab.errors import Code
from tests.helpers import in_process
from web.limits import RequestLimits
from web.rates import Rate, RateLimits, limited_keys

LIMIT = 1000


class Counted(FastAPI):
    """An app that counts the requests that reached it (and echoes the body's length)."""

    def __init__(self) -> None:
        super().__init__()
        self.reached = 0

        @self.post("/echo")
        @self.get("/echo")
        async def echo(request: Request) -> int:
            self.reached += 1
            return len(await request.body())

        @self.post("/upload")
        async def upload(request: Request) -> int:
            self.reached += 1
            return len(await request.body())

        @self.post("/open")
        def open_() -> None:
            self.reached += 1


def larger(scope: Scope) -> tuple[int, str] | None:
    """The upload may send ten times as much."""
    return (10 * LIMIT, "UPLOAD_BYTES") if scope["path"] == "/upload" else None


@pytest.fixture
def limited() -> tuple[Counted, RequestLimits]:
    app = Counted()
    return app, RequestLimits(app, max_body_bytes=LIMIT, setting="MAX_BODY", larger=larger)


def test_a_body_declared_over_the_limit_is_413_and_never_reaches_the_app(limited: tuple[Counted, Any]) -> None:
    app, guarded = limited
    answer = in_process(guarded, "POST", "/echo", content=b"x" * (LIMIT + 1))
    assert answer.status_code == 413
    assert answer.json() == {"error": "too_large", "detail": "the request body is larger than this service's limit "
                                                             f"of {LIMIT} bytes (MAX_BODY)"}
    assert app.reached == 0
    assert in_process(guarded, "POST", "/echo", content=b"x" * LIMIT).json() == LIMIT
    # The route that may take more says its own limit and setting.
    assert in_process(guarded, "POST", "/upload", content=b"x" * (5 * LIMIT)).json() == 5 * LIMIT
    assert "UPLOAD_BYTES" in in_process(guarded, "POST", "/upload", content=b"x" * (10 * LIMIT + 1)).json()["detail"]
    assert app.reached == 2


def chunked(guarded: RequestLimits, chunks: list[bytes]) -> tuple[list[Message], int]:
    """A chunked request (no Content-Length) through ``guarded``, its body in ``chunks``: what was sent back, and
    how many chunks the middleware read."""
    read, sent = 0, []

    async def receive() -> Message:
        nonlocal read
        read += 1
        return {"type": "http.request", "body": chunks[read - 1], "more_body": read < len(chunks)}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/echo", "raw_path": b"/echo", "query_string": b"", "root_path": "", "client": ("10.0.0.1", 1),
             "server": ("app", 80), "headers": [(b"transfer-encoding", b"chunked"), (b"host", b"app")]}
    asyncio.run(guarded(scope, receive, send))
    return sent, read


def test_a_chunked_body_is_counted_as_it_comes_and_refused_once_past_the_limit(limited: tuple[Counted, Any]) -> None:
    app, guarded = limited
    sent, read = chunked(guarded, [b"x" * 400] * 10)
    assert sent[0]["status"] == 413 and b"too_large" in sent[1]["body"]
    assert read == 3, "read past the limit: at most the limit is ever held"
    assert app.reached == 0
    sent, read = chunked(guarded, [b"x" * 400, b"x" * 400, b"x" * 200])
    assert sent[0]["status"] == 200 and sent[1]["body"] == b"1000"
    assert app.reached == 1


def test_a_path_with_a_control_character_is_invalid_request(limited: tuple[Counted, Any]) -> None:
    app, guarded = limited
    answer = in_process(guarded, "GET", "/echo%00")
    assert answer.status_code == Code.INVALID_REQUEST.status
    assert answer.json() == {"error": "invalid_request", "detail": "the path has a control character; ids never do"}
    assert app.reached == 0


def test_requests_past_a_routes_rate_are_429_with_retry_after_and_others_go_on() -> None:
    app = Counted()
    opening = Rate(per_second=0.5, burst=2, setting="OPEN_RATE")
    guarded = RateLimits(app, limits={("POST", "/open"): opening})
    answers = [in_process(guarded, "POST", "/open") for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    refused = answers[2]
    assert refused.json()["error"] == "rate_limited" and "OPEN_RATE" in refused.json()["detail"]
    assert refused.headers["retry-after"] == "2"  # a token is back in 2 s at 0.5 a second
    assert app.reached == 2, "a refused request reached the app"
    assert in_process(guarded, "GET", "/echo").status_code == 200  # another route has no such limit


def test_every_key_has_a_bucket_of_its_own_and_no_rate_is_no_limit() -> None:
    app = Counted()
    keys = limited_keys(Rate(per_second=1, burst=1, setting="KEY_RATE"))
    guarded = RateLimits(app, limits={}, per_key=keys)
    first, second = {"authorization": "Bearer first"}, {"authorization": "Bearer second"}
    assert in_process(guarded, "GET", "/echo", headers=first).status_code == 200
    assert in_process(guarded, "GET", "/echo", headers=first).status_code == 429
    assert in_process(guarded, "GET", "/echo", headers=second).status_code == 200
    assert in_process(guarded, "GET", "/echo").status_code == 200  # no key: no key's bucket
    assert limited_keys(Rate(per_second=0, burst=1, setting="KEY_RATE")) is None
    unlimited = RateLimits(app, limits={("GET", "/echo"): Rate(0, 1, "NONE")}, per_address=Rate(0, 1, "NONE"))
    assert all(in_process(unlimited, "GET", "/echo").status_code == 200 for _ in range(5))
