"""web.events: a dashboard's event stream, served by uvicorn as the services serve it. A poll's events go out as
server-sent events, a quiet stream sends a keepalive comment, a refusal ends the stream with an ``error`` event, and
a client that goes away stops the polling."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from budgetlab.contract.service import Health
from budgetlab.errors import Code, learner_refusal
from tests.servers import serve_in_thread
from web import events
from web.events import Events, event_stream

INTERVAL = 0.01


class Feed:
    """Polls that answer ``script`` in turn (a refusal raised where it holds one), then nothing."""

    def __init__(self, *script: Events | Exception) -> None:
        self.script = list(script)
        self.polls = 0

    async def poll(self) -> Events:
        self.polls += 1
        if not self.script:
            return []
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


@pytest.fixture
def served() -> Iterator[tuple[str, dict[str, Feed]]]:
    feeds: dict[str, Feed] = {}
    app = FastAPI()

    @app.get("/healthz")
    def healthz() -> Health:
        return Health()

    @app.get("/events/{name}")
    async def stream(request: Request, name: str) -> StreamingResponse:
        return event_stream(request, feeds[name].poll, INTERVAL)

    with serve_in_thread(app) as url:
        yield url, feeds


def test_events_go_out_as_they_come_a_quiet_stream_keeps_alive_and_a_refusal_ends_it(
        served: tuple[str, dict[str, Feed]], monkeypatch: pytest.MonkeyPatch) -> None:
    url, feeds = served
    monkeypatch.setattr(events, "KEEPALIVE_SECONDS", 0.05)
    feeds["a"] = Feed([("runs", {"n": 1}), ("curve", [1.5, None])], *([[]] * 20),
                      learner_refusal(Code.UNAUTHORIZED, "the token was revoked"))
    with httpx.stream("GET", f"{url}/events/a", timeout=10) as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        assert answer.headers["cache-control"] == "no-cache" and answer.headers["x-accel-buffering"] == "no"
        text = answer.read().decode()
    assert text.startswith('event: runs\ndata: {"n":1}\n\nevent: curve\ndata: [1.5,null]\n\n')
    assert ": keepalive\n\n" in text
    assert text.endswith('event: error\ndata: {"error":"unauthorized","detail":"the token was revoked"}\n\n')
    assert feeds["a"].polls == 22, "the stream polled on after its refusal"


def test_a_client_that_goes_away_stops_the_polling(served: tuple[str, dict[str, Feed]]) -> None:
    url, feeds = served
    feeds["b"] = feed = Feed([("runs", {"n": 1})])
    with httpx.stream("GET", f"{url}/events/b", timeout=10) as answer:
        next(answer.iter_text())
    deadline = time.monotonic() + 10
    while True:
        before = feed.polls
        time.sleep(50 * INTERVAL)
        if feed.polls == before:
            break
        assert time.monotonic() < deadline, "the stream still polls for a client that went away"
